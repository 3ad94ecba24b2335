//! What a failure tells an operator: the service's request id survives the
//! errors the store wraps around a service answer.

use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::{Error, ErrorKind, Tables};

use crate::model::Customer;
use crate::Env;

const REQUEST_ID: &str = "5d2c1f7e-0001-0042-7c3e-3d8a1b000000";

fn timed_out() -> Error {
    Error::Service {
        status: 500,
        code: "OperationTimedOut".into(),
        message: "Operation could not be completed within the specified time.".into(),
        request_id: Some(REQUEST_ID.into()),
        retry_after: None,
    }
}

/// A write the service failed after applying it, and that could not be read
/// back, is an unknown outcome whose request id is the service's; so is a transaction's, inside the batch error.
pub async fn the_request_id_survives_the_errors_that_wrap_a_service_answer(env: &Env) {
    let faulty = FaultyBackend::new(env.backend().clone());
    let store = Tables::with_backend(faulty.clone())
        .with_retry(unified_tables::RetryPolicy::no_retries())
        .store_in::<Customer>(&env.table);

    // Applied, its answer lost, and the read-back that would settle it failed.
    faulty.fail_next(FaultTarget::Write, FaultTiming::After, timed_out);
    faulty.fail_next(FaultTarget::Get, FaultTiming::Before, || Error::transport("reset"));
    let err = store.create(&mut Customer::new("p", "c", "x")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown, "{err}");
    assert_eq!(err.request_id(), Some(REQUEST_ID), "{err}");
    assert!(err.to_string().contains(REQUEST_ID), "{err}");
    assert!(store.get(("p", "c")).await.unwrap().is_some(), "it was applied");

    let batch: Vec<Customer> = (0..3).map(|i| Customer::new("p", &format!("b{i}"), "y")).collect();
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::Before, timed_out);
    let err = store.create_batch(&batch).await.unwrap_err();
    assert!(matches!(err, Error::BatchFailed { committed: 0, .. }), "{err}");
    assert_eq!(err.request_id(), Some(REQUEST_ID), "{err}");
    assert!(err.to_string().contains(REQUEST_ID), "{err}");

    // A refusal keeps the id of the answer that carried it (the in-memory backend has none).
    let err = store.create(&mut Customer::new("p", "c", "x")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
    assert_eq!(err.request_id().is_some(), env.is_azure(), "{err:?}");
}
