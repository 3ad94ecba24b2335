//! User claims.

use super::{Claim, Identity, IdentityResult, User, UserId};

impl Identity {
    /// Adds a claim to the user (again: no change).
    /// [`IdentityError::UserNotFound`](super::IdentityError::UserNotFound) when no user has that id.
    pub async fn add_claim(&self, user: &UserId, claim: &Claim) -> IdentityResult<()> {
        let _ = (user, claim);
        todo!()
    }

    /// Removes a claim from the user; `Ok(false)` if they had none such.
    pub async fn remove_claim(&self, user: &UserId, claim: &Claim) -> IdentityResult<bool> {
        let _ = (user, claim);
        todo!()
    }

    /// The user's claims.
    pub async fn claims(&self, user: &UserId) -> IdentityResult<Vec<Claim>> {
        let _ = user;
        todo!()
    }

    /// The users who hold this claim (a query over the claim table).
    pub async fn users_with_claim(&self, claim: &Claim) -> IdentityResult<Vec<User>> {
        let _ = claim;
        todo!()
    }
}
