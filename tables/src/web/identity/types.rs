//! The values the identity stores hand out and take in, and what an
//! identity operation can report.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::rows::UserRow;
use crate::{DateTime, Guid};

/// A user's id: stable for the user's life, never reused by another user.
///
/// Written `{name-hash}:{guid}`: the SHA-256 hex of the user name as
/// normalized at registration (the partition of the user's row) and a random
/// GUID drawn at registration, so a user deleted and registered again under
/// the same name gets a new id, and rows left for the old id never attach to
/// the new user. Serialized as that string (it is what axum-login keeps in
/// the session).
///
/// ```
/// use unified_tables::web::identity::UserId;
/// let text = "2bd806c97f0e00af1a1fc3328fa763a9269723c8db8fac4f93af71db186d6e90:6f9619ff-8b86-d011-b42d-00c04fc964ff";
/// let id: UserId = text.parse()?;
/// assert_eq!(id.to_string(), text);
/// assert!("not an id".parse::<UserId>().is_err());
/// # Ok::<(), unified_tables::web::identity::IdentityError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserId {
    pub(super) partition: String,
    pub(super) guid: Guid,
}

impl UserId {
    pub(super) fn new(partition: String, guid: Guid) -> UserId {
        UserId { partition, guid }
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.partition, self.guid)
    }
}

impl fmt::Debug for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UserId({self})")
    }
}

impl FromStr for UserId {
    type Err = IdentityError;

    fn from_str(s: &str) -> Result<UserId, Self::Err> {
        let bad = || {
            invalid(
                "UserId",
                "not a user id: expected 64 lower-case hex digits, `:` and a GUID",
            )
        };
        let (hash, guid) = s.split_once(':').ok_or_else(bad)?;
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(bad());
        }
        let guid: Guid = guid.parse().map_err(|_| bad())?;
        Ok(UserId::new(hash.to_owned(), guid))
    }
}

impl Serialize for UserId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for UserId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<UserId, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A user as stored, read fresh from the table (user rows are never served
/// from the read cache).
///
/// It is axum-login's user type: its session hash is its security stamp, so
/// a password change or [`Identity::rotate_security_stamp`](super::Identity::rotate_security_stamp)
/// ends every session made before it. `Debug` leaves the password hash and
/// the stamp out.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    pub(super) id: UserId,
    pub(super) row: UserRow,
}

impl User {
    /// The user's id.
    pub fn id(&self) -> &UserId {
        &self.id
    }

    /// The user name as given at registration.
    pub fn user_name(&self) -> &str {
        &self.row.user_name
    }

    /// The user name as compared for uniqueness: upper-cased.
    pub fn normalized_user_name(&self) -> &str {
        &self.row.normalized_user_name
    }

    /// The email address, if the user has one.
    pub fn email(&self) -> Option<&str> {
        self.row.email.as_deref()
    }

    /// The email address as compared for uniqueness: upper-cased.
    pub fn normalized_email(&self) -> Option<&str> {
        self.row.normalized_email.as_deref()
    }

    /// Whether the application confirmed the email address.
    pub fn email_confirmed(&self) -> bool {
        self.row.email_confirmed
    }

    /// Whether the user has a password (a user made for an external login may have none).
    pub fn has_password(&self) -> bool {
        self.row.password_hash.is_some()
    }

    /// The security stamp: random, replaced by every change of credentials.
    pub fn security_stamp(&self) -> &str {
        &self.row.security_stamp
    }

    /// Whether sign-in needs a second factor.
    pub fn two_factor_enabled(&self) -> bool {
        self.row.two_factor_enabled
    }

    /// When a lockout ends (in the past once it has ended).
    pub fn lockout_end(&self) -> Option<DateTime> {
        self.row.lockout_end
    }

    /// Failed logins since the last success or lockout.
    pub fn access_failed_count(&self) -> u32 {
        self.row.access_failed_count
    }

    /// Whether the user is locked out at `now`.
    pub fn is_locked_out(&self, now: DateTime) -> bool {
        self.row.lockout_end.is_some_and(|end| end > now)
    }

    /// When the user registered.
    pub fn created_at(&self) -> DateTime {
        self.row.created_at
    }
}

impl fmt::Debug for User {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("User")
            .field("id", &self.id)
            .field("user_name", &self.row.user_name)
            .field("email", &self.row.email)
            .field("email_confirmed", &self.row.email_confirmed)
            .field("has_password", &self.row.password_hash.is_some())
            .field("two_factor_enabled", &self.row.two_factor_enabled)
            .field("lockout_end", &self.row.lockout_end)
            .field("access_failed_count", &self.row.access_failed_count)
            .finish_non_exhaustive()
    }
}

