//! Storage connection strings, parsed by us.

use std::fmt;

use base64::Engine as _;

use crate::error::{Error, Result};
use crate::service::ServiceProfile;

/// The account name of the storage emulator (Azurite).
pub const EMULATOR_ACCOUNT: &str = "devstoreaccount1";
/// The well-known, public account key of the storage emulator (Azurite).
pub const EMULATOR_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const EMULATOR_TABLE_ENDPOINT: &str = "http://127.0.0.1:10002/devstoreaccount1";
const EMULATOR_BLOB_ENDPOINT: &str = "http://127.0.0.1:10000/devstoreaccount1";

/// The credential a connection string carries: the account key (Shared
/// Key) or a shared access signature. (Entra ID tokens are given to an
/// [`AzureConnection`](super::AzureConnection) instead.)
#[derive(Clone, PartialEq, Eq)]
pub enum AccountCredentials {
    /// Shared Key with the account key (base64).
    AccountKey(String),
    /// A shared access signature (the query string, without a leading `?`).
    SharedAccessSignature(String),
}

impl fmt::Debug for AccountCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountCredentials::AccountKey(_) => f.write_str("AccountKey(..)"),
            AccountCredentials::SharedAccessSignature(_) => f.write_str("SharedAccessSignature(..)"),
        }
    }
}

/// A parsed storage connection string: the account, its credentials and the
/// table and blob endpoints.
///
/// Accepted forms:
/// - `UseDevelopmentStorage=true` (Azurite on its default ports);
/// - `DefaultEndpointsProtocol=https;AccountName=..;AccountKey=..;EndpointSuffix=core.windows.net`;
/// - either of the above with explicit `TableEndpoint=` / `BlobEndpoint=` (for
///   example an emulator at `http://127.0.0.1:PORT/devstoreaccount1`, with the
///   account name in the path);
/// - `SharedAccessSignature=..` instead of `AccountKey=..`.
///
/// Keys are matched without regard to case; unknown keys are refused.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionString {
    /// The storage account name.
    pub account_name: String,
    /// The credential a connection string carries: the account key (Shared
    /// Key) or a shared access signature. (Entra ID tokens are given to an
    /// [`AzureConnection`](super::AzureConnection) instead.)
    pub credentials: AccountCredentials,
    /// The table service endpoint, without a trailing `/` (e.g.
    /// `https://acct.table.core.windows.net` or `http://127.0.0.1:10002/devstoreaccount1`).
    pub table_endpoint: String,
    /// The blob service endpoint, without a trailing `/`.
    pub blob_endpoint: String,
}

impl fmt::Debug for ConnectionString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionString")
            .field("account_name", &self.account_name)
            .field("credentials", &self.credentials)
            .field("table_endpoint", &self.table_endpoint)
            .field("blob_endpoint", &self.blob_endpoint)
            .finish()
    }
}

fn config(msg: impl Into<String>) -> Error {
    Error::config(msg)
}

/// Checks an endpoint URL and removes a trailing `/`.
pub(crate) fn normalize_endpoint(part: &str, value: &str) -> Result<String> {
    let text = value.trim();
    if text.contains(['?', '#']) {
        return Err(config(format!(
            "connection string: {part} `{value}` must not carry a query or fragment"
        )));
    }
    let url: hyper::Uri = text
        .parse()
        .map_err(|e| config(format!("connection string: {part} `{value}` is not a URL")).with_source(e))?;
    let scheme = url.scheme_str().map(str::to_ascii_lowercase);
    if !matches!(scheme.as_deref(), Some("http" | "https")) {
        return Err(config(format!(
            "connection string: {part} `{value}` must be an http:// or https:// URL"
        )));
    }
    let Some(authority) = url.authority().filter(|a| !a.host().is_empty()) else {
        return Err(config(format!("connection string: {part} `{value}` has no host")));
    };
    // Scheme and host in lower case, a port that is the scheme's own left out, as URLs are written.
    let scheme = scheme.unwrap_or_default();
    let default_port = if scheme == "https" { 443 } else { 80 };
    let host = authority.host().to_ascii_lowercase();
    let port = url
        .port_u16()
        .filter(|p| *p != default_port)
        .map(|p| format!(":{p}"))
        .unwrap_or_default();
    Ok(format!("{scheme}://{host}{port}{}", url.path().trim_end_matches('/')))
}

