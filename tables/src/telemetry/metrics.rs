//! The metrics the crate records (feature `metrics`), through the
//! `metrics` facade. Without the feature every function here is empty.

#[cfg(not(feature = "metrics"))]
use std::time::Duration;

/// Whether metrics are compiled in.
pub(crate) const METRICS: bool = cfg!(feature = "metrics");

#[cfg(feature = "metrics")]
mod on {
    use std::time::Duration;

    use crate::telemetry::*;

    pub(crate) fn operation_done(name: &'static str, collection: &str, outcome: &'static str, elapsed: Duration) {
        ::metrics::histogram!(
            OPERATION_DURATION,
            "db.operation.name" => name,
            "db.collection.name" => collection.to_owned(),
            "outcome" => outcome,
        )
        .record(elapsed.as_secs_f64());
    }

    pub(crate) fn request(resource: &'static str) {
        let operation = current_operation().unwrap_or("none");
        ::metrics::counter!(REQUESTS, "db.operation.name" => operation, "resource" => resource).increment(1);
    }

    pub(crate) fn retry(reason: &'static str) {
        ::metrics::counter!(RETRIES, "reason" => reason).increment(1);
    }

    pub(crate) fn settle_read_back(verdict: &'static str) {
        ::metrics::counter!(SETTLE_READ_BACKS, "verdict" => verdict).increment(1);
    }

    pub(crate) fn cache(hit: bool, cache: &'static str) {
        match hit {
            true => ::metrics::counter!(CACHE_HITS, "cache" => cache).increment(1),
            false => ::metrics::counter!(CACHE_MISSES, "cache" => cache).increment(1),
        }
    }

    pub(crate) fn charge_recorded(operation: &'static str, units: f64) {
        ::metrics::histogram!(OPERATION_REQUEST_CHARGE, "db.operation.name" => operation).record(units);
    }

    #[cfg_attr(not(feature = "azure"), allow(dead_code))]
    pub(crate) fn bytes(sent: usize, received: usize, resource: &'static str) {
        ::metrics::counter!(BYTES_SENT, "resource" => resource).increment(sent as u64);
        ::metrics::counter!(BYTES_RECEIVED, "resource" => resource).increment(received as u64);
    }
}

#[cfg(feature = "metrics")]
pub(crate) use on::*;

/// Records an operation's duration by its name, table and outcome.
#[cfg(not(feature = "metrics"))]
#[inline(always)]
pub(crate) fn operation_done(_name: &'static str, _collection: &str, _outcome: &'static str, _elapsed: Duration) {}

/// Counts a request of the running operation to `resource`.
#[cfg(not(feature = "metrics"))]
#[inline(always)]
pub(crate) fn request(_resource: &'static str) {}

/// Counts a request sent again, for `reason`.
#[cfg(not(feature = "metrics"))]
#[inline(always)]
pub(crate) fn retry(_reason: &'static str) {}

/// Counts a read-back of a write in doubt, by its verdict.
#[cfg(not(feature = "metrics"))]
#[inline(always)]
pub(crate) fn settle_read_back(_verdict: &'static str) {}

/// Counts a read-cache hit or miss.
#[cfg(not(feature = "metrics"))]
#[inline(always)]
pub(crate) fn cache(_hit: bool, _cache: &'static str) {}

/// Counts the bytes of one request and its answer.
#[cfg(not(feature = "metrics"))]
#[inline(always)]
#[cfg_attr(not(feature = "azure"), allow(dead_code))]
pub(crate) fn bytes(_sent: usize, _received: usize, _resource: &'static str) {}

/// Records the request units charged for one operation (or, as `none`, for
/// one request outside any operation).
#[cfg(not(feature = "metrics"))]
#[inline(always)]
pub(crate) fn charge_recorded(_operation: &'static str, _units: f64) {}
