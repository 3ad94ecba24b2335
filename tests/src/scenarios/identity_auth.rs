//! Identity as axum-login's backend: sign-in and lockout, password changes
//! ending older sessions, roles and permissions, external logins never taken
//! over, and which rows the read cache may serve.

use std::time::Duration;

use axum_login::{AuthUser, AuthnBackend, AuthzBackend};
use unified_tables::web::identity::{Claim, Credentials, ExternalLogin, IdentityError, Lockout, NewUser, SignIn};
use unified_tables::{DateTime, ReadCache};

use super::identity::{identity_options, identity_over};
use crate::Env;

pub async fn identity_sign_in_counts_failures_and_locks_out(env: &Env) {
    let lockout = Lockout::new(3, Duration::from_secs(2)).unwrap();
    let identity = identity_over(&env.tables, identity_options().lockout(lockout));
    let user = identity.register(NewUser::new("Mia").password("right")).await.unwrap();
    let right = Credentials::new("mia", "right");
    let wrong = Credentials::new("MIA", "wrong");

    assert_eq!(identity.sign_in(&wrong).await.unwrap(), SignIn::Failed);
    assert_eq!(identity.sign_in(&wrong).await.unwrap(), SignIn::Failed);
    assert_eq!(
        identity.user(user.id()).await.unwrap().unwrap().access_failed_count(),
        2
    );
    // Through axum-login: a success is Some(user) and sets the count back to zero.
    let signed = identity
        .authenticate(right.clone())
        .await
        .unwrap()
        .expect("the right password");
    assert_eq!(signed.id(), user.id());
    assert_eq!(signed.access_failed_count(), 0);
    assert_eq!(
        identity.authenticate(wrong.clone()).await.unwrap(),
        None,
        "a wrong password is None"
    );
    assert_eq!(
        identity.authenticate(Credentials::new("nobody", "x")).await.unwrap(),
        None
    );

    // The third failure in a row locks the user out: even the right password is refused.
    assert_eq!(identity.sign_in(&wrong).await.unwrap(), SignIn::Failed);
    assert_eq!(identity.sign_in(&wrong).await.unwrap(), SignIn::Failed);
    let locked = identity.user(user.id()).await.unwrap().unwrap();
    let until = locked.lockout_end().expect("locked out");
    assert!(locked.is_locked_out(DateTime::now()));
    assert_eq!(locked.access_failed_count(), 0);
    assert_eq!(identity.sign_in(&right).await.unwrap(), SignIn::LockedOut { until });
    let via = identity.authenticate(right.clone()).await;
    assert!(
        matches!(via, Err(IdentityError::LockedOut { until: u }) if u == until),
        "{via:?}"
    );
    // Attempts during a lockout are not counted.
    assert_eq!(identity.sign_in(&wrong).await.unwrap(), SignIn::LockedOut { until });
    assert_eq!(
        identity.user(user.id()).await.unwrap().unwrap().access_failed_count(),
        0
    );

    // The lockout ends by itself ...
    tokio::time::sleep(Duration::from_millis(2300)).await;
    assert!(matches!(identity.sign_in(&right).await.unwrap(), SignIn::Succeeded(_)));
    // ... or when an administrator ends it.
    for _ in 0..3 {
        identity.sign_in(&wrong).await.unwrap();
    }
    assert!(matches!(
        identity.sign_in(&right).await.unwrap(),
        SignIn::LockedOut { .. }
    ));
    let unlocked = identity.set_lockout_end(user.id(), None).await.unwrap();
    assert_eq!(unlocked.lockout_end(), None);
    assert!(matches!(identity.sign_in(&right).await.unwrap(), SignIn::Succeeded(_)));

    // Bad lockout options are refused when built.
    assert!(Lockout::new(0, Duration::from_secs(60)).is_err());
    assert!(Lockout::new(1001, Duration::from_secs(60)).is_err());
    assert!(Lockout::new(5, Duration::from_millis(10)).is_err());
    assert!(Lockout::new(5, Duration::from_secs(400 * 24 * 3600)).is_err());
}

