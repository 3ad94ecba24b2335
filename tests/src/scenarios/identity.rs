//! Identity: registration, uniqueness of user names and emails, keys for
//! hostile user text, claims, tokens, the two-factor flag and deletion.

use unified_tables::web::identity::{
    Claim, Credentials, ExternalLogin, Identity, IdentityError, IdentityOptions, NewUser, SignIn, UserId,
};
use unified_tables::Tables;

use crate::{unique_table, Env};

/// Options with tables of this scenario's own.
pub fn identity_options() -> IdentityOptions {
    IdentityOptions::new()
        .table_prefix(unique_table("id"))
        .expect("a valid table prefix")
}

/// An identity store over `tables` with tables of its own.
pub fn identity_over(tables: &Tables, options: IdentityOptions) -> Identity {
    Identity::with_options(tables, options)
}

fn identity(env: &Env) -> Identity {
    identity_over(&env.tables, identity_options())
}

fn invalid(result: Result<impl std::fmt::Debug, IdentityError>, field: &str) {
    match result {
        Err(IdentityError::Invalid { field: f, .. }) => assert_eq!(f, field),
        other => panic!("expected Invalid({field}), got {other:?}"),
    }
}

pub async fn identity_registration_normalizes_names_and_finds_users(env: &Env) {
    let identity = identity(env);
    let alice = identity
        .register(
            NewUser::new("Alice")
                .email("Alice@Example.COM")
                .password("correct horse"),
        )
        .await
        .unwrap();
    assert_eq!(alice.user_name(), "Alice");
    assert_eq!(alice.normalized_user_name(), "ALICE");
    assert_eq!(alice.email(), Some("Alice@Example.COM"));
    assert_eq!(alice.normalized_email(), Some("ALICE@EXAMPLE.COM"));
    assert!(alice.has_password() && !alice.email_confirmed() && !alice.two_factor_enabled());
    assert_eq!(alice.access_failed_count(), 0);
    assert_eq!(alice.lockout_end(), None);

    let id: UserId = alice.id().to_string().parse().unwrap();
    assert_eq!(&id, alice.id(), "an id reads back from its text");
    let json = serde_json::to_string(alice.id()).unwrap();
    assert_eq!(
        serde_json::from_str::<UserId>(&json).unwrap(),
        id,
        "and from its serialized form"
    );

    assert_eq!(identity.user(&id).await.unwrap().as_ref(), Some(&alice));
    assert_eq!(identity.find_by_name("aLiCe").await.unwrap().as_ref(), Some(&alice));
    assert_eq!(
        identity.find_by_email("alice@example.com").await.unwrap().as_ref(),
        Some(&alice)
    );
    assert_eq!(identity.find_by_name("bob").await.unwrap(), None);
    assert_eq!(identity.find_by_email("bob@example.com").await.unwrap(), None);
    let confirmed = identity.confirm_email(&id).await.unwrap();
    assert!(confirmed.email_confirmed());

    // Refused input stores nothing.
    invalid(identity.register(NewUser::new("  ").password("pw")).await, "user_name");
    invalid(
        identity.register(NewUser::new("a\u{7}b").password("pw")).await,
        "user_name",
    );
    invalid(
        identity.register(NewUser::new("x".repeat(257)).password("pw")).await,
        "user_name",
    );
    invalid(
        identity.register(NewUser::new("carl").email("carl.example.com")).await,
        "email",
    );
    invalid(identity.register(NewUser::new("carl").password("")).await, "password");
    assert_eq!(identity.find_by_name("carl").await.unwrap(), None);
    let carl = identity
        .register(NewUser::new("carl").email("carl@example.com"))
        .await
        .unwrap();
    assert!(!carl.has_password(), "a user without a password (external logins only)");
    assert_eq!(
        identity.sign_in(&Credentials::new("carl", "anything")).await.unwrap(),
        SignIn::Failed
    );
    assert!(identity
        .user(&carl.id().to_string().parse().unwrap())
        .await
        .unwrap()
        .is_some());
}

