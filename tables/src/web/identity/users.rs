//! Users: registration, look-ups, deletion and the fields a user changes.

use super::row_keys::{check_email, check_name, check_password, normalize, user_partition};
use super::rows::UserRow;
use super::{password, Identity, IdentityError, IdentityResult, NewUser, User, UserId};
use crate::layout::IDENTITY_USER_ROW_KEY;
use crate::{DateTime, ErrorKind, Guid, Outcome};

/// A conditional write that found another version, or no row: another writer was first.
pub(super) fn lost(e: &crate::Error) -> bool {
    matches!(e.kind(), ErrorKind::PreconditionFailed | ErrorKind::NotFound)
}

/// A new random security stamp: 32 hex digits.
pub(super) fn new_stamp() -> String {
    crate::value::hex(&rand::random::<[u8; 16]>())
}

impl UserRow {
    pub(super) fn to_user(&self) -> User {
        User {
            id: UserId::new(self.pk.clone(), self.user_guid),
            row: self.clone(),
        }
    }
}

impl Identity {
    /// Registers a user: validates the input, hashes the password (argon2,
    /// on a blocking thread), and creates the user row, whose key is the hash
    /// of the normalized user name (its email address, if one is given, is
    /// reserved first by the users' unique email index).
    ///
    /// Fails with [`IdentityError::DuplicateUserName`] when another user has
    /// the same user name in any letter case, [`IdentityError::DuplicateEmail`]
    /// when another user has (or is being registered with) the email
    /// address, and [`IdentityError::Invalid`] for an empty or overlong name,
    /// an email without `@`, or an empty password. Of racing registrations of
    /// one name exactly one succeeds. A refused registration leaves nothing
    /// stored.
    ///
    /// ```
    /// use unified_tables::web::identity::{Identity, IdentityError, NewUser};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let identity = Identity::new(&unified_tables::Tables::memory());
    /// let bob = identity.register(NewUser::new("bob").email("Bob@Example.com").password("hunter22")).await?;
    /// assert_eq!(bob.normalized_email(), Some("BOB@EXAMPLE.COM"));
    /// let taken = identity.register(NewUser::new("robert").email("bob@example.com").password("x1")).await;
    /// assert!(matches!(taken, Err(IdentityError::DuplicateEmail)));
    /// # Ok::<(), IdentityError>(())
    /// # }).unwrap();
    /// ```
    pub async fn register(&self, new: NewUser) -> IdentityResult<User> {
        check_name("user_name", &new.user_name)?;
        if let Some(email) = &new.email {
            check_email(email)?;
        }
        if let Some(p) = &new.password {
            check_password(p)?;
        }
        let normalized_user_name = normalize(&new.user_name);
        let normalized_email = new.email.as_deref().map(normalize);
        let pk = user_partition(&normalized_user_name);
        // A quick answer for a name that is plainly taken; the create below decides.
        if self.inner.users.exists((pk.as_str(), IDENTITY_USER_ROW_KEY)).await? {
            return Err(IdentityError::DuplicateUserName);
        }
        let password_hash = match &new.password {
            Some(p) => Some(password::hash(p).await?),
            None => None,
        };
        let id = UserId::new(pk.clone(), Guid::new_random());
        let mut row = UserRow {
            pk,
            rk: IDENTITY_USER_ROW_KEY.to_owned(),
            user_guid: id.guid,
            user_name: new.user_name,
            normalized_user_name,
            email: new.email,
            normalized_email: normalized_email.clone(),
            email_confirmed: false,
            password_hash,
            security_stamp: new_stamp(),
            two_factor_enabled: false,
            lockout_end: None,
            access_failed_count: 0,
            created_at: DateTime::now(),
            etag: None,
        };
        if let Err(e) = self.inner.users.create(&mut row).await {
            let stored = e.kind() == ErrorKind::OutcomeUnknown && self.user(&id).await.ok().flatten().is_some();
            if !stored {
                return Err(match e {
                    crate::Error::UniqueViolation { .. } => IdentityError::DuplicateEmail,
                    // A reservation that could not be made fresh, or kept being taken: try again.
                    crate::Error::Conflict { .. } => IdentityError::Contended,
                    e if e.kind() == ErrorKind::AlreadyExists => IdentityError::DuplicateUserName,
                    e => e.into(),
                });
            }
        }
        Ok(row.to_user())
    }

    /// The user with this id, read from the table, or `None`.
    pub async fn user(&self, id: &UserId) -> IdentityResult<Option<User>> {
        Ok(self.user_row(id).await?.map(|r| r.to_user()))
    }

    pub(super) async fn user_row(&self, id: &UserId) -> IdentityResult<Option<UserRow>> {
        let row = self
            .inner
            .users
            .get((id.partition.as_str(), IDENTITY_USER_ROW_KEY))
            .await?;
        Ok(row.filter(|r| r.user_guid == id.guid))
    }

    /// The user with this user name (any letter case), or `None`.
    pub async fn find_by_name(&self, user_name: &str) -> IdentityResult<Option<User>> {
        let pk = user_partition(&normalize(user_name));
        let row = self.inner.users.get((pk.as_str(), IDENTITY_USER_ROW_KEY)).await?;
        Ok(row.map(|r| r.to_user()))
    }

    /// The user who owns this email address (any letter case), or `None`.
    /// Read through the users' unique email index, and answered only when the
    /// index row's owner holds the address.
    pub async fn find_by_email(&self, email: &str) -> IdentityResult<Option<User>> {
        let row = UserRow::get_by_email(&self.inner.users, &normalize(email)).await?;
        Ok(row.map(|r| r.to_user()))
    }

