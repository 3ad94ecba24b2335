//! A resend the client refuses before sending it, after an attempt left in
//! doubt: the attempt in doubt may still land, so the write's outcome is
//! unknown, never the refusal (which would invite the caller to apply the
//! change a second time). A refusal of the service, by contrast, is the
//! answer the first attempt got too, and is returned as it is.

use unified_tables::backend::faulty::{FaultTarget, FaultTiming};
use unified_tables::{Error, ErrorKind};

use crate::model::Customer;
use crate::scenarios::exactly_once::{faulty_tables, timed_out};
use crate::Env;

/// What a pool's fence answers to a write of a moving partition.
fn fenced() -> Error {
    Error::config(
        "partition \"p\" is moving: writes to a moving partition are refused until the reshard switches the pool",
    )
}

/// The service refuses the request itself.
fn invalid() -> Error {
    Error::service(400, "InvalidInput", "One of the request inputs is not valid.")
}

pub async fn a_resend_refused_before_it_is_sent_after_a_timeout_is_an_unknown_outcome(env: &Env) {
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Customer>(&env.table);
    let mut c = Customer::new("p", "c", "v1");
    store.create(&mut c).await.unwrap();
    let before = c.etag.clone().unwrap();

    // The first attempt times out without landing (the read-back finds the
    // version it was conditioned on), and the client refuses the resend.
    c.name = "v2".into();
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, timed_out);
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, fenced);
    let err = store.update(&mut c).await.unwrap_err();
    assert_eq!(faulty.pending(), 0);
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::OutcomeUnknown);
    let stored = store.get(("p", "c")).await.unwrap().unwrap();
    assert_eq!((stored.name.as_str(), stored.etag.as_ref()), ("v1", Some(&before)));

    // The service refusing the resend itself: the first attempt was refused
    // the same way, and that refusal is the answer.
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, timed_out);
    faulty.fail_next(FaultTarget::Write, FaultTiming::Before, invalid);
    let err = store.update(&mut c).await.unwrap_err();
    assert_eq!(faulty.pending(), 0);
    assert!(err.service_code().is_some_and(|(status, _)| status == 400), "{err}");
    assert_eq!(store.get(("p", "c")).await.unwrap().unwrap().name, "v1");
}