pub async fn identity_user_names_and_emails_are_unique(env: &Env) {
    let identity = identity(env);
    let a = identity
        .register(NewUser::new("dana").email("dana@example.com").password("pw1"))
        .await
        .unwrap();

    let again = identity
        .register(NewUser::new("DANA").email("other@example.com").password("pw2"))
        .await;
    assert!(matches!(again, Err(IdentityError::DuplicateUserName)), "{again:?}");
    // The refused registration released its email reservation.
    let other = identity
        .register(NewUser::new("olga").email("other@example.com"))
        .await
        .unwrap();

    let same_email = identity
        .register(NewUser::new("eve").email("DANA@example.com").password("pw"))
        .await;
    assert!(
        matches!(same_email, Err(IdentityError::DuplicateEmail)),
        "{same_email:?}"
    );
    assert_eq!(identity.find_by_name("eve").await.unwrap(), None, "no user was made");

    // Changing an email: a taken address is refused, a free one moves and frees the old one.
    let taken = identity.set_email(a.id(), Some("other@example.com")).await;
    assert!(matches!(taken, Err(IdentityError::DuplicateEmail)), "{taken:?}");
    assert_eq!(
        identity.user(a.id()).await.unwrap().unwrap().email(),
        Some("dana@example.com")
    );
    let moved = identity.set_email(a.id(), Some("dana@new.example.com")).await.unwrap();
    assert_eq!(moved.normalized_email(), Some("DANA@NEW.EXAMPLE.COM"));
    assert_ne!(
        moved.security_stamp(),
        a.security_stamp(),
        "an email change draws a new stamp"
    );
    assert_eq!(identity.find_by_email("dana@example.com").await.unwrap(), None);
    assert_eq!(
        identity
            .find_by_email("dana@new.example.com")
            .await
            .unwrap()
            .unwrap()
            .id(),
        a.id()
    );
    let eve = identity
        .register(NewUser::new("eve").email("dana@example.com"))
        .await
        .unwrap();
    assert_eq!(
        identity.find_by_email("dana@example.com").await.unwrap().unwrap().id(),
        eve.id()
    );

    // Removing an email frees it.
    identity.set_email(other.id(), None).await.unwrap();
    assert_eq!(identity.find_by_email("other@example.com").await.unwrap(), None);
    identity
        .register(NewUser::new("oscar").email("other@example.com"))
        .await
        .unwrap();

    // Deleting a user frees the name and the email; the new user has a new id.
    assert!(identity.delete_user(a.id()).await.unwrap());
    assert!(!identity.delete_user(a.id()).await.unwrap());
    assert_eq!(identity.user(a.id()).await.unwrap(), None);
    let b = identity
        .register(NewUser::new("Dana").email("dana@new.example.com").password("pw3"))
        .await
        .unwrap();
    assert_ne!(b.id(), a.id(), "ids are never reused");
    assert_eq!(identity.user(a.id()).await.unwrap(), None, "the old id names no user");
}

pub async fn identity_keys_of_hostile_user_text_are_valid(env: &Env) {
    let identity = identity(env);
    let long = "x".repeat(256);
    let names = [
        "a/b\\c#d?e",
        "' or PartitionKey ne '' or '",
        "Ünïcødé 用户 🦀",
        "trailing%2F..%5C",
        long.as_str(),
    ];
    for (i, name) in names.iter().enumerate() {
        let local: String = name.chars().take(20).collect::<String>().replace(' ', "_");
        let email = format!("{local}#/?\\{i}@exa'mple.com");
        let user = identity
            .register(NewUser::new(*name).email(email.clone()).password("p/#?"))
            .await
            .unwrap_or_else(|e| panic!("{name:?}: {e}"));
        assert_eq!(identity.find_by_name(name).await.unwrap().unwrap().id(), user.id());
        assert_eq!(identity.find_by_email(&email).await.unwrap().unwrap().id(), user.id());
        assert!(matches!(
            identity.sign_in(&Credentials::new(*name, "p/#?")).await.unwrap(),
            SignIn::Succeeded(_)
        ));
        let claim = Claim::new("t/#?\\", format!("v\u{1}\u{7f}{name}"));
        identity.add_claim(user.id(), &claim).await.unwrap();
        assert_eq!(identity.claims(user.id()).await.unwrap(), vec![claim.clone()]);
        let login = ExternalLogin::new("https://idp.example.com/#?", format!("sub/{name}\\?"));
        identity.add_login(user.id(), &login).await.unwrap();
        let found = identity
            .find_by_login(&login.provider, &login.provider_key)
            .await
            .unwrap();
        assert_eq!(found.unwrap().id(), user.id());
        identity.set_token(user.id(), "p/\\", "n#?", name).await.unwrap();
        assert_eq!(
            identity.token(user.id(), "p/\\", "n#?").await.unwrap().as_deref(),
            Some(*name)
        );
        let role = format!("role/{i}#?\\");
        identity.create_role(&role).await.unwrap();
        identity.add_to_role(user.id(), &role).await.unwrap();
        assert!(identity.is_in_role(user.id(), &role).await.unwrap());
    }
}

