//! What an identity operation can report.

use crate::DateTime;

use super::UserId;

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
