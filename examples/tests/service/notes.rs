//! The notes resource: ETags and If-Match, refusals, the role-gated field.

use reqwest::{Method, StatusCode};
use serde_json::json;

use unified_tables_tests::gate::Point;

use crate::harness::{answer, code, Server};

pub async fn routes_need_a_signed_in_user(server: &Server) {
    let anonymous = server.client();
    for (method, path) in [
        (Method::GET, "/notes"),
        (Method::POST, "/notes"),
        (Method::GET, "/notes/n1"),
        (Method::PUT, "/notes/n1"),
        (Method::DELETE, "/notes/n1"),
        (Method::GET, "/me"),
    ] {
        let (status, body) = anonymous
            .send(method.clone(), path, Some(json!({ "title": "t" })))
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}: {body}");
        assert_eq!(code(&body), "unauthenticated", "{body}");
    }
}

pub async fn etags_guard_every_write(server: &Server) {
    let alice = server.user("alice").await;
    let c = &alice.client;
    let first = alice.create_note("n1", "first").await;

    // A read carries the version it read; If-None-Match with it is a 304.
    let ((status, body), etag) = answer(c.request(Method::GET, "/notes/n1")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(etag.as_deref(), Some(first.as_str()));
    assert_eq!(body["etag"], first.as_str());
    assert_eq!(body["title"], "first");
    let ((status, _), etag) = answer(c.request(Method::GET, "/notes/n1").header("If-None-Match", &first)).await;
    assert_eq!(
        (status, etag.as_deref()),
        (StatusCode::NOT_MODIFIED, Some(first.as_str()))
    );

    // A write naming the current version lands and returns the next one.
    let put = |etag: &str, title: &str| {
        c.request(Method::PUT, "/notes/n1")
            .header("If-Match", etag)
            .json(&json!({ "title": title, "body": "edited" }))
    };
    let ((status, body), second) = answer(put(&first, "second")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let second = second.expect("an ETag after a write");
    assert_ne!(second, first);
    assert_eq!(
        (body["title"].as_str(), body["body"].as_str()),
        (Some("second"), Some("edited"))
    );

    // A write naming the version before it is a 412, and changes nothing.
    let ((status, body), _) = answer(put(&first, "lost update")).await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED, "{body}");
    assert_eq!(code(&body), "stale_etag", "{body}");
    let ((_, body), etag) = answer(c.request(Method::GET, "/notes/n1")).await;
    assert_eq!(
        (body["title"].as_str(), etag.as_deref()),
        (Some("second"), Some(second.as_str()))
    );

    // Two clients holding the same version: the first write wins, the second gets 412.
    let ((a, _), _) = answer(put(&second, "from tab one")).await;
    let ((b, body), _) = answer(put(&second, "from tab two")).await;
    assert_eq!((a, b), (StatusCode::OK, StatusCode::PRECONDITION_FAILED), "{body}");

    // A write without If-Match is refused; `*` overwrites whatever is stored.
    let (status, body) = alice
        .send(Method::PUT, "/notes/n1", Some(json!({ "title": "blind" })))
        .await;
    assert_eq!(status, StatusCode::PRECONDITION_REQUIRED, "{body}");
    assert_eq!(code(&body), "if_match_required");
    let ((status, body), third) = answer(put("*", "forced")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let third = third.expect("an ETag");

    // A malformed If-Match is a 400 that says what to send.
    let ((status, body), _) = answer(put("not-an-etag", "x")).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_if_match"),
        "{body}"
    );

    // Deletes are conditional too: a stale version is 412, the current one removes it.
    let delete = |etag: &str| c.request(Method::DELETE, "/notes/n1").header("If-Match", etag);
    let ((status, body), _) = answer(delete(&second)).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::PRECONDITION_FAILED, "stale_etag"),
        "{body}"
    );
    let (status, body) = alice.send(Method::DELETE, "/notes/n1", None).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::PRECONDITION_REQUIRED, "if_match_required")
    );
    let ((status, _), _) = answer(delete(&third)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = alice.send(Method::GET, "/notes/n1", None).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "{body}");
}

pub async fn duplicates_missing_notes_and_bad_input_say_what_is_wrong(server: &Server) {
    let alice = server.user("alice").await;
    let etag = alice.create_note("n1", "first").await;

    let (status, body) = alice
        .send(Method::POST, "/notes", Some(json!({ "id": "n1", "title": "again" })))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "already_exists"),
        "{body}"
    );
    assert!(
        body["message"].as_str().unwrap().contains("\"n1\""),
        "the message names the note: {body}"
    );
    let (_, body) = alice.send(Method::GET, "/notes/n1", None).await;
    assert_eq!(body["title"], "first", "a refused create changes nothing");

    for (method, etag) in [
        (Method::PUT, etag.as_str()),
        (Method::PUT, "*"),
        (Method::DELETE, etag.as_str()),
        (Method::DELETE, "*"),
    ] {
        let ((status, body), _) = answer(
            alice
                .client
                .request(method.clone(), "/notes/missing")
                .header("If-Match", etag)
                .json(&json!({ "title": "t" })),
        )
        .await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::NOT_FOUND, "not_found"),
            "{method} {etag}: {body}"
        );
    }
    let (status, _) = alice.send(Method::GET, "/notes/missing", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A created note without an id gets one, and a Location to find it.
    let response = alice
        .client
        .request(Method::POST, "/notes")
        .json(&json!({ "title": "no id" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let (status, body) = alice.send(Method::GET, &location, None).await;
    assert_eq!(
        (status, body["title"].as_str()),
        (StatusCode::OK, Some("no id")),
        "{location}"
    );
    // Generated ids list newest first.
    let (status, _) = alice
        .send(Method::POST, "/notes", Some(json!({ "title": "no id, later" })))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(alice.titles().await, ["no id, later", "no id", "first"]);

    // An id with a character the table refuses, a body that is not a note, a bad limit.
    let (status, body) = alice
        .send(Method::POST, "/notes", Some(json!({ "id": "a/b", "title": "t" })))
        .await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "invalid_id"), "{body}");
    let (status, body) = alice.send(Method::POST, "/notes", Some(json!({ "id": "n2" }))).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_body"),
        "{body}"
    );
    assert!(body["message"].as_str().unwrap().contains("title"), "{body}");
    let response = alice
        .client
        .request(Method::POST, "/notes")
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(code(&body), "invalid_body", "{body}");
    let (status, body) = alice.send(Method::GET, "/notes?limit=0", None).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_limit"),
        "{body}"
    );
}

