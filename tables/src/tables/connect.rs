//! `Tables` over an [`AzureConnection`]: any credential, retry policy and
//! trusted certificate.

use crate::backend::azure::AzureConnection;
use crate::tables::{BlobOptions, Tables};
use crate::telemetry::Peer;

#[cfg_attr(docsrs, doc(cfg(feature = "azure")))]
impl Tables {
    /// Tables over Azure Table Storage, Azurite or Azure Cosmos DB for Table
    /// as `connection` describes it: shared key, shared access signature or (feature `entra-id`) a
    /// token credential; the [`RetryPolicy`](crate::RetryPolicy); extra
    /// trusted certificates. Large values and files go to the account's blob
    /// endpoint when it has one. Nothing is sent until the first operation.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use unified_tables::backend::azure::AzureConnection;
    /// use unified_tables::{RetryPolicy, Tables};
    ///
    /// let sas = "sv=2018-11-09&ss=bt&srt=sco&sp=racwdlup&se=2030-01-01T00:00:00Z&sig=c2lnbmF0dXJl";
    /// let connection = AzureConnection::parse(&format!(
    ///     "SharedAccessSignature={sas};TableEndpoint=https://myaccount.table.core.windows.net;BlobEndpoint=https://myaccount.blob.core.windows.net",
    /// ))?
    /// .with_retry(RetryPolicy::builder().attempts(2).request_timeout(Duration::from_secs(10)).build()?);
    /// let db = Tables::connect_with(connection)?;
    /// # let _ = db;
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    ///
    /// # Azure Cosmos DB for Table
    ///
    /// A connection string whose `TableEndpoint` is a Cosmos DB for Table
    /// endpoint (`https://acct.table.cosmos.azure.com:443/`, as the portal
    /// gives it) connects to that service: the backend's
    /// [`profile`](crate::backend::Backend::profile) is
    /// [`ServiceProfile::CosmosTable`](crate::service::ServiceProfile::CosmosTable)
    /// (for a custom domain, name it with
    /// [`AzureConnection::with_profile`]). A Cosmos DB account has no blob
    /// service, so no blob endpoint is derived from its name: without
    /// `BlobEndpoint=`, the handle has no blob store (a value that would need
    /// a blob is refused). A connection string carries one credential, and a
    /// Cosmos DB account's key does not authorise a storage account: give the
    /// storage account that keeps the blobs on its own, with its own
    /// connection string, to [`Tables::with_blobs`]. (`BlobEndpoint=` in the
    /// Cosmos DB connection string is used with the Cosmos DB string's
    /// credential, so only for a blob endpoint that accepts it.)
    ///
    /// ```no_run
    /// use unified_tables::backend::azure::AzureBlobBackend;
    /// use unified_tables::{BlobOptions, Tables};
    ///
    /// let db = Tables::connect(
    ///     "DefaultEndpointsProtocol=https;AccountName=orders;AccountKey=bXlrZXk=;TableEndpoint=https://orders.table.cosmos.azure.com:443/;",
    /// )?
    /// .with_blobs(
    ///     AzureBlobBackend::from_connection_string(
    ///         "DefaultEndpointsProtocol=https;AccountName=ordersblobs;AccountKey=b3RoZXJrZXk=;EndpointSuffix=core.windows.net",
    ///     )?,
    ///     BlobOptions::default(),
    /// );
    /// # let _ = db;
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    pub fn connect_with(connection: AzureConnection) -> crate::Result<Tables> {
        let tables = Tables::with_backend(connection.table_backend()?)
            .with_scope(connection.table_endpoint())
            .with_peer(Peer::new(connection.account_name(), connection.table_endpoint()))
            .with_retry(*connection.retry());
        Ok(match connection.blob_endpoint().is_empty() {
            true => tables,
            false => tables.with_blobs(connection.blob_backend()?, BlobOptions::default()),
        })
    }
}
