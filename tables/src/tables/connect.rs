//! `Tables` over an [`AzureConnection`]: any credential, retry policy and
//! trusted certificate.

use crate::backend::azure::AzureConnection;
use crate::tables::{BlobOptions, Tables};
use crate::telemetry::Peer;

#[cfg_attr(docsrs, doc(cfg(feature = "azure")))]
impl Tables {
    /// Tables over Azure Table Storage or Azurite as `connection` describes
    /// it: shared key, shared access signature or (feature `entra-id`) a
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
