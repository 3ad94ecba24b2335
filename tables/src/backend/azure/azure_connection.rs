//! [`AzureConnection`]: where an account is, how requests are authorised,
//! the retry policy and the certificates to trust; it builds both backends.

use std::fmt;
use std::sync::{Arc, OnceLock};

#[cfg(feature = "entra-id")]
use azure_core::credentials::TokenCredential;

use super::connection_string::{self as strings, ConnectionString};
use super::credential::Auth;
use super::transport::{http_client, HttpClient};
use crate::backend::retry::RetryPolicy;
use crate::error::{Error, Result};
use crate::service::ServiceProfile;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::CertificateDer;

/// How to reach one storage account: its endpoints, the credential, the
/// [`RetryPolicy`] and any extra certificate authority to trust. Builds the
/// table backend and the blob backend; [`Tables::connect_with`](crate::Tables::connect_with)
/// takes it whole.
///
/// ```no_run
/// use std::time::Duration;
/// use unified_tables::backend::azure::AzureConnection;
/// use unified_tables::{RetryPolicy, Tables};
///
/// let connection = AzureConnection::parse(
///     "DefaultEndpointsProtocol=https;AccountName=myaccount;AccountKey=bXlrZXk=;EndpointSuffix=core.windows.net",
/// )?
/// .with_retry(RetryPolicy::builder().attempts(6).deadline(Duration::from_secs(20)).build()?);
/// let db = Tables::connect_with(connection)?;
/// # let _ = db;
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Clone)]
#[doc = include_str!("../../../docs/connecting.md")]
pub struct AzureConnection {
    account_name: String,
    table_endpoint: String,
    blob_endpoint: String,
    /// The blob endpoint was derived from the account name, not given.
    blob_derived: bool,
    /// The service behind the table endpoint.
    profile: ServiceProfile,
    auth: Auth,
    retry: RetryPolicy,
    /// Extra trusted roots, DER.
    roots: Vec<CertificateDer<'static>>,
    /// The one HTTP client of the connection's backends, made by the first.
    client: Arc<OnceLock<HttpClient>>,
}

impl fmt::Debug for AzureConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureConnection")
            .field("account_name", &self.account_name)
            .field("table_endpoint", &self.table_endpoint)
            .field("blob_endpoint", &self.blob_endpoint)
            .field("profile", &self.profile)
            .field("auth", &self.auth)
            .field("retry", &self.retry)
            .field("extra_roots", &self.roots.len())
            .finish()
    }
}

impl AzureConnection {
    /// From a storage connection string: the account key, a shared access
    /// signature (`SharedAccessSignature=..` with `TableEndpoint=` / `BlobEndpoint=`),
    /// or `UseDevelopmentStorage=true` (see [`ConnectionString`] for every form).
    /// A malformed string is [`Error::Config`] naming the bad part.
    ///
    /// The service is recognised by the table endpoint's host: Cosmos DB for
    /// Table for `*.table.cosmos.azure.com` (no blob endpoint is then derived
    /// from the account name), Table Storage otherwise; see
    /// [`with_profile`](Self::with_profile) for a custom domain.
    pub fn parse(connection_string: &str) -> Result<AzureConnection> {
        let (connection, blob_derived) = strings::parse_connection(connection_string)?;
        Ok(AzureConnection {
            blob_derived,
            ..AzureConnection::from_parsed(connection)
        })
    }

    /// From an already parsed connection string (its blob endpoint taken as
    /// given), the service recognised by the table endpoint's host.
    pub fn from_parsed(connection: ConnectionString) -> AzureConnection {
        AzureConnection {
            account_name: connection.account_name,
            profile: strings::endpoint_profile(&connection.table_endpoint),
            table_endpoint: connection.table_endpoint,
            blob_endpoint: connection.blob_endpoint,
            blob_derived: false,
            auth: Auth::Parsed(connection.credentials),
            retry: RetryPolicy::default(),
            roots: Vec::new(),
            client: Arc::default(),
        }
    }

