//! User claims: a partition per user, a row per claim keyed by the hash of
//! its type and value (so any text is a valid claim, and adding one twice
//! stores one row).

use super::row_keys::claim_key;
use super::rows::ClaimRow;
use super::{Claim, Identity, IdentityError, IdentityResult, User, UserId};
use crate::store::QueryOptions;

impl Identity {
    /// Adds a claim to the user (again: no change).
    /// [`IdentityError::UserNotFound`] when no user has that id.
    ///
    /// ```
    /// use unified_tables::web::identity::{Claim, Identity, NewUser};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let identity = Identity::new(&unified_tables::Tables::memory());
    /// let frank = identity.register(NewUser::new("frank").password("pw")).await?;
    /// let claim = Claim::new("office", "Kyiv/2#?");                  // any text
    /// identity.add_claim(frank.id(), &claim).await?;
    /// assert_eq!(identity.claims(frank.id()).await?, vec![claim.clone()]);
    /// assert_eq!(identity.users_with_claim(&claim).await?.len(), 1);
    /// # Ok::<(), unified_tables::web::identity::IdentityError>(())
    /// # }).unwrap();
    /// ```
    pub async fn add_claim(&self, user: &UserId, claim: &Claim) -> IdentityResult<()> {
        if self.user_row(user).await?.is_none() {
            return Err(IdentityError::UserNotFound(user.clone()));
        }
        let mut row = ClaimRow::new(user.to_string(), claim);
        self.inner.user_claims.upsert(&mut row).await?;
        Ok(())
    }

    /// Removes a claim from the user; `Ok(false)` if they had none such.
    pub async fn remove_claim(&self, user: &UserId, claim: &Claim) -> IdentityResult<bool> {
        let key = claim_key(&claim.claim_type, &claim.value);
        Ok(self.inner.user_claims.delete((user.to_string(), key)).await?)
    }

    /// The user's claims.
    pub async fn claims(&self, user: &UserId) -> IdentityResult<Vec<Claim>> {
        let rows = self
            .inner
            .user_claims
            .query(QueryOptions::partition(user.to_string()))
            .await?;
        Ok(rows.iter().map(ClaimRow::to_claim).collect())
    }

    /// The users who hold this claim (a query over the claim table).
    pub async fn users_with_claim(&self, claim: &Claim) -> IdentityResult<Vec<User>> {
        let key = claim_key(&claim.claim_type, &claim.value);
        let rows = self
            .inner
            .user_claims
            .query(QueryOptions::all().filter(ClaimRow::filter(|c| c.claim_key.eq(key.as_str()))))
            .await?;
        self.users_of(rows.into_iter().map(|r| r.pk)).await
    }
}
