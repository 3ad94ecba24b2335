//! A user never reads, lists or changes another user's notes.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::harness::{answer, code, Server};

pub async fn a_user_never_reads_or_changes_another_users_notes(server: &Server) {
    let alice = server.user("alice").await;
    let bob = server.user("bob").await;
    let etag = alice.create_note("shared-id", "alice's").await;

    // Bob does not see it, by id or in his listing.
    let (status, body) = bob.send(Method::GET, "/notes/shared-id", None).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "{body}");
    let (_, body) = bob.send(Method::GET, "/notes", None).await;
    assert_eq!(body["items"], json!([]), "{body}");

    // Nor can he change or delete it, even with its current ETag or `*`.
    for if_match in [etag.as_str(), "*"] {
        let ((status, body), _) = answer(
            bob.client
                .request(Method::PUT, "/notes/shared-id")
                .header("If-Match", if_match)
                .json(&json!({ "title": "bob was here" })),
        )
        .await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "{body}");
        let ((status, _), _) = answer(
            bob.client
                .request(Method::DELETE, "/notes/shared-id")
                .header("If-Match", if_match),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    // The same id is his own note in his own space.
    bob.create_note("shared-id", "bob's").await;
    let ((status, body), after) = answer(alice.client.request(Method::GET, "/notes/shared-id")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["title"], "alice's", "alice's note is untouched");
    assert_eq!(after.as_deref(), Some(etag.as_str()));
    let (_, body) = bob.send(Method::GET, "/notes/shared-id", None).await;
    assert_eq!(body["title"], "bob's");
    assert_eq!(alice.titles().await, ["alice's"]);

    // The cookie is the only identity: no field of a request picks another owner.
    let (status, body) = bob
        .send(
            Method::POST,
            "/notes",
            Some(json!({ "id": "x", "title": "t", "owner": alice.name })),
        )
        .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown fields are refused: {body}"
    );
}
