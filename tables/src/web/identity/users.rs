//! Users: registration, look-ups, deletion and the fields a user changes.

use super::{Identity, IdentityResult, NewUser, User, UserId};
use crate::DateTime;

impl Identity {
    /// Registers a user: validates the input, hashes the password (argon2,
    /// on a blocking thread), reserves the email address if one is given, and
    /// creates the user row, whose key is the hash of the normalized user
    /// name.
    ///
    /// Fails with [`IdentityError::DuplicateUserName`](super::IdentityError::DuplicateUserName)
    /// when another user has the same user name in any letter case,
    /// [`DuplicateEmail`](super::IdentityError::DuplicateEmail) when another
    /// user has (or is being registered with) the email address, and
    /// [`Invalid`](super::IdentityError::Invalid) for an empty or overlong
    /// name, an email without `@`, or an empty password. Of racing
    /// registrations of one name exactly one succeeds. A refused registration
    /// leaves nothing stored.
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
        let _ = new;
        todo!()
    }

    /// The user with this id, read from the table, or `None`.
    pub async fn user(&self, id: &UserId) -> IdentityResult<Option<User>> {
        let _ = id;
        todo!()
    }

    /// The user with this user name (any letter case), or `None`.
    pub async fn find_by_name(&self, user_name: &str) -> IdentityResult<Option<User>> {
        let _ = user_name;
        todo!()
    }

    /// The user who owns this email address (any letter case), or `None`.
    pub async fn find_by_email(&self, email: &str) -> IdentityResult<Option<User>> {
        let _ = email;
        todo!()
    }

    /// Deletes the user and everything of theirs: the email reservation,
    /// role links, claims, logins and tokens. `Ok(false)` if there was no
    /// such user. The user row goes first, so a deletion that stops part way
    /// leaves rows of an id no user will ever have again; a later
    /// registration may take over the email address and logins they held.
    pub async fn delete_user(&self, id: &UserId) -> IdentityResult<bool> {
        let _ = id;
        todo!()
    }

    /// Changes the email address (or removes it with `None`): reserves the
    /// new address, writes it on the user (unconfirmed), then releases the
    /// old one. [`IdentityError::DuplicateEmail`](super::IdentityError::DuplicateEmail) when another user has it.
    pub async fn set_email(&self, id: &UserId, email: Option<&str>) -> IdentityResult<User> {
        let _ = (id, email);
        todo!()
    }

    /// Marks the email address confirmed.
    pub async fn confirm_email(&self, id: &UserId) -> IdentityResult<User> {
        let _ = id;
        todo!()
    }

    /// Turns two-factor sign-in on or off. Sign-in of a user with it on
    /// answers [`SignIn::TwoFactorRequired`](super::SignIn::TwoFactorRequired).
    pub async fn set_two_factor_enabled(&self, id: &UserId, enabled: bool) -> IdentityResult<User> {
        let _ = (id, enabled);
        todo!()
    }

    /// Sets when the user's lockout ends: `None` (or an instant in the past)
    /// unlocks the user, and sets the failed-attempt count back to zero.
    pub async fn set_lockout_end(&self, id: &UserId, end: Option<DateTime>) -> IdentityResult<User> {
        let _ = (id, end);
        todo!()
    }

    /// Draws a new security stamp, which ends every session made before it
    /// (sign the user out everywhere).
    pub async fn rotate_security_stamp(&self, id: &UserId) -> IdentityResult<User> {
        let _ = id;
        todo!()
    }
}
