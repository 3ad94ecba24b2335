//! External logins: created once, never taken over.
//!
//! A login row is keyed by the hash of provider and provider key; its owner
//! is a value. It is created, never upserted: a second account claiming the
//! same external identity meets the existing row and gets an error, where an
//! upsert would silently hand the identity to whoever wrote last. The only
//! row ever replaced is one whose owner no longer exists (a deleted user),
//! and only on condition of the version read.

use super::row_keys::{check_name, login_partition};
use super::rows::LoginRow;
use super::users::lost;
use super::{ExternalLogin, Identity, IdentityError, IdentityResult, User, UserId};
use crate::layout::IDENTITY_LOGIN_ROW_KEY;
use crate::{ErrorKind, QueryOptions};

/// Take-over attempts of a login row left by a deleted user.
const ATTEMPTS: usize = 8;

impl LoginRow {
    fn to_login(&self) -> ExternalLogin {
        ExternalLogin {
            provider: self.login_provider.clone(),
            provider_key: self.provider_key.clone(),
            display_name: self.provider_display_name.clone(),
        }
    }
}

impl Identity {
    /// Links an external login to the user. The login row is created, never
    /// upserted: when the provider and key already belong to an account (this
    /// one or another), this is [`IdentityError::LoginTaken`] and nothing
    /// changes. A login left by a deleted user is taken over.
    /// [`IdentityError::UserNotFound`] when no user has that id.
    ///
    /// ```
    /// use unified_tables::web::identity::{ExternalLogin, Identity, IdentityError, NewUser};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let identity = Identity::new(&unified_tables::Tables::memory());
    /// let gina = identity.register(NewUser::new("gina")).await?;
    /// let mallory = identity.register(NewUser::new("mallory")).await?;
    /// let github = ExternalLogin::new("github", "12345");
    /// identity.add_login(gina.id(), &github).await?;
    /// let stolen = identity.add_login(mallory.id(), &github).await;
    /// assert!(matches!(stolen, Err(IdentityError::LoginTaken { .. })));
    /// assert_eq!(identity.find_by_login("github", "12345").await?.unwrap().id(), gina.id());
    /// # Ok::<(), IdentityError>(())
    /// # }).unwrap();
    /// ```
    pub async fn add_login(&self, user: &UserId, login: &ExternalLogin) -> IdentityResult<()> {
        check_name("provider", &login.provider)?;
        if login.provider_key.is_empty() {
            return Err(super::types::invalid("provider_key", "is empty"));
        }
        if self.user_row(user).await?.is_none() {
            return Err(IdentityError::UserNotFound(user.clone()));
        }
        let taken = || IdentityError::LoginTaken {
            provider: login.provider.clone(),
        };
        let mut row = LoginRow {
            pk: login_partition(&login.provider, &login.provider_key),
            rk: IDENTITY_LOGIN_ROW_KEY.to_owned(),
            login_provider: login.provider.clone(),
            provider_key: login.provider_key.clone(),
            provider_display_name: login.display_name.clone(),
            user_id: user.to_string(),
            etag: None,
        };
        for _ in 0..ATTEMPTS {
            row.etag = None;
            match self.inner.logins.create(&mut row).await {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e.into()),
            }
            let Some(existing) = self.inner.logins.get((row.pk.as_str(), row.rk.as_str())).await? else {
                continue;
            };
            if self.login_owner(&existing).await?.is_some() {
                return Err(taken());
            }
            row.etag = existing.etag;
            match self.inner.logins.update(&mut row).await {
                Ok(_) => return Ok(()),
                Err(e) if lost(&e) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(IdentityError::Contended)
    }

    /// The owner of a login row, if that user exists.
    async fn login_owner(&self, row: &LoginRow) -> IdentityResult<Option<User>> {
        match row.user_id.parse::<UserId>() {
            Ok(id) => self.user(&id).await,
            Err(_) => Ok(None),
        }
    }

    /// Unlinks a login from the user; `Ok(false)` if the user has no such login
    /// (a login of another user is never removed).
    pub async fn remove_login(&self, user: &UserId, provider: &str, provider_key: &str) -> IdentityResult<bool> {
        let pk = login_partition(provider, provider_key);
        match self.inner.logins.get((pk.as_str(), IDENTITY_LOGIN_ROW_KEY)).await? {
            Some(row) if row.user_id == user.to_string() => self.delete_login_row(&row).await,
            _ => Ok(false),
        }
    }

    /// Deletes a login row on condition of its version.
    pub(super) async fn delete_login_row(&self, row: &LoginRow) -> IdentityResult<bool> {
        match self.inner.logins.delete_entity(row).await {
            Ok(()) => Ok(true),
            Err(e) if lost(&e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The user this external login belongs to, or `None`.
    pub async fn find_by_login(&self, provider: &str, provider_key: &str) -> IdentityResult<Option<User>> {
        let pk = login_partition(provider, provider_key);
        match self.inner.logins.get((pk.as_str(), IDENTITY_LOGIN_ROW_KEY)).await? {
            Some(row) => self.login_owner(&row).await,
            None => Ok(None),
        }
    }

    pub(super) async fn login_rows(&self, user: &UserId) -> IdentityResult<Vec<LoginRow>> {
        let id = user.to_string();
        let rows = self
            .inner
            .logins
            .query(QueryOptions::all().filter(LoginRow::filter(|c| c.user_id.eq(id.as_str()))))
            .await?;
        Ok(rows)
    }

    /// The user's external logins (a query over the login table).
    pub async fn logins(&self, user: &UserId) -> IdentityResult<Vec<ExternalLogin>> {
        Ok(self.login_rows(user).await?.iter().map(LoginRow::to_login).collect())
    }
}
