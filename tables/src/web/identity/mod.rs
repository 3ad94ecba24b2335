//! Users, roles, claims, external logins and tokens in tables, with
//! axum-login's [`AuthnBackend`](axum_login::AuthnBackend) and
//! [`AuthzBackend`](axum_login::AuthzBackend) over them (feature `axum-login`).
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

mod backend;
mod claims;
mod email;
mod error;
mod keys;
mod logins;
mod options;
mod password;
mod roles;
mod rows;
mod sign_in;
mod tokens;
mod types;
mod users;

use std::fmt;
use std::sync::Arc;

pub use error::{IdentityError, IdentityResult};
pub use options::{IdentityOptions, IdentityTables, Lockout};
pub use types::{Claim, Credentials, ExternalLogin, NewUser, Role, SignIn, User, UserId};

use crate::{MutateAttempts, Store, StoreOptions, Tables};
use rows::{ClaimRow, EmailRow, LoginRow, RoleRow, TokenRow, UserRoleRow, UserRow};

/// The identity store: users, roles, claims, logins and tokens over one
/// [`Tables`] handle, and axum-login's backend. Cheap to clone (one `Arc`).
///
/// Every row that decides who a user is or what they may do right now —
/// users (password hash, security stamp, lockout), email reservations,
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
    emails: Store<EmailRow>,
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
            ..StoreOptions::default()
        };
        let fresh = tables.clone().without_cache().with_options(store_options.clone());
        let cached = tables.clone().with_options(store_options);
        let names = options.tables();
        Identity {
            inner: Arc::new(Inner {
                users: fresh.store_in(names.users),
                emails: fresh.store_in(names.emails),
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
