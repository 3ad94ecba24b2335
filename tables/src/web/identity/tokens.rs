//! Tokens: named values per user and provider (authenticator keys, recovery
//! codes, refresh tokens). A partition per user, a row per token keyed by the
//! hash of provider and name.

use super::row_keys::token_key;
use super::rows::TokenRow;
use super::{Identity, IdentityError, IdentityResult, UserId};

impl Identity {
    /// Sets a token (insert or replace).
    /// [`IdentityError::UserNotFound`] when no user has that id.
    ///
    /// ```
    /// use unified_tables::web::identity::{Identity, NewUser};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let identity = Identity::new(&unified_tables::Tables::memory());
    /// let hana = identity.register(NewUser::new("hana")).await?;
    /// identity.set_token(hana.id(), "[AspNetUserStore]", "AuthenticatorKey", "JBSWY3DPEHPK3PXP").await?;
    /// let key = identity.token(hana.id(), "[AspNetUserStore]", "AuthenticatorKey").await?;
    /// assert_eq!(key.as_deref(), Some("JBSWY3DPEHPK3PXP"));
    /// # Ok::<(), unified_tables::web::identity::IdentityError>(())
    /// # }).unwrap();
    /// ```
    pub async fn set_token(&self, user: &UserId, provider: &str, name: &str, value: &str) -> IdentityResult<()> {
        if self.user_row(user).await?.is_none() {
            return Err(IdentityError::UserNotFound(user.clone()));
        }
        let mut row = TokenRow {
            pk: user.to_string(),
            rk: token_key(provider, name),
            login_provider: provider.to_owned(),
            name: name.to_owned(),
            value: value.to_owned(),
        };
        self.inner.tokens.upsert(&mut row).await?;
        Ok(())
    }

    /// A token's value, or `None`.
    pub async fn token(&self, user: &UserId, provider: &str, name: &str) -> IdentityResult<Option<String>> {
        let row = self
            .inner
            .tokens
            .get((user.to_string(), token_key(provider, name)))
            .await?;
        Ok(row.map(|r| r.value))
    }

    /// Removes a token; `Ok(false)` if there was none.
    pub async fn remove_token(&self, user: &UserId, provider: &str, name: &str) -> IdentityResult<bool> {
        Ok(self
            .inner
            .tokens
            .delete((user.to_string(), token_key(provider, name)))
            .await?)
    }
}
