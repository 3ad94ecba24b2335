//! Sign-up, login, lockout, logout and password changes.

use reqwest::{Method, StatusCode};
use serde_json::json;

use std::time::Duration;

use unified_tables::web::identity::Lockout;

use crate::harness::{code, unique, Server};

pub async fn signing_up_and_in_opens_a_session(server: &Server) {
    let client = server.client();
    let name = unique("carol");
    let credentials = json!({ "user_name": name, "password": "carol's long password" });
    let (status, body) = client.send(Method::POST, "/signup", Some(credentials.clone())).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["user_name"], name.as_str());
    let id = body["id"].as_str().expect("an id").to_owned();

    // Signing up does not sign in.
    let (status, _) = client.send(Method::GET, "/me", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, body) = client.send(Method::POST, "/login", Some(credentials)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        client.cookie().contains("id="),
        "the session cookie is kept: {}",
        client.cookie()
    );
    let (status, me) = client.send(Method::GET, "/me", None).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(
        (me["id"].as_str(), me["user_name"].as_str()),
        (Some(id.as_str()), Some(name.as_str()))
    );
    assert_eq!(me["roles"], json!([]));

    // The user name is matched as the store normalizes it.
    let other = server.client();
    let shouted = json!({ "user_name": name.to_uppercase(), "password": "carol's long password" });
    let (status, body) = other.send(Method::POST, "/login", Some(shouted)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["id"], id.as_str());
}