    /// Deletes the user and everything of theirs: the email index row,
    /// role links, claims, logins and tokens. `Ok(false)` if there was no
    /// such user. The user row goes first, so a deletion that stops part way
    /// leaves rows of an id no user will ever have again (ids are never
    /// reused); the email address and logins such rows name are free for
    /// others at once.
    pub async fn delete_user(&self, id: &UserId) -> IdentityResult<bool> {
        if self.delete_user_row(id).await?.is_none() {
            return Ok(false);
        }
        self.inner.users.settle_indexes().await;
        let partition = id.to_string();
        self.inner.user_roles.delete_partition(&partition).await?;
        self.inner.user_claims.delete_partition(&partition).await?;
        self.inner.tokens.delete_partition(&partition).await?;
        for login in self.login_rows(id).await? {
            self.delete_login_row(&login).await?;
        }
        Ok(true)
    }

    /// Deletes the user row on condition of the version read; the row deleted.
    async fn delete_user_row(&self, id: &UserId) -> IdentityResult<Option<UserRow>> {
        for _ in 0..super::ATTEMPTS {
            let Some(row) = self.user_row(id).await? else {
                return Ok(None);
            };
            match self.inner.users.delete_entity(&row).await {
                Ok(()) => return Ok(Some(row)),
                Err(e) if lost(&e) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(IdentityError::Contended)
    }

    /// Applies `change` to the user's row by compare-and-swap, re-applied
    /// on a lost race. [`IdentityError::UserNotFound`] if there is no such user.
    pub(super) async fn change_user(&self, id: &UserId, change: impl FnMut(&mut UserRow)) -> IdentityResult<UserRow> {
        let outcome = self
            .inner
            .users
            .try_transition(
                (id.partition.as_str(), IDENTITY_USER_ROW_KEY),
                |row| row.user_guid == id.guid,
                change,
            )
            .await?;
        match outcome {
            Outcome::Updated(row) => Ok(row),
            Outcome::NotFound | Outcome::PreconditionFailed(_) => Err(IdentityError::UserNotFound(id.clone())),
            Outcome::Conflicted => Err(IdentityError::Contended),
            // The user rows' unique index is the email's.
            Outcome::UniqueViolation { .. } => Err(IdentityError::DuplicateEmail),
        }
    }

    /// Changes the email address (or removes it with `None`): the user row
    /// is written (unconfirmed, with a new security stamp) with the new
    /// address reserved first by the users' unique email index; it returns
    /// once the old address's index row is removed.
    /// [`IdentityError::DuplicateEmail`] when another user has the address.
    pub async fn set_email(&self, id: &UserId, email: Option<&str>) -> IdentityResult<User> {
        if let Some(e) = email {
            check_email(e)?;
        }
        let normalized = email.map(normalize);
        let row = self
            .change_user(id, |row| {
                row.email = email.map(str::to_owned);
                if row.normalized_email != normalized {
                    row.email_confirmed = false;
                }
                row.normalized_email = normalized.clone();
                row.security_stamp = new_stamp();
            })
            .await?;
        self.inner.users.settle_indexes().await;
        Ok(row.to_user())
    }

    /// Marks the email address confirmed ([`IdentityError::Invalid`] if the user has none).
    pub async fn confirm_email(&self, id: &UserId) -> IdentityResult<User> {
        let row = self
            .change_user(id, |row| row.email_confirmed = row.email.is_some())
            .await?;
        if row.email.is_none() {
            return Err(super::types::invalid(
                "email",
                "the user has no email address to confirm",
            ));
        }
        Ok(row.to_user())
    }

    /// Turns two-factor sign-in on or off. Sign-in of a user with it on
    /// answers [`SignIn::TwoFactorRequired`](super::SignIn::TwoFactorRequired).
    pub async fn set_two_factor_enabled(&self, id: &UserId, enabled: bool) -> IdentityResult<User> {
        let row = self
            .change_user(id, |row| {
                if row.two_factor_enabled != enabled {
                    row.two_factor_enabled = enabled;
                    row.security_stamp = new_stamp();
                }
            })
            .await?;
        Ok(row.to_user())
    }

    /// Sets when the user's lockout ends: a future instant locks the user
    /// out until then; `None` (or an instant in the past) unlocks the user.
    /// Either sets the failed-attempt count back to zero.
    pub async fn set_lockout_end(&self, id: &UserId, end: Option<DateTime>) -> IdentityResult<User> {
        let row = self
            .change_user(id, |row| {
                row.lockout_end = end;
                row.access_failed_count = 0;
            })
            .await?;
        Ok(row.to_user())
    }

    /// Draws a new security stamp, which ends every session made before it
    /// (sign the user out everywhere).
    pub async fn rotate_security_stamp(&self, id: &UserId) -> IdentityResult<User> {
        Ok(self
            .change_user(id, |row| row.security_stamp = new_stamp())
            .await?
            .to_user())
    }

    /// Loads the users of these ids, skipping ids no user has.
    pub(super) async fn users_of(&self, ids: impl IntoIterator<Item = String>) -> IdentityResult<Vec<User>> {
        let mut users = Vec::new();
        for id in ids {
            if let Ok(id) = id.parse::<UserId>() {
                if let Some(u) = self.user(&id).await? {
                    users.push(u);
                }
            }
        }
        Ok(users)
    }
}
