//! axum-login's traits over the identity store.

use std::collections::HashSet;

use axum_login::{AuthUser, AuthnBackend, AuthzBackend};

use super::{Credentials, Identity, IdentityError, SignIn, User, UserId};

impl AuthUser for User {
    type Id = UserId;

    fn id(&self) -> UserId {
        self.id.clone()
    }

    /// The security stamp: a password change or a new stamp makes every
    /// session made before it fail axum-login's check, which logs it out.
    fn session_auth_hash(&self) -> &[u8] {
        self.row.security_stamp.as_bytes()
    }
}

/// `authenticate` is [`Identity::sign_in`]: `Ok(Some(user))` on success,
/// `Ok(None)` for a wrong user name or password (counted towards lockout),
/// `Err(IdentityError::LockedOut { .. })` for a locked-out user and
/// `Err(IdentityError::TwoFactorRequired { .. })` when the password was right
/// but the user has two-factor sign-in on (check the second factor, then call
/// `AuthSession::login` yourself). `get_user` reads the user from the table
/// (never from a cache), so a changed security stamp ends the session on the
/// next request.
impl AuthnBackend for Identity {
    type User = User;
    type Credentials = Credentials;
    type Error = IdentityError;

    async fn authenticate(&self, credentials: Credentials) -> Result<Option<User>, IdentityError> {
        match self.sign_in(&credentials).await? {
            SignIn::Succeeded(user) => Ok(Some(user)),
            SignIn::Failed => Ok(None),
            SignIn::LockedOut { until } => Err(IdentityError::LockedOut { until }),
            SignIn::TwoFactorRequired(user) => Err(IdentityError::TwoFactorRequired { user: user.id }),
        }
    }

    async fn get_user(&self, id: &UserId) -> Result<Option<User>, IdentityError> {
        self.user(id).await
    }
}

/// Permissions come through roles: a user has the values of the
/// [`Claim::PERMISSION`](super::Claim::PERMISSION) claims of every role they
/// are a member of ([`Identity::permissions`]).
impl AuthzBackend for Identity {
    type Permission = String;

    async fn get_group_permissions(&self, user: &User) -> Result<HashSet<String>, IdentityError> {
        self.permissions(&user.id).await
    }
}
