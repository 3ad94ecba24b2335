//! The small entity several figures write, its shape for the raw
//! `azure_data_tables` crate, and the crate's client for the same account.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use azure_core::{ClientOptions, TransportOptions};

use azure_data_tables::clients::TableServiceClientBuilder;
use azure_data_tables::prelude::TableServiceClient;
use azure_storage::{CloudLocation, StorageCredentials};
use serde::{Deserialize, Serialize};
use unified_tables::backend::azure::{AccountCredentials, ConnectionString};
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
        AccountCredentials::AccountKey(key) => {
            StorageCredentials::access_key(connection.account_name.clone(), key.clone())
        }
        AccountCredentials::SharedAccessSignature(sas) => StorageCredentials::sas_token(sas.as_str())?,
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

/// CPU time the calling thread has run, where the platform says (64-bit
/// Linux: `clock_gettime(CLOCK_THREAD_CPUTIME_ID)`): unlike wall time, not
/// lengthened when other processes take the core.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub fn thread_cpu() -> Option<std::time::Duration> {
    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut t = Timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec of the platform's layout (two 64-bit fields).
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut t) };
    (rc == 0).then(|| std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

/// CPU time the calling thread has run: not reported on this platform.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub fn thread_cpu() -> Option<std::time::Duration> {
    None
}