    /// Requests authorised with Entra ID bearer tokens from `credential`
    /// (asked for the scope `https://storage.azure.com/.default`), for an
    /// account that disables shared-key access. `endpoints` names the
    /// account without credentials: `AccountName=myaccount` (the public
    /// cloud), `AccountName=myaccount;EndpointSuffix=core.usgovcloudapi.net`,
    /// or `TableEndpoint=https://..;BlobEndpoint=https://..`. Bearer tokens
    /// travel over HTTPS only, so an `http://` endpoint is refused.
    ///
    /// `credential` is any `azure_core` 1.x
    /// [`TokenCredential`](azure_core::credentials::TokenCredential): the
    /// credentials of `azure_identity` 1.x (`ManagedIdentityCredential`,
    /// `WorkloadIdentityCredential`, `ClientSecretCredential`,
    /// `AzureCliCredential`, `DeveloperToolsCredential`, …) or one of your
    /// own. Its tokens are cached for the connection and replaced five
    /// minutes before they expire, and added to each request below every
    /// log line. A credential that sends requests needs an HTTP client:
    /// give it [`IdentityHttpClient::client_options`](super::transport::IdentityHttpClient::client_options)
    /// (the crate's own transport), or depend on `azure_identity` with its
    /// default features (reqwest).
    ///
    /// The principal needs a data role on the account: "Storage Table Data
    /// Contributor" for tables and "Storage Blob Data Contributor" for the
    /// blobs of large values.
    ///
    /// ```no_run
    /// use azure_identity::{ManagedIdentityCredential, ManagedIdentityCredentialOptions};
    /// use unified_tables::backend::azure::transport::IdentityHttpClient;
    /// use unified_tables::backend::azure::AzureConnection;
    /// use unified_tables::Tables;
    ///
    /// // The managed identity of the virtual machine, App Service or container:
    /// let credential = ManagedIdentityCredential::new(Some(ManagedIdentityCredentialOptions {
    ///     client_options: IdentityHttpClient::new()?.client_options(),
    ///     ..Default::default()
    /// }))
    /// .map_err(|e| unified_tables::Error::config("the managed identity").with_source(e))?;
    /// let connection = AzureConnection::with_token_credential("AccountName=myaccount", credential)?;
    /// let db = Tables::connect_with(connection)?;
    /// # let _ = db;
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    #[cfg(feature = "entra-id")]
    #[cfg_attr(docsrs, doc(cfg(feature = "entra-id")))]
    pub fn with_token_credential(endpoints: &str, credential: Arc<dyn TokenCredential>) -> Result<AzureConnection> {
        let endpoints = strings::parse_endpoints(endpoints)?;
        for (name, url) in [
            ("TableEndpoint", &endpoints.table_endpoint),
            ("BlobEndpoint", &endpoints.blob_endpoint),
        ] {
            if url.starts_with("http://") {
                return Err(Error::config(format!(
                    "endpoints: {name} `{url}` is http://, but a token credential sends bearer tokens, which travel over https:// only"
                )));
            }
        }
        Ok(AzureConnection {
            account_name: endpoints.account_name,
            profile: strings::endpoint_profile(&endpoints.table_endpoint),
            table_endpoint: endpoints.table_endpoint,
            blob_endpoint: endpoints.blob_endpoint,
            blob_derived: endpoints.blob_derived,
            auth: Auth::Token(Arc::new(super::transport::token::TokenCache::new(credential))),
            retry: RetryPolicy::default(),
            roots: Vec::new(),
            client: Arc::default(),
        })
    }

    /// [`with_token_credential`](Self::with_token_credential) with a
    /// credential of `azure_identity` 1.x chosen from the environment, each
    /// given the crate's own transport ([`IdentityHttpClient`](super::transport::IdentityHttpClient)):
    /// the workload identity when `AZURE_FEDERATED_TOKEN_FILE` is set (with
    /// `AZURE_TENANT_ID` and `AZURE_CLIENT_ID`), a client secret when
    /// `AZURE_CLIENT_SECRET` is (with `AZURE_TENANT_ID` and
    /// `AZURE_CLIENT_ID`; `AZURE_AUTHORITY_HOST` names another cloud), else
    /// the first of the managed identity (user-assigned when
    /// `AZURE_CLIENT_ID` is set) and the developer tools (the Azure CLI's,
    /// then the Azure Developer CLI's login) that gives a token, that one
    /// from then on. A variable missing beside the one that chose its
    /// credential is [`Error::Config`] naming it. Making the credential
    /// sends nothing; the first operation asks it for a token.
    ///
    /// ```no_run
    /// use unified_tables::backend::azure::AzureConnection;
    /// use unified_tables::Tables;
    /// let db = Tables::connect_with(AzureConnection::with_default_credential("AccountName=myaccount")?)?;
    /// # let _ = db;
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    #[cfg(feature = "entra-id")]
    #[cfg_attr(docsrs, doc(cfg(feature = "entra-id")))]
    pub fn with_default_credential(endpoints: &str) -> Result<AzureConnection> {
        let credential = super::default_credential::from_environment(|name| std::env::var(name).ok())?;
        AzureConnection::with_token_credential(endpoints, credential)
    }