pub async fn identity_a_password_change_ends_older_sessions(env: &Env) {
    let identity = identity_over(&env.tables, identity_options());
    let user = identity.register(NewUser::new("nia").password("old")).await.unwrap();
    let session_hash = user.session_auth_hash().to_vec();
    let reread = identity.get_user(user.id()).await.unwrap().unwrap();
    assert_eq!(
        reread.session_auth_hash(),
        &session_hash[..],
        "unchanged: the session stays"
    );

    let wrong = identity.change_password(user.id(), "not it", "new").await;
    assert!(matches!(wrong, Err(IdentityError::WrongPassword)), "{wrong:?}");
    assert_eq!(
        identity.get_user(user.id()).await.unwrap().unwrap().session_auth_hash(),
        &session_hash[..]
    );

    let changed = identity.change_password(user.id(), "old", "new").await.unwrap();
    let now = identity.get_user(user.id()).await.unwrap().unwrap();
    assert_ne!(
        now.session_auth_hash(),
        &session_hash[..],
        "axum-login drops the older session"
    );
    assert_eq!(now.session_auth_hash(), changed.session_auth_hash());
    assert_eq!(
        identity.sign_in(&Credentials::new("nia", "old")).await.unwrap(),
        SignIn::Failed
    );
    assert!(matches!(
        identity.sign_in(&Credentials::new("nia", "new")).await.unwrap(),
        SignIn::Succeeded(_)
    ));
    assert!(identity.check_password(&now, "new").await.unwrap());

    let reset = identity.set_password(user.id(), "reset").await.unwrap();
    assert_ne!(reset.session_auth_hash(), now.session_auth_hash());
    let rotated = identity.rotate_security_stamp(user.id()).await.unwrap();
    assert_ne!(
        rotated.session_auth_hash(),
        reset.session_auth_hash(),
        "sign out everywhere"
    );
    assert!(matches!(
        identity.sign_in(&Credentials::new("nia", "reset")).await.unwrap(),
        SignIn::Succeeded(_)
    ));

    // A password changed under a change in flight: the stale change stores nothing.
    let stale = identity.user(user.id()).await.unwrap().unwrap();
    identity.set_password(user.id(), "concurrent").await.unwrap();
    let late = identity.change_password(stale.id(), "reset", "mine").await;
    assert!(matches!(late, Err(IdentityError::WrongPassword)), "{late:?}");
    assert!(matches!(
        identity.sign_in(&Credentials::new("nia", "concurrent")).await.unwrap(),
        SignIn::Succeeded(_)
    ));
}