/// Checks that an account key is base64.
pub(crate) fn check_account_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(config("connection string: AccountKey is empty"));
    }
    base64::engine::general_purpose::STANDARD
        .decode(key)
        .map(|_| ())
        .map_err(|_| config("connection string: AccountKey is not valid base64"))
}

impl ConnectionString {
    /// The connection string of the local emulator on its default ports.
    pub fn development() -> ConnectionString {
        ConnectionString {
            account_name: EMULATOR_ACCOUNT.to_owned(),
            credentials: AccountCredentials::AccountKey(EMULATOR_ACCOUNT_KEY.to_owned()),
            table_endpoint: EMULATOR_TABLE_ENDPOINT.to_owned(),
            blob_endpoint: EMULATOR_BLOB_ENDPOINT.to_owned(),
        }
    }

    /// Parses a connection string. Errors are [`Error::Config`] naming the bad part.
    ///
    /// A `TableEndpoint` of Cosmos DB for Table (a host ending in
    /// `.table.cosmos.azure.com`) derives no blob endpoint from the account
    /// name: a Cosmos DB account has no blob service. Its blobs (large
    /// values, files, locks) need a storage account of their own, named by
    /// `BlobEndpoint=`, or given to
    /// [`Tables::with_blobs`](crate::Tables::with_blobs).
    ///
    /// ```
    /// use unified_tables::backend::azure::ConnectionString;
    /// let cs = ConnectionString::parse(
    ///     "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=bXlrZXk=;TableEndpoint=https://acct.table.cosmos.azure.com:443/;",
    /// )?;
    /// assert_eq!(cs.table_endpoint, "https://acct.table.cosmos.azure.com");
    /// assert_eq!(cs.blob_endpoint, "", "no blob service beside Cosmos DB");
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    pub fn parse(text: &str) -> Result<ConnectionString> {
        parse_connection(text).map(|(connection, _)| connection)
    }
}

/// A connection string and whether its blob endpoint was derived from the
/// account name (no `BlobEndpoint=` given).
pub(crate) fn parse_connection(text: &str) -> Result<(ConnectionString, bool)> {
    let (credentials, endpoints) = parse_parts(text)?;
    let credentials = credentials.ok_or_else(|| {
        config("connection string: AccountKey is missing (or use UseDevelopmentStorage=true for Azurite)")
    })?;
    let derived = endpoints.blob_derived;
    Ok((
        ConnectionString {
            account_name: endpoints.account_name,
            credentials,
            table_endpoint: endpoints.table_endpoint,
            blob_endpoint: endpoints.blob_endpoint,
        },
        derived,
    ))
}

/// The service behind a table endpoint, by its host (see
/// [`ServiceProfile::from_table_host`]); Table Storage for one that cannot be read.
pub(crate) fn endpoint_profile(endpoint: &str) -> ServiceProfile {
    endpoint
        .parse::<hyper::Uri>()
        .ok()
        .and_then(|url| url.host().map(ServiceProfile::from_table_host))
        .unwrap_or_default()
}

/// Where an account's services are, without how to authorise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoints {
    pub(crate) account_name: String,
    pub(crate) table_endpoint: String,
    pub(crate) blob_endpoint: String,
    /// The blob endpoint was derived from the account name, not given.
    pub(crate) blob_derived: bool,
}

