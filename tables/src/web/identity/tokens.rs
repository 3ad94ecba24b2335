//! Tokens: named values per user and provider (authenticator keys, recovery codes, refresh tokens).

use super::{Identity, IdentityResult, UserId};

impl Identity {
    /// Sets a token (insert or replace).
    /// [`IdentityError::UserNotFound`](super::IdentityError::UserNotFound) when no user has that id.
    pub async fn set_token(&self, user: &UserId, provider: &str, name: &str, value: &str) -> IdentityResult<()> {
        let _ = (user, provider, name, value);
        todo!()
    }

    /// A token's value, or `None`.
    pub async fn token(&self, user: &UserId, provider: &str, name: &str) -> IdentityResult<Option<String>> {
        let _ = (user, provider, name);
        todo!()
    }

    /// Removes a token; `Ok(false)` if there was none.
    pub async fn remove_token(&self, user: &UserId, provider: &str, name: &str) -> IdentityResult<bool> {
        let _ = (user, provider, name);
        todo!()
    }
}
