//! Users, roles, claims, external logins and tokens in tables, with
//! axum-login's `AuthnBackend` and `AuthzBackend` over them (feature `axum-login`).
//!
//! [`Identity`] implements axum-login's
//! [`AuthnBackend`](axum_login::AuthnBackend) and
//! [`AuthzBackend`](axum_login::AuthzBackend).
//!
//! [`Identity`] is the whole store: sign-up ([`Identity::register`]),
//! sign-in with lockout ([`Identity::sign_in`], or axum-login's
//! `AuthSession::authenticate`), password changes that end every older
//! session, roles whose permissions their members have, claims, external
//! logins that are created once and never taken over, and tokens. It runs on
//! every backend, so a test of the whole stack needs nothing but
//! [`Tables::memory`](crate::Tables::memory).
//!
//! ```
//! use unified_tables::web::identity::{Credentials, Identity, NewUser, SignIn};
//! use unified_tables::Tables;
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let identity = Identity::new(&Tables::memory());
//! let alice = identity
//!     .register(NewUser::new("Alice").email("alice@example.com").password("correct horse battery"))
//!     .await?;
//!
//! let signed_in = identity.sign_in(&Credentials::new("alice", "correct horse battery")).await?;
//! assert!(matches!(signed_in, SignIn::Succeeded(ref u) if u.id() == alice.id()));
//! assert_eq!(identity.sign_in(&Credentials::new("alice", "wrong")).await?, SignIn::Failed);
//!
//! identity.create_role("admin").await?;
//! identity.add_role_claim("admin", &unified_tables::web::identity::Claim::permission("users.delete")).await?;
//! identity.add_to_role(alice.id(), "admin").await?;
//! assert!(identity.permissions(alice.id()).await?.contains("users.delete"));
//! # Ok::<(), unified_tables::web::identity::IdentityError>(())
//! # }).unwrap();
//! ```
//!
//! ## Wiring it into axum
//!
//! `Identity` is axum-login's backend: give it to `AuthManagerLayerBuilder`
//! with a session layer, and `AuthSession<Identity>` signs users in and out.
//! `permission_required!` checks the permissions the user's roles grant.
//!
//! ```rust
//! use axum::{http::StatusCode, routing::{get, post}, Form, Router};
//! use axum_login::{permission_required, AuthManagerLayerBuilder, AuthSession};
//! use tower_sessions::{SessionManagerLayer, SessionStore};
//! use unified_tables::web::identity::{Credentials, Identity, IdentityError, NewUser};
//!
//! type Auth = AuthSession<Identity>;
//!
//! async fn sign_up(identity: axum::extract::State<Identity>, Form(c): Form<Credentials>) -> StatusCode {
//!     match identity.register(NewUser::new(c.user_name).password(c.password)).await {
//!         Ok(_) => StatusCode::CREATED,
//!         Err(IdentityError::DuplicateUserName | IdentityError::DuplicateEmail) => StatusCode::CONFLICT,
//!         Err(IdentityError::Invalid { .. }) => StatusCode::BAD_REQUEST,
//!         Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
//!     }
//! }
//!
//! async fn login(mut auth: Auth, Form(creds): Form<Credentials>) -> StatusCode {
//!     match auth.authenticate(creds).await {
//!         Ok(Some(user)) => match auth.login(&user).await {
//!             Ok(()) => StatusCode::OK,
//!             Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
//!         },
//!         Ok(None) => StatusCode::UNAUTHORIZED,                 // wrong name or password: counted
//!         Err(axum_login::Error::Backend(IdentityError::LockedOut { .. })) => StatusCode::TOO_MANY_REQUESTS,
//!         Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
//!     }
//! }
//!
//! async fn logout(mut auth: Auth) -> StatusCode {
//!     match auth.logout().await {
//!         Ok(_) => StatusCode::NO_CONTENT,
//!         Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
//!     }
//! }
//!
//! /// The app over any session store (in production, the table-backed one).
//! fn app(identity: Identity, sessions: impl SessionStore + Clone) -> Router {
//!     let auth = AuthManagerLayerBuilder::new(identity.clone(), SessionManagerLayer::new(sessions)).build();
//!     Router::new()
//!         .route("/admin", get(|| async { "secrets" }))
//!         .route_layer(permission_required!(Identity, "admin.read"))  // a role's permission claim
//!         .route("/signup", post(sign_up))
//!         .route("/login", post(login))
//!         .route("/logout", post(logout))
//!         .with_state(identity)
//!         .layer(auth)
//! }
//! ```
//!
//! ## How rows are keyed
//!
//! Keys never carry user text. A user row's PartitionKey is the SHA-256 hex
//! of the normalized (upper-cased) user name and its RowKey is `user`, so the
//! row is its own user-name index: two registrations of one name meet on one
//! key, and the service lets exactly one insert through. A user's id is that
//! hash and a GUID drawn at registration (`{hash}:{guid}`); claims, tokens
//! and role links are partitions named by the id, so rows left behind by a
//! deleted user never attach to a later user of the same name. Role names,
//! claims (type and value), login providers and keys, and token names are
//! hashed the same way (the email index's keys hold the normalized address
//! in an escaped text form, which takes any text as well), so `/`, `\`, `#`, `?`, quotes, control
//! characters and any length of text are all valid input. User names, emails,
//! role names and providers are refused when empty, over 256 characters or
//! holding control characters. The layout is this crate's own; the .NET
//! library's identity tables use other keys and are not shared.
//!
//! A user name cannot change: it decides where the user row lives.
//!
//! ## Unique email addresses
//!
//! An entity-group transaction covers one partition, and the user's
//! partition is its name's, so an email address cannot be indexed in the
//! same transaction. The user row's normalized email is a global unique
//! secondary index instead (`#[unique(global, protocol = "reserve")]`, see
//! [`guide::secondary_indexes`](crate::guide::secondary_indexes)): its row
//! lives in the partition of the address, in the users table, and the store
//! keeps it with the reservation protocol:
//!
//! 1. *Reserve*: create the address's index row (owner, the time, not
//!    confirmed). If one exists and is live, the address is taken
//!    ([`IdentityError::DuplicateEmail`]); if it is not live, take it over
//!    by a replace conditional on the version read, so of racing takers one wins.
//! 2. *Write the user* holding the address, only while the reservation is
//!    younger than half of [`IdentityOptions::reservation_timeout`]
//!    (otherwise [`IdentityError::Contended`]).
//! 3. *Confirm* the reservation, conditional on the version of step 1. If it
//!    moved, another writer took the address over: the user row of step 2 is
//!    written back as it was (a new user deleted again) and the call fails
//!    with `DuplicateEmail`.
//!
//! A reservation is live while its owner's user row holds the address, or,
//! when not yet confirmed, for the reservation timeout after it was made.
//! What a crash between the steps leaves:
//!
//! - after step 1: the address is blocked for the timeout (two minutes by
//!   default), then free;
//! - after step 2: the user exists and holds the address, which is right;
//! - a deleted user, a removed address or an address changed to another
//!   frees its row at once (it is not live), and the store's index applier
//!   removes it.
//!
//! Look-ups by address read the index row, then its owner, and answer the
//! owner only when its row holds the address, so a stale row never names
//! the wrong user. What the protocol assumes: clocks of the hosts agree
//! within a fraction of the timeout, and a write the service accepts takes
//! effect within half the timeout of being sent.
#![doc = include_str!("../../../docs/identity.md")]

