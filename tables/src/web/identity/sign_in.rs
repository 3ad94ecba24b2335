//! Passwords and sign-in: verification, lockout, password changes.

use std::time::Duration;

use super::row_keys::{check_password, normalize, user_partition};
use super::users::new_stamp;
use super::{password, Credentials, Identity, IdentityError, IdentityResult, SignIn, User, UserId};
use crate::layout::IDENTITY_USER_ROW_KEY;
use crate::{DateTime, Outcome};

fn after(now: DateTime, duration: Duration) -> DateTime {
    let nanos = now
        .unix_nanos()
        .saturating_add(i128::try_from(duration.as_nanos()).unwrap_or(i128::MAX));
    let end = DateTime::from_unix_nanos(nanos);
    if end.is_storable() {
        end
    } else {
        DateTime::MAX
    }
}

fn signed_in(user: User) -> SignIn {
    match user.two_factor_enabled() {
        true => SignIn::TwoFactorRequired(user),
        false => SignIn::Succeeded(user),
    }
}

impl Identity {
    /// Checks a user name and password, with lockout.
    ///
    /// A locked-out user gets [`SignIn::LockedOut`] without the password being
    /// checked. A wrong password counts one failed attempt (every concurrent
    /// failure is counted: the count is a compare-and-swap on the user row);
    /// the attempt that reaches the policy's maximum locks the user out and
    /// sets the count back to zero. A right password sets the count back to
    /// zero and answers [`SignIn::Succeeded`], or [`SignIn::TwoFactorRequired`]
    /// when the user has two-factor sign-in on. An unknown user name, or a
    /// user without a password, answers [`SignIn::Failed`] after the same
    /// hashing work as a wrong password.
    ///
    /// ```
    /// use std::time::Duration;
    /// use unified_tables::web::identity::{Credentials, Identity, IdentityOptions, Lockout, NewUser, SignIn};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let options = IdentityOptions::new().lockout(Lockout::new(2, Duration::from_secs(60))?);
    /// let identity = Identity::with_options(&unified_tables::Tables::memory(), options);
    /// identity.register(NewUser::new("carol").password("right one")).await?;
    ///
    /// let wrong = Credentials::new("carol", "wrong one");
    /// assert_eq!(identity.sign_in(&wrong).await?, SignIn::Failed);
    /// assert_eq!(identity.sign_in(&wrong).await?, SignIn::Failed);       // the second failure locks
    /// let right = Credentials::new("carol", "right one");
    /// assert!(matches!(identity.sign_in(&right).await?, SignIn::LockedOut { .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub async fn sign_in(&self, credentials: &Credentials) -> IdentityResult<SignIn> {
        let pk = user_partition(&normalize(&credentials.user_name));
        let users = &self.inner.users;
        let Some(row) = users.get((pk.as_str(), IDENTITY_USER_ROW_KEY)).await? else {
            password::verify_nothing(&credentials.password).await?;
            return Ok(SignIn::Failed);
        };
        let now = DateTime::now();
        if let Some(until) = row.lockout_end.filter(|end| *end > now) {
            return Ok(SignIn::LockedOut { until });
        }
        let Some(hash) = &row.password_hash else {
            password::verify_nothing(&credentials.password).await?;
            return Ok(SignIn::Failed);
        };
        let id = row.to_user().id;
        if !password::verify(&credentials.password, hash).await? {
            self.count_failure(&id).await?;
            return Ok(SignIn::Failed);
        }
        if row.access_failed_count == 0 {
            return Ok(signed_in(row.to_user()));
        }
        // Reset the count, unless a concurrent change of the password or a
        // lockout came between the check and now: then this sign-in fails.
        let verified = row.password_hash.clone();
        let outcome = users
            .try_transition(
                (pk.as_str(), IDENTITY_USER_ROW_KEY),
                |r| {
                    r.user_guid == id.guid
                        && r.password_hash == verified
                        && r.lockout_end.is_none_or(|end| end <= DateTime::now())
                },
                |r| r.access_failed_count = 0,
            )
            .await?;
        let user = match outcome {
            Outcome::Updated(r) => r.to_user(),
            Outcome::PreconditionFailed(r) => match r.lockout_end.filter(|end| *end > DateTime::now()) {
                Some(until) if r.user_guid == id.guid => return Ok(SignIn::LockedOut { until }),
                _ => return Ok(SignIn::Failed),
            },
            Outcome::NotFound => return Ok(SignIn::Failed),
            Outcome::Conflicted => return Err(IdentityError::Contended),
            // The transition changes no indexed field; were it to, the unique index is the email's.
            Outcome::UniqueViolation { .. } => return Err(IdentityError::DuplicateEmail),
        };
        Ok(signed_in(user))
    }

    /// Counts one failed attempt; the one that reaches the maximum locks the user out.
    async fn count_failure(&self, id: &UserId) -> IdentityResult<()> {
        let lockout = self.inner.options.lockout;
        let counted = self
            .change_user(id, |r| {
                r.access_failed_count = r.access_failed_count.saturating_add(1);
                if r.access_failed_count >= lockout.max_failed_attempts() {
                    r.lockout_end = Some(after(DateTime::now(), lockout.duration()));
                    r.access_failed_count = 0;
                }
            })
            .await;
        match counted {
            Ok(_) | Err(IdentityError::UserNotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Sets a new password without the old one (an administrator's reset, or
    /// a reset by emailed token). Draws a new security stamp: every session
    /// made before it ends.
    pub async fn set_password(&self, id: &UserId, new_password: &str) -> IdentityResult<User> {
        check_password(new_password)?;
        let hash = password::hash(new_password).await?;
        let row = self
            .change_user(id, |r| {
                r.password_hash = Some(hash.clone());
                r.security_stamp = new_stamp();
            })
            .await?;
        Ok(row.to_user())
    }

    /// Changes the password when `current` is the user's password
    /// ([`IdentityError::WrongPassword`] otherwise; a wrong current password
    /// counts towards lockout as a failed sign-in does). Draws a new
    /// security stamp: every session made before it ends. If the password
    /// changed between the check and the write (a concurrent change), this
    /// fails with `WrongPassword` and stores nothing.
    ///
    /// ```
    /// use axum_login::AuthUser;
    /// use unified_tables::web::identity::{Identity, IdentityError, NewUser};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let identity = Identity::new(&unified_tables::Tables::memory());
    /// let dave = identity.register(NewUser::new("dave").password("old secret")).await?;
    /// let changed = identity.change_password(dave.id(), "old secret", "new secret").await?;
    /// assert_ne!(changed.session_auth_hash(), dave.session_auth_hash());   // older sessions end
    /// let again = identity.change_password(dave.id(), "old secret", "other").await;
    /// assert!(matches!(again, Err(IdentityError::WrongPassword)));
    /// # Ok::<(), IdentityError>(())
    /// # }).unwrap();
    /// ```
    pub async fn change_password(&self, id: &UserId, current: &str, new_password: &str) -> IdentityResult<User> {
        check_password(new_password)?;
        let row = self
            .user_row(id)
            .await?
            .ok_or_else(|| IdentityError::UserNotFound(id.clone()))?;
        let Some(old) = row.password_hash.clone() else {
            return Err(IdentityError::WrongPassword);
        };
        if !password::verify(current, &old).await? {
            self.count_failure(id).await?;
            return Err(IdentityError::WrongPassword);
        }
        let hash = password::hash(new_password).await?;
        let outcome = self
            .inner
            .users
            .try_transition(
                (id.partition.as_str(), IDENTITY_USER_ROW_KEY),
                |r| r.user_guid == id.guid && r.password_hash.as_ref() == Some(&old),
                |r| {
                    r.password_hash = Some(hash.clone());
                    r.security_stamp = new_stamp();
                },
            )
            .await?;
        match outcome {
            Outcome::Updated(r) => Ok(r.to_user()),
            Outcome::PreconditionFailed(r) if r.user_guid == id.guid => Err(IdentityError::WrongPassword),
            Outcome::NotFound | Outcome::PreconditionFailed(_) => Err(IdentityError::UserNotFound(id.clone())),
            Outcome::Conflicted => Err(IdentityError::Contended),
            // The user rows' unique index is the email's.
            Outcome::UniqueViolation { .. } => Err(IdentityError::DuplicateEmail),
        }
    }

    /// Whether `password` is the user's password, checked against the hash
    /// `user` carries (no lockout bookkeeping; `false` for a user without a password).
    pub async fn check_password(&self, user: &User, password: &str) -> IdentityResult<bool> {
        match &user.row.password_hash {
            Some(hash) => password::verify(password, hash).await,
            None => Ok(false),
        }
    }
}
