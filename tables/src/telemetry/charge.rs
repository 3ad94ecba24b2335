//! The request units (RU) Cosmos DB for Table charges for each request:
//! read from the answers by the transport (or modelled by the in-memory
//! backend's Cosmos profile), added up on the request span and on the
//! operation span, and (feature `metrics`) recorded per operation.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tracing::Span;

use super::REQUEST_CHARGE;

/// A sum of request units, shared by a request or an operation and the
/// work it runs (an `f64` kept as its bits).
#[derive(Debug, Default)]
pub(crate) struct Charge(AtomicU64);

impl Charge {
    /// Adds `units` to the sum.
    pub(crate) fn add(&self, units: f64) {
        let _ = self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
            Some((f64::from_bits(bits) + units).to_bits())
        });
    }

    /// The sum so far.
    pub(crate) fn units(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

tokio::task_local! {
    /// The charge of the request the running task is in.
    static REQUEST: Arc<Charge>;
}

/// Adds `units` to the charge of the running request, if any.
pub(super) fn add_to_request(units: f64) {
    let _ = REQUEST.try_with(|charge| charge.add(units));
}

/// Runs one request's `work`, then records on `span` (a request span that
/// declares [`REQUEST_CHARGE`]) the units charged for it, if any.
pub(crate) async fn charged<R>(span: &Span, work: impl Future<Output = R>) -> R {
    let charge = Arc::new(Charge::default());
    let result = REQUEST.scope(charge.clone(), work).await;
    record(span, &charge);
    result
}

/// Records `charge` on `span` under [`REQUEST_CHARGE`] when anything was charged.
pub(crate) fn record(span: &Span, charge: &Charge) {
    let units = charge.units();
    if units > 0.0 {
        span.record(REQUEST_CHARGE, units);
    }
}

#[cfg(test)]
mod tests {
    use super::super::request_charge;
    use super::*;

    #[test]
    fn a_charge_adds_up_fractions() {
        let charge = Charge::default();
        assert_eq!(charge.units(), 0.0);
        charge.add(1.0);
        charge.add(5.71);
        assert!((charge.units() - 6.71).abs() < 1e-9, "{}", charge.units());
    }

    #[tokio::test]
    async fn a_request_charge_counts_in_the_running_request_only() {
        let charge = Arc::new(Charge::default());
        REQUEST
            .scope(charge.clone(), async {
                request_charge(2.5);
                request_charge(f64::NAN);
                request_charge(-1.0);
                request_charge(0.5);
            })
            .await;
        // Outside a request: no request to add to, and no panic.
        request_charge(7.0);
        assert_eq!(charge.units(), 3.0);
    }
}