mod backend;
mod claims;
mod logins;
mod options;
mod password;
mod roles;
mod row_keys;
mod rows;
mod sign_in;
mod tokens;
mod types;
mod users;

use std::fmt;
use std::sync::Arc;

pub use options::{IdentityOptions, IdentityTables, Lockout};
pub use types::{Claim, Credentials, ExternalLogin, NewUser, Role, SignIn, User, UserId};
pub use types::{IdentityError, IdentityResult};

use crate::{MutateAttempts, Store, StoreOptions, Tables};
use rows::{ClaimRow, LoginRow, RoleRow, TokenRow, UserRoleRow, UserRow};

/// The identity store: users, roles, claims, logins and tokens over one
/// [`Tables`] handle, and axum-login's backend. Cheap to clone (one `Arc`).
///
/// Every row that decides who a user is or what they may do right now —
/// users (password hash, security stamp, lockout), the email index,
/// user–role links, user claims, logins and tokens — is read from the table
/// every time, whatever read cache the handle carries: a password change, a
/// lockout or a revoked role takes effect at once on every host. Roles and
/// their claims (permissions) are read through the handle's cache, if it has
/// one: changing what a role grants takes effect on other hosts once their
/// cache entries expire (bound it with `CachePolicy::Absolute`).
///
/// ```
/// use std::time::Duration;
/// use unified_tables::web::identity::{Identity, IdentityOptions, Lockout};
/// use unified_tables::Tables;
///
/// let db = Tables::memory();
/// let identity = Identity::with_options(
///     &db,
///     IdentityOptions::new().lockout(Lockout::new(3, Duration::from_secs(600))?),
/// );
/// # let _ = identity;
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Clone)]
pub struct Identity {
    inner: Arc<Inner>,
}

struct Inner {
    options: IdentityOptions,
    users: Store<UserRow>,
    roles: Store<RoleRow>,
    user_roles: Store<UserRoleRow>,
    role_claims: Store<ClaimRow>,
    user_claims: Store<ClaimRow>,
    logins: Store<LoginRow>,
    tokens: Store<TokenRow>,
}

/// Compare-and-swap attempts of the identity stores: enough for as many
/// concurrent failed logins of one user as a service meets.
const ATTEMPTS: u32 = 64;

impl Identity {
    /// The identity store over `tables`, with the default options
    /// ([`IdentityOptions::new`]): tables `IdentityUsers`, `IdentityRoles`, …,
    /// created on first use.
    pub fn new(tables: &Tables) -> Identity {
        Identity::with_options(tables, IdentityOptions::new())
    }

    /// The identity store over `tables` with these options.
    pub fn with_options(tables: &Tables, options: IdentityOptions) -> Identity {
        let store_options = StoreOptions {
            mutate_attempts: MutateAttempts::new(ATTEMPTS).expect("a valid attempt count"),
            unique_reservation_timeout: options.reservation_timeout,
            ..StoreOptions::default()
        };
        let fresh = tables.clone().without_cache().with_options(store_options.clone());
        let cached = tables.clone().with_options(store_options);
        let names = options.tables();
        Identity {
            inner: Arc::new(Inner {
                users: fresh.store_in(names.users),
                roles: cached.store_in(names.roles),
                user_roles: fresh.store_in(names.user_roles),
                role_claims: cached.store_in(names.role_claims),
                user_claims: fresh.store_in(names.user_claims),
                logins: fresh.store_in(names.logins),
                tokens: fresh.store_in(names.tokens),
                options,
            }),
        }
    }

    /// The options this store was made with.
    pub fn options(&self) -> &IdentityOptions {
        &self.inner.options
    }
}

impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}