pub async fn identity_roles_grant_permissions_and_missing_roles_stay_quiet(env: &Env) {
    let identity = identity_over(&env.tables, identity_options());
    let ola = identity.register(NewUser::new("ola").password("pw")).await.unwrap();
    let pat = identity.register(NewUser::new("pat").password("pw")).await.unwrap();

    let admin = identity.create_role("Admin").await.unwrap();
    assert_eq!(admin.normalized_name(), "ADMIN");
    let dup = identity.create_role("admin").await;
    assert!(matches!(dup, Err(IdentityError::DuplicateRole)), "{dup:?}");
    identity.create_role("editor").await.unwrap();
    let mut names: Vec<_> = identity
        .roles()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["Admin", "editor"]);

    // A missing role: adding is an error, the other calls stay quiet.
    let missing = identity.add_to_role(ola.id(), "ghost").await;
    assert!(
        matches!(missing, Err(IdentityError::RoleNotFound(ref r)) if r == "ghost"),
        "{missing:?}"
    );
    assert!(!identity.is_in_role(ola.id(), "ghost").await.unwrap());
    identity.remove_from_role(ola.id(), "ghost").await.unwrap();
    assert!(identity.users_in_role("ghost").await.unwrap().is_empty());
    assert!(identity.role_claims("ghost").await.unwrap().is_empty());
    assert!(identity.role("ghost").await.unwrap().is_none());
    let grant = identity.add_role_claim("ghost", &Claim::permission("x")).await;
    assert!(matches!(grant, Err(IdentityError::RoleNotFound(_))), "{grant:?}");

    identity.add_to_role(ola.id(), "admin").await.unwrap();
    identity.add_to_role(ola.id(), "ADMIN").await.unwrap(); // again: no change
    identity.add_to_role(ola.id(), "editor").await.unwrap();
    identity.add_to_role(pat.id(), "editor").await.unwrap();
    identity
        .add_role_claim("admin", &Claim::permission("users.delete"))
        .await
        .unwrap();
    identity
        .add_role_claim("editor", &Claim::permission("posts.edit"))
        .await
        .unwrap();
    identity
        .add_role_claim("editor", &Claim::new("colour", "blue"))
        .await
        .unwrap();

    assert!(identity.is_in_role(ola.id(), "Admin").await.unwrap());
    assert!(!identity.is_in_role(pat.id(), "admin").await.unwrap());
    let mut roles = identity.roles_of(ola.id()).await.unwrap();
    roles.sort();
    assert_eq!(roles, ["Admin", "editor"]);
    let mut editors: Vec<_> = identity
        .users_in_role("editor")
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.user_name().to_owned())
        .collect();
    editors.sort();
    assert_eq!(editors, ["ola", "pat"]);

    // Permissions through roles, as axum-login asks for them (a claim of another type is none).
    let all = identity.get_all_permissions(&ola).await.unwrap();
    assert_eq!(
        all,
        ["users.delete".to_owned(), "posts.edit".to_owned()]
            .into_iter()
            .collect()
    );
    assert!(identity.has_perm(&pat, "posts.edit".into()).await.unwrap());
    assert!(!identity.has_perm(&pat, "users.delete".into()).await.unwrap());
    assert!(!identity.has_perm(&pat, "blue".into()).await.unwrap());

    // Revoking: a removed membership or claim takes effect at once.
    identity.remove_from_role(pat.id(), "editor").await.unwrap();
    assert!(!identity.has_perm(&pat, "posts.edit".into()).await.unwrap());
    assert!(identity
        .remove_role_claim("admin", &Claim::permission("users.delete"))
        .await
        .unwrap());
    assert!(!identity.has_perm(&ola, "users.delete".into()).await.unwrap());

    // A deleted role, created again, inherits neither members nor claims.
    identity
        .add_role_claim("admin", &Claim::permission("users.delete"))
        .await
        .unwrap();
    assert!(identity.delete_role("admin").await.unwrap());
    assert!(!identity.delete_role("admin").await.unwrap());
    assert!(!identity.is_in_role(ola.id(), "admin").await.unwrap());
    identity.create_role("admin").await.unwrap();
    assert!(!identity.is_in_role(ola.id(), "admin").await.unwrap());
    assert!(identity.role_claims("admin").await.unwrap().is_empty());
    assert!(!identity.has_perm(&ola, "users.delete".into()).await.unwrap());
}

pub async fn identity_external_logins_are_created_never_taken_over(env: &Env) {
    let identity = identity_over(&env.tables, identity_options());
    let quinn = identity.register(NewUser::new("quinn")).await.unwrap();
    let rob = identity.register(NewUser::new("rob")).await.unwrap();
    let github = ExternalLogin::new("github", "4242").display_name("GitHub");

    identity.add_login(quinn.id(), &github).await.unwrap();
    let takeover = identity.add_login(rob.id(), &github).await;
    assert!(
        matches!(takeover, Err(IdentityError::LoginTaken { ref provider }) if provider == "github"),
        "{takeover:?}"
    );
    let twice = identity.add_login(quinn.id(), &github).await;
    assert!(
        matches!(twice, Err(IdentityError::LoginTaken { .. })),
        "created once: {twice:?}"
    );
    assert_eq!(
        identity.find_by_login("github", "4242").await.unwrap().unwrap().id(),
        quinn.id()
    );
    assert_eq!(identity.logins(quinn.id()).await.unwrap(), vec![github.clone()]);
    assert!(identity.logins(rob.id()).await.unwrap().is_empty());
    assert_eq!(identity.find_by_login("github", "4243").await.unwrap(), None);
    assert_eq!(identity.find_by_login("gitlab", "4242").await.unwrap(), None);

    // Another user cannot remove it; its owner can, and then it is free.
    assert!(!identity.remove_login(rob.id(), "github", "4242").await.unwrap());
    assert_eq!(
        identity.find_by_login("github", "4242").await.unwrap().unwrap().id(),
        quinn.id()
    );
    assert!(identity.remove_login(quinn.id(), "github", "4242").await.unwrap());
    assert_eq!(identity.find_by_login("github", "4242").await.unwrap(), None);
    identity.add_login(rob.id(), &github).await.unwrap();
    assert_eq!(
        identity.find_by_login("github", "4242").await.unwrap().unwrap().id(),
        rob.id()
    );

    let gone = identity.delete_user(quinn.id()).await.unwrap();
    assert!(gone);
    let orphan = identity.add_login(quinn.id(), &ExternalLogin::new("google", "q")).await;
    assert!(matches!(orphan, Err(IdentityError::UserNotFound(_))), "{orphan:?}");
}