/// Parses the endpoints of a connection string that carries no credentials
/// (`AccountName=..`, optionally `EndpointSuffix=..`, or `TableEndpoint=..;BlobEndpoint=..`),
/// for a credential given another way.
#[cfg(any(feature = "entra-id", test))]
pub(crate) fn parse_endpoints(text: &str) -> Result<Endpoints> {
    match parse_parts(text)? {
        (None, endpoints) => Ok(endpoints),
        (Some(_), _) => Err(config(
            "endpoints: give AccountName (with EndpointSuffix) or TableEndpoint and BlobEndpoint, without AccountKey, SharedAccessSignature or UseDevelopmentStorage: the credential authorises",
        )),
    }
}

/// The credentials (if any) and endpoints of a connection string.
fn parse_parts(text: &str) -> Result<(Option<AccountCredentials>, Endpoints)> {
    let mut dev = false;
    let mut protocol: Option<String> = None;
    let mut account: Option<String> = None;
    let mut key: Option<String> = None;
    let mut sas: Option<String> = None;
    let mut suffix: Option<String> = None;
    let mut table: Option<String> = None;
    let mut blob: Option<String> = None;
    let mut seen = Vec::new();

    for segment in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((name, value)) = segment.split_once('=') else {
            // A segment without `=` may be a pasted key: show only its start.
            let mut shown: String = segment.chars().take(12).collect();
            if shown.len() < segment.len() {
                shown.push('…');
            }
            return Err(config(format!(
                "connection string: `{shown}` is not a `Name=value` pair"
            )));
        };
        let name = name.trim();
        let value = value.trim();
        let lower = name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(config(format!("connection string: {name} is given twice")));
        }
        seen.push(lower.clone());
        let slot = match lower.as_str() {
            "usedevelopmentstorage" => {
                dev = match value.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(config(format!(
                            "connection string: UseDevelopmentStorage must be true or false, not `{value}`"
                        )))
                    }
                };
                continue;
            }
            // Accepted for compatibility; the endpoints below decide where requests go.
            "developmentstorageproxyuri" | "queueendpoint" | "fileendpoint" => continue,
            "defaultendpointsprotocol" => &mut protocol,
            "accountname" => &mut account,
            "accountkey" => &mut key,
            "sharedaccesssignature" => &mut sas,
            "endpointsuffix" => &mut suffix,
            "tableendpoint" => &mut table,
            "blobendpoint" => &mut blob,
            _ => return Err(config(format!("connection string: unknown setting `{name}`"))),
        };
        if value.is_empty() {
            return Err(config(format!("connection string: {name} is empty")));
        }
        *slot = Some(value.to_owned());
    }

    if dev {
        let mut cs = ConnectionString::development();
        if let Some(t) = table {
            cs.table_endpoint = normalize_endpoint("TableEndpoint", &t)?;
        }
        if let Some(b) = blob {
            cs.blob_endpoint = normalize_endpoint("BlobEndpoint", &b)?;
        }
        if account.is_some() || key.is_some() || sas.is_some() {
            return Err(config(
                    "connection string: UseDevelopmentStorage=true cannot be combined with AccountName, AccountKey or SharedAccessSignature",
                ));
        }
        let endpoints = Endpoints {
            account_name: cs.account_name,
            table_endpoint: cs.table_endpoint,
            blob_endpoint: cs.blob_endpoint,
            blob_derived: false,
        };
        return Ok((Some(cs.credentials), endpoints));
    }

    let credentials = match (key, sas) {
        (Some(_), Some(_)) => {
            return Err(config(
                "connection string: give either AccountKey or SharedAccessSignature, not both",
            ))
        }
        (Some(k), None) => {
            check_account_key(&k)?;
            Some(AccountCredentials::AccountKey(k))
        }
        (None, Some(s)) => {
            let sas = s.trim_start_matches('?').to_owned();
            check_sas(&sas)?;
            Some(AccountCredentials::SharedAccessSignature(sas))
        }
        (None, None) => None,
    };

    let protocol = match protocol.as_deref().map(str::to_ascii_lowercase).as_deref() {
        None | Some("https") => "https",
        Some("http") => "http",
        Some(other) => {
            return Err(config(format!(
                "connection string: DefaultEndpointsProtocol must be http or https, not `{other}`"
            )))
        }
    };
    let suffix = suffix.unwrap_or_else(|| "core.windows.net".to_owned());
    let suffix = suffix.trim_matches('.');

    let table_endpoint = match (&table, &account) {
        (Some(t), _) => normalize_endpoint("TableEndpoint", t)?,
        (None, Some(a)) => normalize_endpoint("EndpointSuffix", &format!("{protocol}://{a}.table.{suffix}"))?,
        (None, None) => return Err(config("connection string: AccountName (or TableEndpoint) is missing")),
    };
    // A Cosmos DB account has no blob service: none is derived beside it.
    let blob_derived = blob.is_none() && account.is_some() && endpoint_profile(&table_endpoint).has_blobs();
    let blob_endpoint = match (&blob, &account) {
        (Some(b), _) => normalize_endpoint("BlobEndpoint", b)?,
        (None, Some(a)) if blob_derived => {
            normalize_endpoint("EndpointSuffix", &format!("{protocol}://{a}.blob.{suffix}"))?
        }
        (None, _) => String::new(),
    };

    let account_name = match account {
        Some(a) => a,
        None => account_from_endpoint(&table_endpoint)
            .ok_or_else(|| config("connection string: AccountName is missing and cannot be read from TableEndpoint"))?,
    };
    // Cosmos DB account names may also hold dashes; storage account names may not.
    let dashes = !endpoint_profile(&table_endpoint).has_blobs();
    if account_name.is_empty()
        || !account_name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || (dashes && c == '-'))
    {
        let allowed = if dashes {
            "lower-case letters, digits and dashes"
        } else {
            "lower-case letters and digits"
        };
        return Err(config(format!(
            "connection string: AccountName `{account_name}` must be {allowed}"
        )));
    }

    Ok((
        credentials,
        Endpoints {
            account_name,
            table_endpoint,
            blob_endpoint,
            blob_derived,
        },
    ))
}