pub async fn publishing_needs_the_publisher_role(server: &Server) {
    let writer = server.user("writer").await;
    let c = &writer.client;

    // Creating a published note, or publishing one, needs the role.
    let (status, body) = writer
        .send(
            Method::POST,
            "/notes",
            Some(json!({ "id": "p1", "title": "t", "published": true })),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "forbidden_field"),
        "{body}"
    );
    assert!(body["message"].as_str().unwrap().contains("publisher"), "{body}");
    let (status, _) = writer.send(Method::GET, "/notes/p1", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a refused create stores nothing");

    let etag = writer.create_note("p1", "draft").await;
    let publish = |etag: &str| {
        c.request(Method::PUT, "/notes/p1")
            .header("If-Match", etag)
            .json(&json!({ "title": "final", "published": true }))
    };
    for etag in [etag.as_str(), "*"] {
        let ((status, body), _) = answer(publish(etag)).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::FORBIDDEN, "forbidden_field"),
            "{body}"
        );
        assert!(body["message"].as_str().unwrap().contains("`published`"), "{body}");
    }
    let ((_, body), unchanged) = answer(c.request(Method::GET, "/notes/p1")).await;
    assert_eq!(
        (body["title"].as_str(), body["published"].as_bool()),
        (Some("draft"), Some(false))
    );
    assert_eq!(
        unchanged.as_deref(),
        Some(etag.as_str()),
        "a refused write stores nothing"
    );

    // Other fields stay editable without the role.
    let ((status, body), etag) = answer(
        c.request(Method::PUT, "/notes/p1")
            .header("If-Match", &etag)
            .json(&json!({ "title": "second draft", "published": false })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let etag = etag.unwrap();

    // Once an admin grants the role, the same request publishes, in the same session.
    let admin = server.admin().await;
    let path = format!("/users/{}/roles/publisher", writer.name);
    let (status, body) = admin.send(Method::PUT, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let ((status, body), etag) = answer(publish(&etag)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["published"], true);
    let (_, me) = writer.send(Method::GET, "/me", None).await;
    assert!(me["roles"].as_array().unwrap().contains(&json!("publisher")), "{me}");

    // Editing a published note keeps it published when `published` is left out.
    let ((status, body), _) = answer(
        c.request(Method::PUT, "/notes/p1")
            .header("If-Match", etag.unwrap())
            .json(&json!({ "title": "final, fixed" })),
    )
    .await;
    assert_eq!(
        (status, body["published"].as_bool()),
        (StatusCode::OK, Some(true)),
        "{body}"
    );
    let (status, body) = writer
        .send(
            Method::POST,
            "/notes",
            Some(json!({ "id": "p2", "title": "t", "published": true })),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");

    // Taking the role away takes the right away.
    let (status, _) = admin.send(Method::DELETE, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let ((status, body), _) = answer(
        c.request(Method::PUT, "/notes/p2")
            .header("If-Match", "*")
            .json(&json!({ "title": "t", "published": false })),
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "forbidden_field"),
        "{body}"
    );
}

pub async fn a_write_overtaken_after_its_check_still_gets_412(server: &Server) {
    let alice = server.user("alice").await;
    let etag = alice.create_note("n1", "first").await;
    let put = |title: &str| {
        alice
            .client
            .request(Method::PUT, "/notes/n1")
            .header("If-Match", &etag)
            .json(&json!({ "title": title }))
    };

    // The first PUT reads the note, finds the version it names, and is held
    // just before its write is sent.
    let hold = server.gate.arm(Point::BeforeWrite);
    let first = tokio::spawn(answer(put("slow")));
    hold.reached.await.expect("the first write reaches the store");

    // A second PUT naming the same version overtakes it.
    let ((status, body), _) = answer(put("fast")).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Let the first go: the table refuses its write, conditional on the version it was given.
    hold.release.send(()).expect("the first write is waiting");
    let ((status, body), _) = first.await.expect("the first request ends");
    assert_eq!(
        (status, code(&body)),
        (StatusCode::PRECONDITION_FAILED, "stale_etag"),
        "{body}"
    );
    let (_, body) = alice.send(Method::GET, "/notes/n1", None).await;
    assert_eq!(body["title"], "fast", "the overtaken write stored nothing");
}