/// What [`Identity::register`](super::Identity::register) needs to make a user.
///
/// ```
/// use unified_tables::web::identity::NewUser;
/// let alice = NewUser::new("alice").email("alice@example.com").password("correct horse battery");
/// # let _ = alice;
/// ```
#[derive(Clone)]
pub struct NewUser {
    pub(super) user_name: String,
    pub(super) email: Option<String>,
    pub(super) password: Option<String>,
}

impl NewUser {
    /// A user with this user name, no email and no password.
    pub fn new(user_name: impl Into<String>) -> NewUser {
        NewUser {
            user_name: user_name.into(),
            email: None,
            password: None,
        }
    }

    /// The email address (unique among users).
    pub fn email(mut self, email: impl Into<String>) -> NewUser {
        self.email = Some(email.into());
        self
    }

    /// The password (hashed with argon2 before it is stored).
    pub fn password(mut self, password: impl Into<String>) -> NewUser {
        self.password = Some(password.into());
        self
    }
}

impl fmt::Debug for NewUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewUser")
            .field("user_name", &self.user_name)
            .field("email", &self.email)
            .field("has_password", &self.password.is_some())
            .finish()
    }
}

/// The credentials of axum-login's [`AuthnBackend::authenticate`](axum_login::AuthnBackend::authenticate):
/// a user name and a password. Deserializes from a form or JSON body with
/// the fields `user_name` and `password`; `Debug` hides the password.
///
/// ```
/// use unified_tables::web::identity::Credentials;
/// let creds = Credentials::new("alice", "correct horse battery");
/// assert!(!format!("{creds:?}").contains("horse"));
/// ```
#[derive(Clone, Deserialize)]
pub struct Credentials {
    /// The user name (any letter case).
    pub user_name: String,
    /// The password.
    pub password: String,
}

impl Credentials {
    /// Credentials from a user name and a password.
    pub fn new(user_name: impl Into<String>, password: impl Into<String>) -> Credentials {
        Credentials {
            user_name: user_name.into(),
            password: password.into(),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user_name", &self.user_name)
            .finish_non_exhaustive()
    }
}

/// What a sign-in attempt came to ([`Identity::sign_in`](super::Identity::sign_in)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SignIn {
    /// The password was right; the failed-attempt count is back at zero.
    Succeeded(User),
    /// The password was right and the user has two-factor sign-in enabled:
    /// check the second factor before logging the user in.
    TwoFactorRequired(User),
    /// No such user, no password, or a wrong password (the attempt was counted).
    Failed,
    /// The user is locked out until this instant; the password was not checked.
    LockedOut {
        /// When the lockout ends.
        until: DateTime,
    },
}

/// A role: a named group of users whose permissions its members have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Role {
    pub(super) name: String,
    pub(super) normalized_name: String,
}

impl Role {
    /// The name as created.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name as compared: upper-cased.
    pub fn normalized_name(&self) -> &str {
        &self.normalized_name
    }
}

/// A claim: a type and a value, on a user or a role.
///
/// ```
/// use unified_tables::web::identity::Claim;
/// let claim = Claim::new("department", "R&D / Kyiv #2");
/// assert_eq!(Claim::permission("orders.read").claim_type, Claim::PERMISSION);
/// # let _ = claim;
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Claim {
    /// The claim type (any text).
    pub claim_type: String,
    /// The claim value (any text).
    pub value: String,
}

impl Claim {
    /// The claim type of permissions: a role claim of this type grants its
    /// value as a permission to the role's members.
    pub const PERMISSION: &'static str = "permission";

    /// A claim of this type and value.
    pub fn new(claim_type: impl Into<String>, value: impl Into<String>) -> Claim {
        Claim {
            claim_type: claim_type.into(),
            value: value.into(),
        }
    }

    /// A permission claim: type [`Claim::PERMISSION`], the permission as value.
    pub fn permission(permission: impl Into<String>) -> Claim {
        Claim::new(Claim::PERMISSION, permission)
    }
}

/// An external login: an identity at another provider (OAuth, OpenID Connect)
/// linked to one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalLogin {
    /// The provider (`"github"`, `"https://login.example.com"`).
    pub provider: String,
    /// The user's key at the provider (its subject).
    pub provider_key: String,
    /// A name to show for it, if any.
    pub display_name: Option<String>,
}

