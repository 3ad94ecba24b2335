//! Passwords and sign-in: verification, lockout, password changes.

use super::{Credentials, Identity, IdentityResult, SignIn, User, UserId};

impl Identity {
    /// Checks a user name and password, with lockout.
    ///
    /// A locked-out user gets [`SignIn::LockedOut`] without the password being
    /// checked. A wrong password counts one failed attempt (every concurrent
    /// failure is counted: the count is a compare-and-swap on the user row);
    /// the attempt that reaches the policy's maximum locks the user out and
    /// sets the count back to zero. A right password sets the count back to
    /// zero and answers [`SignIn::Succeeded`], or [`SignIn::TwoFactorRequired`]
    /// when the user has two-factor sign-in on. An unknown user name answers
    /// [`SignIn::Failed`] after the same work as a wrong password.
    pub async fn sign_in(&self, credentials: &Credentials) -> IdentityResult<SignIn> {
        let _ = credentials;
        todo!()
    }

    /// Sets a new password without the old one (an administrator's reset, or
    /// a reset by emailed token). Draws a new security stamp: every session
    /// made before it ends.
    pub async fn set_password(&self, id: &UserId, new_password: &str) -> IdentityResult<User> {
        let _ = (id, new_password);
        todo!()
    }

    /// Changes the password when `current` is the user's password
    /// ([`IdentityError::WrongPassword`](super::IdentityError::WrongPassword)
    /// otherwise). Draws a new security stamp: every session made before it
    /// ends. If the password changed between the check and the write (a
    /// concurrent change), this fails with `WrongPassword` and stores nothing.
    pub async fn change_password(&self, id: &UserId, current: &str, new_password: &str) -> IdentityResult<User> {
        let _ = (id, current, new_password);
        todo!()
    }

    /// Whether `password` is the user's password (no lockout bookkeeping).
    pub async fn check_password(&self, user: &User, password: &str) -> IdentityResult<bool> {
        let _ = (user, password);
        todo!()
    }
}