/// The account named by an endpoint: the first path segment of a path-style
/// (emulator) URL, else the first label of the host.
fn account_from_endpoint(endpoint: &str) -> Option<String> {
    let url: hyper::Uri = endpoint.parse().ok()?;
    if let Some(first) = url.path().split('/').nth(1).filter(|s| !s.is_empty()) {
        return Some(first.to_owned());
    }
    let host = url.host()?;
    if host.parse::<std::net::IpAddr>().is_ok() || host == "localhost" {
        return None;
    }
    host.split('.').next().map(str::to_owned)
}

/// A connection for an account name and key with no endpoint yet (checked).
pub(crate) fn with_account_key(account_name: &str, key: &str) -> Result<ConnectionString> {
    check_account_key(key)?;
    if account_name.is_empty() {
        return Err(Error::config("the account name is empty"));
    }
    Ok(ConnectionString {
        account_name: account_name.to_owned(),
        credentials: AccountCredentials::AccountKey(key.to_owned()),
        table_endpoint: String::new(),
        blob_endpoint: String::new(),
    })
}

/// A SAS must carry its signature (`sig=`) and a version (`sv=`): a token
/// copied in part is refused here rather than answered 403 later.
pub(crate) fn check_sas(sas: &str) -> Result<()> {
    let names: Vec<&str> = sas
        .trim_start_matches('?')
        .split('&')
        .filter_map(|pair| pair.split_once('=').map(|(name, _)| name))
        .collect();
    for (name, what) in [("sig", "signature"), ("sv", "signed version")] {
        if !names.contains(&name) {
            return Err(Error::config(format!(
                "connection string: SharedAccessSignature has no `{name}=` ({what}); give the whole token, as generated"
            )));
        }
    }
    Ok(())
}