impl ExternalLogin {
    /// A login of `provider` with the user's key there.
    pub fn new(provider: impl Into<String>, provider_key: impl Into<String>) -> ExternalLogin {
        ExternalLogin {
            provider: provider.into(),
            provider_key: provider_key.into(),
            display_name: None,
        }
    }

    /// The name to show for the login.
    pub fn display_name(mut self, name: impl Into<String>) -> ExternalLogin {
        self.display_name = Some(name.into());
        self
    }
}

/// Why an identity operation did not do what it was asked.
///
/// The variants a web service maps to answers: [`DuplicateUserName`] and
/// [`DuplicateEmail`] (a 409 on sign-up), [`LockedOut`] (a 423 or 429 on
/// login), [`RoleNotFound`] and [`Invalid`] (a 400). [`Storage`] wraps a
/// failure of the table service.
///
/// [`DuplicateUserName`]: IdentityError::DuplicateUserName
/// [`DuplicateEmail`]: IdentityError::DuplicateEmail
/// [`LockedOut`]: IdentityError::LockedOut
/// [`RoleNotFound`]: IdentityError::RoleNotFound
/// [`Invalid`]: IdentityError::Invalid
/// [`Storage`]: IdentityError::Storage
///
/// ```
/// use unified_tables::web::identity::{Identity, IdentityError, NewUser};
/// use unified_tables::Tables;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let identity = Identity::new(&Tables::memory());
/// identity.register(NewUser::new("alice").password("correct horse")).await?;
/// let again = identity.register(NewUser::new("ALICE").password("another one")).await;
/// assert!(matches!(again, Err(IdentityError::DuplicateUserName)));
/// # Ok::<(), IdentityError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// Another user has this user name (compared normalized: letter case does not matter).
    #[error("the user name is taken: choose another one")]
    DuplicateUserName,
    /// Another user has this email address (compared normalized), or is being registered with it right now.
    #[error("the email address belongs to another user")]
    DuplicateEmail,
    /// Another role has this name (compared normalized).
    #[error("a role with this name exists")]
    DuplicateRole,
    /// This external login (provider and provider key) already belongs to an account:
    /// logins are created once and never taken over.
    #[error("the {provider} login is already linked to an account")]
    LoginTaken {
        /// The login provider.
        provider: String,
    },
    /// No user has this id.
    #[error("no user has the id {0}")]
    UserNotFound(UserId),
    /// No role has this name: adding a user to it (or granting it a permission) cannot be done.
    #[error("no role is named `{0}`: create it first")]
    RoleNotFound(String),
    /// The password given as the current one is not the user's password.
    #[error("the current password is wrong")]
    WrongPassword,
    /// The user is locked out after too many failed logins, until the given instant.
    #[error("the account is locked until {until}")]
    LockedOut {
        /// When the lockout ends.
        until: DateTime,
    },
    /// The password was right, and the user has two-factor sign-in enabled:
    /// the second factor is the application's to check before it logs the user in.
    #[error("the account needs a second factor to sign in")]
    TwoFactorRequired {
        /// The user whose password was right.
        user: UserId,
    },
    /// An argument was refused before anything was stored.
    #[error("{field}: {reason}")]
    Invalid {
        /// The argument or field.
        field: &'static str,
        /// What is wrong and what to do.
        reason: String,
    },
    /// Another writer changed the same rows at every attempt; nothing of this call is stored. Try again.
    #[error("the identity rows kept changing under this call: try again")]
    Contended,
    /// Hashing or verifying a password failed: its blocking task did not
    /// finish (it panicked, or the runtime shut down); the task's error is
    /// the source.
    #[error("password hashing did not finish")]
    Hashing(#[source] tokio::task::JoinError),
    /// The table service failed.
    #[error(transparent)]
    Storage(crate::Error),
}

impl From<crate::Error> for IdentityError {
    /// A taken email address (the user rows' unique index) is
    /// [`IdentityError::DuplicateEmail`]; anything else is `Storage`.
    fn from(e: crate::Error) -> IdentityError {
        match e {
            crate::Error::UniqueViolation { .. } => IdentityError::DuplicateEmail,
            other => IdentityError::Storage(other),
        }
    }
}

/// The result of an identity operation.
pub type IdentityResult<T> = std::result::Result<T, IdentityError>;

pub(super) fn invalid(field: &'static str, reason: impl Into<String>) -> IdentityError {
    IdentityError::Invalid {
        field,
        reason: reason.into(),
    }
}
