//! When the storage service fails, the answers still say what happened, in JSON.

use reqwest::{Method, StatusCode};
use serde_json::json;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming};
use unified_tables::Error;

use crate::harness::{answer, code, Server};

fn busy() -> Error {
    Error::service(503, "ServerBusy", "The server is busy.")
}

fn connection_reset() -> Error {
    Error::transport("connection reset by peer")
}

pub async fn storage_failures_are_json_answers(server: &Server) {
    let alice = server.user("alice").await;
    alice.create_note("n1", "first").await;

    // The session cannot be read: the login layer's failure gets a JSON body.
    server.faults.fail_next(FaultTarget::Get, FaultTiming::Before, busy);
    let ((status, body), _) = answer(alice.client.request(Method::GET, "/notes/n1")).await;
    assert!(status.is_server_error(), "{status}: {body}");
    assert_eq!(code(&body), "session_unavailable", "{body}");

    // A listing the table refuses: 503 with Retry-After.
    server.faults.fail_every(FaultTarget::Query, FaultTiming::Before, busy);
    let response = alice.client.request(Method::GET, "/notes").send().await.unwrap();
    server.faults.clear();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(code(&body), "storage_unavailable", "{body}");

    // A write whose answer was lost: the store reads the row back, finds its
    // write token, and the note is created once.
    server
        .faults
        .fail_next(FaultTarget::Write, FaultTiming::After, connection_reset);
    let (status, body) = alice
        .send(Method::POST, "/notes", Some(json!({ "id": "n2", "title": "t" })))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, _) = alice.send(Method::GET, "/notes/n2", None).await;
    assert_eq!(status, StatusCode::OK);

    // ... and when the row cannot be read back either, the client is told it may have landed.
    server
        .faults
        .fail_next(FaultTarget::Write, FaultTiming::After, connection_reset);
    // The session and the user are read first; every read-back after them fails.
    server
        .faults
        .fail_after(FaultTarget::Get, 2, FaultTiming::Before, connection_reset);
    for _ in 0..3 {
        server
            .faults
            .fail_next(FaultTarget::Get, FaultTiming::Before, connection_reset);
    }
    let (status, body) = alice
        .send(Method::POST, "/notes", Some(json!({ "id": "n3", "title": "t" })))
        .await;
    server.faults.clear();
    assert_eq!(
        (status, code(&body)),
        (StatusCode::SERVICE_UNAVAILABLE, "outcome_unknown"),
        "{body}"
    );
    assert!(body["message"].as_str().unwrap().contains("GET it"), "{body}");
    let (status, _) = alice.send(Method::GET, "/notes/n3", None).await;
    assert_eq!(status, StatusCode::OK, "it did land, as the answer warned it might");
}
