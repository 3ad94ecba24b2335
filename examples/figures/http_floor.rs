//! The floor of a point operation's client CPU: the same requests sent with
//! `reqwest` alone, each signed with the account key (`SharedKey`, as the
//! service wants it) and its answer decoded with serde, and nothing else:
//! no pipeline, no retries, no error capture: what no client built on
//! `reqwest` goes below. The raw crate sends through `reqwest`; the library
//! sends every request through `hyper` itself, whatever the credential,
//! which spares each request the three URL parses `reqwest` makes of it, so
//! it can go below this floor.

use azure_core::auth::Secret;
use azure_core::date;
use azure_core::hmac::hmac_sha256;
use unified_tables::backend::azure::{AccountCredentials, ConnectionString};

use crate::common::{Failure, RawReading, RawReadingOwned};

/// The version the crate family sends.
const VERSION: &str = "2022-11-02";

/// Signed requests to one table, sent with a pooled `reqwest` client.
pub struct Floor {
    http: reqwest::Client,
    /// `{endpoint}/{table}`.
    table_url: String,
    /// The path of `table_url`, as the signature names it.
    table_path: String,
    account: String,
    key: Secret,
}

impl Floor {
    /// The floor for `table` on `connection`: `None` without an account key.
    pub fn new(connection: &ConnectionString, table: &str) -> Result<Option<Floor>, Failure> {
        let AccountCredentials::AccountKey(key) = &connection.credentials else {
            return Ok(None);
        };
        let table_url = format!("{}/{table}", connection.table_endpoint);
        let table_path = azure_core::Url::parse(&table_url)?.path().to_owned();
        Ok(Some(Floor {
            http: reqwest::Client::builder().tcp_nodelay(true).build()?,
            table_url,
            table_path,
            account: connection.account_name.clone(),
            key: Secret::new(key.clone()),
        }))
    }

    /// A request to `suffix` after the table's URL, with the date, version
    /// and `SharedKey` signature headers.
    fn request(
        &self,
        method: reqwest::Method,
        suffix: &str,
        content_type: &str,
    ) -> Result<reqwest::RequestBuilder, Failure> {
        let now = date::to_rfc1123(&time::OffsetDateTime::now_utc());
        let to_sign = format!(
            "{method}\n\n{content_type}\n{now}\n/{}{}{suffix}",
            self.account, self.table_path
        );
        let signature = hmac_sha256(&to_sign, &self.key)?;
        Ok(self
            .http
            .request(method, format!("{}{suffix}", self.table_url))
            .header("x-ms-date", now)
            .header("x-ms-version", VERSION)
            .header("DataServiceVersion", "3.0")
            .header("MaxDataServiceVersion", "3.0;NetFx")
            .header("Authorization", format!("SharedKey {}:{signature}", self.account)))
    }

    fn entity(pk: &str, rk: &str) -> String {
        format!("(PartitionKey='{pk}',RowKey='{rk}')")
    }

    /// Get Entity, decoded with serde.
    pub async fn get(&self, pk: &str, rk: &str) -> Result<RawReadingOwned, Failure> {
        let answer = self
            .request(reqwest::Method::GET, &Floor::entity(pk, rk), "")?
            .header("Accept", "application/json;odata=minimalmetadata")
            .send()
            .await?
            .error_for_status()?;
        Ok(serde_json::from_slice(&answer.bytes().await?)?)
    }

    /// Insert Or Replace Entity, its body encoded with serde.
    pub async fn upsert(&self, row: &RawReading<'_>, pk: &str, rk: &str) -> Result<(), Failure> {
        let body = serde_json::to_vec(row)?;
        self.request(reqwest::Method::PUT, &Floor::entity(pk, rk), "application/json")?
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }

    /// Insert Entity (answered without content), its body encoded with serde.
    pub async fn create(&self, row: &RawReading<'_>) -> Result<(), Failure> {
        let body = serde_json::to_vec(row)?;
        self.request(reqwest::Method::POST, "", "application/json")?
            .header("Content-Type", "application/json")
            .header("Accept", "application/json;odata=minimalmetadata")
            .header("Prefer", "return-no-content")
            .body(body)
            .send()
            .await?
            .error_for_status()?;
        Ok(())
    }
}
