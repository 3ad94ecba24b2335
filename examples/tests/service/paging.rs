//! `GET /notes` a page at a time through the crate's cursor.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::harness::{code, Server, User};

/// Every page of `limit` notes: the ids of each page.
async fn all_pages(user: &User, limit: usize) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut request = user
            .client
            .request(Method::GET, "/notes")
            .query(&[("limit", limit.to_string())]);
        if let Some(c) = &cursor {
            request = request.query(&[("cursor", c)]);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.unwrap();
        let items = body["items"].as_array().expect("items");
        assert!(items.len() <= limit, "{body}");
        for item in items {
            assert!(item["etag"].is_string(), "listed notes carry their ETag: {item}");
        }
        pages.push(items.iter().map(|i| i["id"].as_str().unwrap().to_owned()).collect());
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return pages,
        }
        assert!(pages.len() < 50, "the cursor leads somewhere");
    }
}

pub async fn pages_follow_the_cursor_to_the_end(server: &Server) {
    let alice = server.user("alice").await;
    let mut ids: Vec<String> = (0..7).map(|i| format!("note-{i:02}")).collect();
    // Created out of order: pages come back in id order.
    for id in ids.iter().rev() {
        alice.create_note(id, id).await;
    }
    ids.sort();

    let pages = all_pages(&alice, 3).await;
    let seen: Vec<String> = pages.concat();
    assert_eq!(seen, ids, "every note once, in order: {pages:?}");
    assert!(pages.iter().take(2).all(|p| p.len() == 3), "{pages:?}");

    // A limit the size of the set ends cleanly; the largest takes them all.
    assert_eq!(all_pages(&alice, 7).await.concat(), ids);
    assert_eq!(all_pages(&alice, 100).await, [ids.clone()]);
    let (status, body) = alice.send(Method::GET, "/notes?limit=101", None).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_limit"),
        "{body}"
    );

    // Without a limit, pages of 20.
    let more: Vec<String> = (7..21).map(|i| format!("note-{i:02}")).collect();
    for id in &more {
        alice.create_note(id, id).await;
    }
    let (_, body) = alice.send(Method::GET, "/notes", None).await;
    assert_eq!(body["items"].as_array().map(Vec::len), Some(20), "{body}");
    let cursor = body["next_cursor"].as_str().expect("a second page");
    let (_, body) = alice.send(Method::GET, &format!("/notes?cursor={cursor}"), None).await;
    assert_eq!(body["items"][0]["id"], "note-20", "{body}");
    assert!(body["next_cursor"].is_null(), "{body}");

    // A user with no notes gets one empty last page.
    let bob = server.user("bob").await;
    let (status, body) = bob.send(Method::GET, "/notes", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["items"].as_array().map(Vec::len), Some(0), "{body}");
    assert!(body["next_cursor"].is_null(), "{body}");
}

pub async fn a_tampered_or_foreign_cursor_is_refused(server: &Server) {
    let alice = server.user("alice").await;
    for i in 0..3 {
        alice.create_note(&format!("n{i}"), "t").await;
    }
    let (_, body) = alice.send(Method::GET, "/notes?limit=2", None).await;
    let cursor = body["next_cursor"].as_str().expect("a second page").to_owned();

    let get = |user: &User, limit: &str, cursor: String| {
        let request = user
            .client
            .request(Method::GET, "/notes")
            .query(&[("limit", limit), ("cursor", cursor.as_str())]);
        async move {
            let response = request.send().await.unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        }
    };
    let (status, body) = get(&alice, "2", cursor.clone()).await;
    assert_eq!(status, StatusCode::OK, "the cursor itself is good: {body}");

    // One character changed, cut short, or made up.
    let mut tampered: Vec<char> = cursor.chars().collect();
    tampered[3] = if tampered[3] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    for bad in [tampered, cursor[..cursor.len() - 2].to_owned(), "garbage".to_owned()] {
        let (status, body) = get(&alice, "2", bad.clone()).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, "invalid_cursor"),
            "{bad}: {body}"
        );
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("cursor") && message.contains("damaged"), "{message}");
    }

    // The cursor is bound to its query: another page size is refused too.
    let (status, body) = get(&alice, "3", cursor.clone()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_cursor"),
        "{body}"
    );
    assert!(body["message"].as_str().unwrap().contains("another query"), "{body}");

    // And to its user: another user cannot page through alice's notes with it.
    let mallory = server.user("mallory").await;
    mallory.create_note("n9", "t").await;
    let (status, body) = get(&mallory, "2", cursor).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_cursor"),
        "{body}"
    );
}
