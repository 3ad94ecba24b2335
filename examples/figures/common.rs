//! The small entity several figures write, its shape for the raw
//! `azure_data_tables` crate, and the crate's client for the same account.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use azure_core::{ClientOptions, TransportOptions};

use azure_data_tables::clients::TableServiceClientBuilder;
use azure_data_tables::prelude::TableServiceClient;
use azure_storage::{CloudLocation, StorageCredentials};
use serde::{Deserialize, Serialize};
use unified_tables::backend::azure::{ConnectionString, Credentials};
use unified_tables::TableEntity;

/// Any error, reported by `main`.
pub type Failure = Box<dyn std::error::Error>;

/// A small row: the keys, an Int64 and a short string.
#[derive(TableEntity, Debug, Clone)]
pub struct Reading {
    /// The partition.
    #[table(partition_key)]
    pub pk: String,
    /// The row.
    #[table(row_key)]
    pub rk: String,
    /// Column `Value`, Edm.Int64.
    pub value: i64,
    /// Column `Label`.
    pub label: String,
}

impl Reading {
    /// Row `i` of a run: RowKey `{prefix}{i:07}`.
    pub fn nth(partition: &str, prefix: &str, i: usize) -> Reading {
        Reading {
            pk: partition.to_owned(),
            rk: format!("{prefix}{i:07}"),
            value: i as i64 * 7,
            label: format!("item {}", i % 97),
        }
    }

    /// Rows `0..n` of a run.
    pub fn many(partition: &str, prefix: &str, n: usize) -> Vec<Reading> {
        (0..n).map(|i| Reading::nth(partition, prefix, i)).collect()
    }
}

/// The same row for the raw crate: the cells the store writes, Int64 annotated.
#[derive(Serialize)]
pub struct RawReading<'a> {
    #[serde(rename = "PartitionKey")]
    pk: &'a str,
    #[serde(rename = "RowKey")]
    rk: &'a str,
    #[serde(rename = "Value")]
    value: String,
    #[serde(rename = "Value@odata.type")]
    value_type: &'static str,
    #[serde(rename = "Label")]
    label: &'a str,
}

impl<'a> From<&'a Reading> for RawReading<'a> {
    fn from(r: &'a Reading) -> RawReading<'a> {
        RawReading {
            pk: &r.pk,
            rk: &r.rk,
            value: r.value.to_string(),
            value_type: "Edm.Int64",
            label: &r.label,
        }
    }
}

/// A row as the raw crate reads it back (the Int64 arrives as text).
#[derive(Deserialize, Debug)]
pub struct RawReadingOwned {
    /// Column `Value`.
    #[serde(rename = "Value")]
    pub value: String,
    /// Column `Label`.
    #[serde(rename = "Label")]
    pub label: String,
}

/// A table name no earlier run used: letters and digits only.
pub fn fresh_table(tag: &str) -> String {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros()
        % 10_000_000_000;
    format!("Fig{tag}{stamp}")
}

/// The `azure_data_tables` service client for the same account and endpoint,
/// on a pooled HTTP client (the crate's default opens a connection per request).
pub fn pooled_crate_client(connection: &ConnectionString) -> Result<TableServiceClient, Failure> {
    let http = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let options = ClientOptions::new(TransportOptions::new(Arc::new(http)));
    Ok(crate_builder(connection)?.client_options(options).build())
}

/// The `azure_data_tables` service client for the same account and endpoint.
pub fn crate_client(connection: &ConnectionString) -> Result<TableServiceClient, Failure> {
    Ok(crate_builder(connection)?.build())
}

/// The crate's client builder for the account and endpoint.
fn crate_builder(connection: &ConnectionString) -> Result<TableServiceClientBuilder, Failure> {
    let credentials = match &connection.credentials {
        Credentials::AccountKey(key) => StorageCredentials::access_key(connection.account_name.clone(), key.clone()),
        Credentials::SharedAccessSignature(sas) => StorageCredentials::sas_token(sas.as_str())?,
    };
    let location = CloudLocation::Custom {
        account: connection.account_name.clone(),
        uri: connection.table_endpoint.clone(),
    };
    Ok(TableServiceClientBuilder::with_location(location, credentials))
}

/// CPU time this process's live threads have run, where the platform says
/// (Linux: the sum of `/proc/self/task/*/schedstat`, in nanoseconds).
pub fn process_cpu() -> Option<std::time::Duration> {
    let mut total = 0u64;
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let stat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        total += stat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(std::time::Duration::from_nanos(total))
}
