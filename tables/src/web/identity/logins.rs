//! External logins: created once, never taken over.

use super::{ExternalLogin, Identity, IdentityResult, User, UserId};

impl Identity {
    /// Links an external login to the user. The login row is created, never
    /// upserted: when the provider and key already belong to an account (this
    /// one or another), this is [`IdentityError::LoginTaken`](super::IdentityError::LoginTaken)
    /// and nothing changes. A login left by a deleted user is taken over.
    pub async fn add_login(&self, user: &UserId, login: &ExternalLogin) -> IdentityResult<()> {
        let _ = (user, login);
        todo!()
    }

    /// Unlinks a login from the user; `Ok(false)` if the user has no such login
    /// (a login of another user is never removed).
    pub async fn remove_login(&self, user: &UserId, provider: &str, provider_key: &str) -> IdentityResult<bool> {
        let _ = (user, provider, provider_key);
        todo!()
    }

    /// The user this external login belongs to, or `None`.
    pub async fn find_by_login(&self, provider: &str, provider_key: &str) -> IdentityResult<Option<User>> {
        let _ = (provider, provider_key);
        todo!()
    }

    /// The user's external logins (a query over the login table).
    pub async fn logins(&self, user: &UserId) -> IdentityResult<Vec<ExternalLogin>> {
        let _ = user;
        todo!()
    }
}