pub async fn identity_claims_tokens_and_the_two_factor_flag(env: &Env) {
    let identity = identity(env);
    let gus = identity.register(NewUser::new("gus").password("pw")).await.unwrap();
    let ivy = identity.register(NewUser::new("ivy").password("pw")).await.unwrap();
    let office = Claim::new("office", "Kyiv");
    let level = Claim::new("level", "7");
    identity.add_claim(gus.id(), &office).await.unwrap();
    identity.add_claim(gus.id(), &office).await.unwrap(); // again: one claim
    identity.add_claim(gus.id(), &level).await.unwrap();
    identity.add_claim(ivy.id(), &office).await.unwrap();
    let mut claims = identity.claims(gus.id()).await.unwrap();
    claims.sort();
    assert_eq!(claims, vec![level.clone(), office.clone()]);
    let mut holders: Vec<_> = identity
        .users_with_claim(&office)
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.user_name().to_owned())
        .collect();
    holders.sort();
    assert_eq!(holders, ["gus", "ivy"]);
    assert!(identity.remove_claim(gus.id(), &office).await.unwrap());
    assert!(!identity.remove_claim(gus.id(), &office).await.unwrap());
    assert_eq!(identity.claims(gus.id()).await.unwrap(), vec![level]);

    // Tokens: set, replace, read, remove.
    identity.set_token(gus.id(), "app", "refresh", "r1").await.unwrap();
    identity.set_token(gus.id(), "app", "refresh", "r2").await.unwrap();
    identity.set_token(gus.id(), "app", "recovery", "c1;c2").await.unwrap();
    assert_eq!(
        identity.token(gus.id(), "app", "refresh").await.unwrap().as_deref(),
        Some("r2")
    );
    assert_eq!(
        identity.token(ivy.id(), "app", "refresh").await.unwrap(),
        None,
        "tokens are per user"
    );
    assert!(identity.remove_token(gus.id(), "app", "refresh").await.unwrap());
    assert!(!identity.remove_token(gus.id(), "app", "refresh").await.unwrap());
    assert_eq!(identity.token(gus.id(), "app", "refresh").await.unwrap(), None);
    assert_eq!(
        identity.token(gus.id(), "app", "recovery").await.unwrap().as_deref(),
        Some("c1;c2")
    );

    // A missing user: mutations are errors.
    identity.delete_user(ivy.id()).await.unwrap();
    let gone = identity.add_claim(ivy.id(), &office).await;
    assert!(
        matches!(gone, Err(IdentityError::UserNotFound(ref id)) if id == ivy.id()),
        "{gone:?}"
    );
    let gone = identity.set_token(ivy.id(), "app", "x", "y").await;
    assert!(matches!(gone, Err(IdentityError::UserNotFound(_))), "{gone:?}");
    let gone = identity.set_two_factor_enabled(ivy.id(), true).await;
    assert!(matches!(gone, Err(IdentityError::UserNotFound(_))), "{gone:?}");

    // Two-factor: the password alone no longer signs in.
    let on = identity.set_two_factor_enabled(gus.id(), true).await.unwrap();
    assert!(on.two_factor_enabled());
    assert_ne!(
        on.security_stamp(),
        gus.security_stamp(),
        "turning it on ends older sessions"
    );
    let creds = Credentials::new("gus", "pw");
    assert!(matches!(identity.sign_in(&creds).await.unwrap(), SignIn::TwoFactorRequired(ref u) if u.id() == gus.id()));
    let via_backend = axum_login::AuthnBackend::authenticate(&identity, creds.clone()).await;
    assert!(
        matches!(via_backend, Err(IdentityError::TwoFactorRequired { ref user }) if user == gus.id()),
        "{via_backend:?}"
    );
    identity.set_two_factor_enabled(gus.id(), false).await.unwrap();
    assert!(matches!(identity.sign_in(&creds).await.unwrap(), SignIn::Succeeded(_)));
}

pub async fn identity_deleting_a_user_removes_what_was_theirs(env: &Env) {
    let identity = identity(env);
    identity.create_role("staff").await.unwrap();
    let jo = identity
        .register(NewUser::new("jo").email("jo@example.com").password("pw"))
        .await
        .unwrap();
    identity.add_to_role(jo.id(), "staff").await.unwrap();
    identity.add_claim(jo.id(), &Claim::new("k", "v")).await.unwrap();
    identity.set_token(jo.id(), "app", "t", "v").await.unwrap();
    identity
        .add_login(jo.id(), &ExternalLogin::new("github", "jo-1"))
        .await
        .unwrap();

    assert!(identity.delete_user(jo.id()).await.unwrap());
    assert!(identity.users_in_role("staff").await.unwrap().is_empty());
    assert!(identity.claims(jo.id()).await.unwrap().is_empty());
    assert_eq!(identity.token(jo.id(), "app", "t").await.unwrap(), None);
    assert!(identity.roles_of(jo.id()).await.unwrap().is_empty());
    assert!(identity.logins(jo.id()).await.unwrap().is_empty());
    assert_eq!(identity.find_by_login("github", "jo-1").await.unwrap(), None);

    // Name, email and login are free for a new user, who inherits nothing.
    let again = identity
        .register(NewUser::new("jo").email("jo@example.com").password("pw"))
        .await
        .unwrap();
    identity
        .add_login(again.id(), &ExternalLogin::new("github", "jo-1"))
        .await
        .unwrap();
    assert!(!identity.is_in_role(again.id(), "staff").await.unwrap());
    assert!(identity.claims(again.id()).await.unwrap().is_empty());
}
