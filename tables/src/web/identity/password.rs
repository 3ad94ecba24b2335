//! Password hashing and verification with `password-auth` (argon2), each on
//! a blocking thread so that the runtime's workers keep serving requests.

use std::sync::OnceLock;

use super::{IdentityError, IdentityResult};

fn joined(e: tokio::task::JoinError) -> IdentityError {
    IdentityError::Hashing(e)
}

/// A PHC hash string of `password`.
pub(super) async fn hash(password: &str) -> IdentityResult<String> {
    let password = password.to_owned();
    tokio::task::spawn_blocking(move || password_auth::generate_hash(password))
        .await
        .map_err(joined)
}

/// Whether `password` matches `hash`. A hash that does not parse matches nothing.
pub(super) async fn verify(password: &str, hash: &str) -> IdentityResult<bool> {
    let (password, hash) = (password.to_owned(), hash.to_owned());
    tokio::task::spawn_blocking(move || password_auth::verify_password(password, &hash).is_ok())
        .await
        .map_err(joined)
}

/// Verifies `password` against a hash no password matches: the work a
/// wrong password costs, spent when there is no user to check, so the
/// answer's timing does not tell which user names exist.
pub(super) async fn verify_nothing(password: &str) -> IdentityResult<()> {
    static DUMMY: OnceLock<String> = OnceLock::new();
    let dummy = match DUMMY.get() {
        Some(d) => d.clone(),
        None => {
            let made = hash(&crate::Guid::new_random().to_string()).await?;
            DUMMY.get_or_init(|| made).clone()
        }
    };
    verify(password, &dummy).await.map(|_| ())
}