pub async fn bad_sign_ups_and_logins_are_refused_with_reasons(server: &Server) {
    let client = server.client();
    let name = unique("dave");
    let ok = json!({ "user_name": name, "password": "dave's long password" });
    assert_eq!(
        client.send(Method::POST, "/signup", Some(ok.clone())).await.0,
        StatusCode::CREATED
    );

    // The name is taken, also in another letter case.
    for taken in [name.clone(), name.to_uppercase()] {
        let (status, body) = client
            .send(
                Method::POST,
                "/signup",
                Some(json!({ "user_name": taken, "password": "another long password" })),
            )
            .await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::CONFLICT, "user_name_taken"),
            "{body}"
        );
    }
    let (status, body) = client
        .send(
            Method::POST,
            "/signup",
            Some(json!({ "user_name": unique("erin"), "password": "short" })),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "weak_password"),
        "{body}"
    );
    let (status, body) = client
        .send(
            Method::POST,
            "/signup",
            Some(json!({ "user_name": "  ", "password": "a long enough password" })),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "invalid_user_name"),
        "{body}"
    );

    // A wrong password and an unknown user answer alike.
    let (status, wrong) = client
        .send(
            Method::POST,
            "/login",
            Some(json!({ "user_name": name, "password": "not the password" })),
        )
        .await;
    assert_eq!(
        (status, code(&wrong)),
        (StatusCode::UNAUTHORIZED, "invalid_credentials"),
        "{wrong}"
    );
    let (status, unknown) = client
        .send(
            Method::POST,
            "/login",
            Some(json!({ "user_name": unique("nobody"), "password": "whatever it is" })),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(unknown, wrong, "the answer does not tell which users exist");
    assert_eq!(client.send(Method::GET, "/me", None).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(client.send(Method::POST, "/login", Some(ok)).await.0, StatusCode::OK);
}

pub async fn repeated_failures_lock_the_account(server: &Server) {
    let victim = server.user("victim").await;
    let attacker = server.client();
    let wrong = json!({ "user_name": victim.name, "password": "guess" });
    let threshold = server.config.lockout_threshold();
    for attempt in 1..threshold {
        let (status, body) = attacker.send(Method::POST, "/login", Some(wrong.clone())).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::UNAUTHORIZED, "invalid_credentials"),
            "attempt {attempt}: {body}"
        );
    }
    let response = attacker
        .request(Method::POST, "/login")
        .json(&wrong)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        StatusCode::LOCKED,
        "the {threshold}th failure locks the account"
    );
    let retry_after: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(
        (1..=300).contains(&retry_after),
        "locked for at most the configured 5 minutes: {retry_after}"
    );
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(code(&body), "locked_out", "{body}");

    // Now even the right password is refused, from any client, until the lockout ends.
    let fresh = server.client();
    let (status, body) = fresh.send(Method::POST, "/login", Some(victim.credentials())).await;
    assert_eq!((status, code(&body)), (StatusCode::LOCKED, "locked_out"), "{body}");
    assert_eq!(fresh.send(Method::GET, "/me", None).await.0, StatusCode::UNAUTHORIZED);

    // A success before the threshold resets the count.
    let other = server.user("other").await;
    let wrong = json!({ "user_name": other.name, "password": "guess" });
    for _ in 1..threshold {
        assert_eq!(
            attacker.send(Method::POST, "/login", Some(wrong.clone())).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    other.login().await;
    for _ in 1..threshold {
        assert_eq!(
            attacker.send(Method::POST, "/login", Some(wrong.clone())).await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    other.login().await;
}

pub async fn a_lockout_ends_when_its_time_is_up(server: &Server) {
    let lockout = Lockout::new(2, Duration::from_secs(1)).unwrap();
    let short = server.another_instance(|c| c.with_lockout(lockout)).await;
    let user = short.user("judy").await;
    let client = short.client();
    let wrong = json!({ "user_name": user.name, "password": "guess" });
    assert_eq!(
        client.send(Method::POST, "/login", Some(wrong.clone())).await.0,
        StatusCode::UNAUTHORIZED
    );
    let (status, body) = client.send(Method::POST, "/login", Some(wrong)).await;
    assert_eq!((status, code(&body)), (StatusCode::LOCKED, "locked_out"), "{body}");
    let (status, _) = client.send(Method::POST, "/login", Some(user.credentials())).await;
    assert_eq!(status, StatusCode::LOCKED);

    tokio::time::sleep(Duration::from_millis(1100)).await;
    let (status, body) = client.send(Method::POST, "/login", Some(user.credentials())).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

pub async fn logout_deletes_the_session_on_the_server(server: &Server) {
    let user = server.user("frank").await;
    let cookie = user.client.cookie();
    assert!(!cookie.is_empty());
    assert_eq!(user.send(Method::GET, "/me", None).await.0, StatusCode::OK);

    let (status, _) = user.send(Method::POST, "/logout", None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(user.send(Method::GET, "/me", None).await.0, StatusCode::UNAUTHORIZED);

    // Replaying the old cookie from elsewhere finds no session: it was deleted, not just forgotten.
    let replay = reqwest::Client::new();
    let response = replay
        .get(format!("{}/notes", server.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    // Logging out without a session is harmless; logging in again works.
    assert_eq!(user.send(Method::POST, "/logout", None).await.0, StatusCode::NO_CONTENT);
    user.login().await;
    assert_eq!(user.send(Method::GET, "/me", None).await.0, StatusCode::OK);
}

pub async fn a_password_change_signs_out_every_other_session(server: &Server) {
    let mut user = server.user("grace").await;
    let laptop = server.client();
    assert_eq!(
        laptop.send(Method::POST, "/login", Some(user.credentials())).await.0,
        StatusCode::OK
    );
    assert_eq!(laptop.send(Method::GET, "/notes", None).await.0, StatusCode::OK);

    // The current password is needed.
    let (status, body) = user
        .send(
            Method::PUT,
            "/me/password",
            Some(json!({ "current_password": "wrong", "new_password": "a new long password" })),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "invalid_credentials"),
        "{body}"
    );
    let (status, body) = user
        .send(
            Method::PUT,
            "/me/password",
            Some(json!({ "current_password": user.password, "new_password": "short" })),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "weak_password"),
        "{body}"
    );
    assert_eq!(
        laptop.send(Method::GET, "/notes", None).await.0,
        StatusCode::OK,
        "a refused change signs nobody out"
    );

    let new_password = "grace's new long password";
    let (status, body) = user
        .send(
            Method::PUT,
            "/me/password",
            Some(json!({ "current_password": user.password, "new_password": new_password })),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");

    // The other session is over at once; the one that changed it goes on.
    let (status, body) = laptop.send(Method::GET, "/notes", None).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNAUTHORIZED, "unauthenticated"),
        "{body}"
    );
    assert_eq!(user.send(Method::GET, "/me", None).await.0, StatusCode::OK);

    // Only the new password signs in.
    let (status, _) = laptop.send(Method::POST, "/login", Some(user.credentials())).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    user.password = new_password.to_owned();
    assert_eq!(
        laptop.send(Method::POST, "/login", Some(user.credentials())).await.0,
        StatusCode::OK
    );
}

pub async fn only_admins_grant_roles(server: &Server) {
    let user = server.user("heidi").await;
    let path = format!("/users/{}/roles/publisher", user.name);
    let (status, body) = user.send(Method::PUT, &path, None).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"), "{body}");
    let (status, _) = server.client().send(Method::PUT, &path, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let admin = server.admin().await;
    let (status, body) = admin
        .send(Method::PUT, "/users/nobody-at-all/roles/publisher", None)
        .await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "{body}");
    let (status, body) = admin
        .send(Method::PUT, &format!("/users/{}/roles/no-such-role", user.name), None)
        .await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "{body}");
    assert!(body["message"].as_str().unwrap().contains("no-such-role"), "{body}");
    let (status, body) = admin.send(Method::PUT, &path, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (_, me) = user.send(Method::GET, "/me", None).await;
    assert_eq!(me["roles"], json!(["publisher"]), "{me}");
}

pub async fn sessions_live_in_the_table_for_every_instance(server: &Server) {
    let user = server.user("ivan").await;
    user.create_note("n1", "from instance one").await;

    // A second instance over the same tables: its start-up finds the roles
    // and the admin in place, and it serves the session the first one opened.
    let second = server.another_instance(|c| c.with_secure_cookies(true)).await;
    let response = reqwest::Client::new()
        .get(format!("{}/notes/n1", second.base))
        .header("cookie", user.client.cookie())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let admin = second.admin().await;
    assert_eq!(admin.send(Method::GET, "/me", None).await.1["roles"], json!(["admin"]));

    // Its cookies are `Secure` and `HttpOnly`: sent over HTTPS only, out of scripts' reach.
    let response = reqwest::Client::new()
        .post(format!("{}/login", second.base))
        .json(&user.credentials())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let cookie = response.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(cookie.contains("Secure") && cookie.contains("HttpOnly"), "{cookie}");

    // A logout on one instance ends the session on the other.
    let (status, _) = reqwest::Client::new()
        .post(format!("{}/logout", second.base))
        .header("cookie", user.client.cookie())
        .send()
        .await
        .map(|r| (r.status(), ()))
        .unwrap();
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(user.send(Method::GET, "/me", None).await.0, StatusCode::UNAUTHORIZED);
}