pub async fn identity_user_rows_are_never_served_from_the_cache(env: &Env) {
    // Host A reads through a cache; host B writes past it (another process).
    let options = identity_options().lockout(Lockout::new(2, Duration::from_secs(60)).unwrap());
    let host_a = identity_over(&env.cached(ReadCache::default()), options.clone());
    let host_b = identity_over(&env.tables, options);
    let user = host_a
        .register(NewUser::new("sam").email("sam@example.com").password("pw"))
        .await
        .unwrap();
    host_a.create_role("viewer").await.unwrap();
    host_a.add_to_role(user.id(), "viewer").await.unwrap();
    host_a
        .add_role_claim("viewer", &Claim::permission("read"))
        .await
        .unwrap();
    host_a
        .add_login(user.id(), &ExternalLogin::new("github", "sam"))
        .await
        .unwrap();
    host_a.set_token(user.id(), "app", "refresh", "t1").await.unwrap();
    let seen = host_a.get_user(user.id()).await.unwrap().unwrap();

    // What B changes, A sees at once: the stamp, the lockout, the password, memberships, logins, tokens.
    host_b.rotate_security_stamp(user.id()).await.unwrap();
    assert_ne!(
        host_a.get_user(user.id()).await.unwrap().unwrap().session_auth_hash(),
        seen.session_auth_hash()
    );
    for _ in 0..2 {
        host_b.sign_in(&Credentials::new("sam", "bad")).await.unwrap();
    }
    assert!(matches!(
        host_a.sign_in(&Credentials::new("sam", "pw")).await.unwrap(),
        SignIn::LockedOut { .. }
    ));
    host_b.set_lockout_end(user.id(), None).await.unwrap();
    host_b.set_password(user.id(), "new").await.unwrap();
    assert_eq!(
        host_a.sign_in(&Credentials::new("sam", "pw")).await.unwrap(),
        SignIn::Failed
    );
    assert!(matches!(
        host_a.sign_in(&Credentials::new("sam", "new")).await.unwrap(),
        SignIn::Succeeded(_)
    ));
    host_b.remove_from_role(user.id(), "viewer").await.unwrap();
    assert!(!host_a.is_in_role(user.id(), "viewer").await.unwrap());
    assert!(!host_a.has_perm(&seen, "read".into()).await.unwrap());
    host_b.remove_login(user.id(), "github", "sam").await.unwrap();
    assert_eq!(host_a.find_by_login("github", "sam").await.unwrap(), None);
    host_b.set_token(user.id(), "app", "refresh", "t2").await.unwrap();
    assert_eq!(
        host_a.token(user.id(), "app", "refresh").await.unwrap().as_deref(),
        Some("t2")
    );
    host_b.set_email(user.id(), Some("sam@new.example.com")).await.unwrap();
    assert_eq!(host_a.find_by_email("sam@example.com").await.unwrap(), None);

    // Every user read goes to the table; the role list is served from the cache once read.
    env.reset_counts();
    host_a.user(user.id()).await.unwrap();
    host_a.user(user.id()).await.unwrap();
    assert_eq!(env.counts().gets, 2, "user rows are read from the table every time");
    host_a.roles().await.unwrap();
    env.reset_counts();
    host_a.roles().await.unwrap();
    host_a.role("viewer").await.unwrap();
    assert_eq!(env.counts().entity_requests(), 0, "roles are served from the cache");
}