    /// Names the service behind the table endpoint, for an endpoint whose
    /// host does not say it: a custom domain (or a proxy) in front of Cosmos
    /// DB for Table. The profile decides what the crate checks before
    /// sending and how it reads (see [`ServiceProfile`]). A profile without
    /// blobs ([`ServiceProfile::has_blobs`]) drops a blob endpoint derived
    /// from the account name; one given with `BlobEndpoint=` stays.
    ///
    /// ```
    /// use unified_tables::backend::azure::AzureConnection;
    /// use unified_tables::service::ServiceProfile;
    ///
    /// let connection = AzureConnection::parse(
    ///     "AccountName=orders;AccountKey=bXlrZXk=;TableEndpoint=https://tables.example.com",
    /// )?;
    /// assert_eq!(connection.profile(), ServiceProfile::TableStorage);
    /// let connection = connection.with_profile(ServiceProfile::CosmosTable);
    /// assert_eq!(connection.profile(), ServiceProfile::CosmosTable);
    /// assert_eq!(connection.table_backend()?.profile(), ServiceProfile::CosmosTable);
    /// assert_eq!(connection.blob_endpoint(), "", "the derived blob endpoint is dropped");
    /// # use unified_tables::backend::Backend as _;
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    pub fn with_profile(mut self, profile: ServiceProfile) -> AzureConnection {
        self.profile = profile;
        if !profile.has_blobs() && self.blob_derived {
            self.blob_endpoint.clear();
            self.blob_derived = false;
        }
        self
    }

    /// The service behind the table endpoint: recognised from its host, or
    /// named with [`with_profile`](Self::with_profile).
    pub fn profile(&self) -> ServiceProfile {
        self.profile
    }

    /// Retries and timeouts of every request (default: [`RetryPolicy::default`]).
    pub fn with_retry(mut self, policy: RetryPolicy) -> AzureConnection {
        self.retry = policy;
        self.client = Arc::default();
        self
    }

    /// Also trusts the certificate authorities in `pem` (one or more PEM
    /// certificates), beside the usual public ones: for an emulator or a
    /// proxy with a certificate of its own. Text that holds no certificate
    /// is [`Error::Config`].
    pub fn with_trusted_certificates_pem(mut self, pem: &[u8]) -> Result<AzureConnection> {
        let certificates = CertificateDer::pem_slice_iter(pem)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::config("trusted certificates: not PEM certificates").with_source(e))?;
        if certificates.is_empty() {
            return Err(Error::config(
                "trusted certificates: the PEM text holds no `BEGIN CERTIFICATE` block",
            ));
        }
        self.roots.extend(certificates);
        self.client = Arc::default();
        Ok(self)
    }

    /// The storage account name.
    pub fn account_name(&self) -> &str {
        &self.account_name
    }

    /// The table service endpoint, without a trailing `/`.
    pub fn table_endpoint(&self) -> &str {
        &self.table_endpoint
    }

    /// The blob service endpoint, without a trailing `/` (empty when none is known).
    pub fn blob_endpoint(&self) -> &str {
        &self.blob_endpoint
    }

    /// The retry policy.
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    pub(crate) fn auth(&self) -> &Auth {
        &self.auth
    }

    /// The connection's HTTP client: one pool, one TLS set-up, for tables and blobs.
    pub(crate) fn client(&self) -> Result<HttpClient> {
        if let Some(client) = self.client.get() {
            return Ok(client.clone());
        }
        let client = http_client(&self.retry, &self.roots)?;
        Ok(self.client.get_or_init(|| client).clone())
    }
}
