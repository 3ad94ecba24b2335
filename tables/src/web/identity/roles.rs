//! Roles, user–role links and role claims (permissions).
//!
//! A role row lives in the one `roles` partition (so the list of roles is one
//! query, served by the read cache), keyed by the hash of its normalized
//! name, and carries a GUID drawn when it was created. Links and claims name
//! that GUID: after a role is deleted and created again under the same name,
//! nothing of the old role attaches to the new one, whatever the deletion
//! left behind.

use std::collections::HashSet;

use super::row_keys::{check_name, claim_key, normalize, role_key};
use super::rows::{ClaimRow, RoleRow, UserRoleRow};
use super::{Claim, Identity, IdentityError, IdentityResult, Role, User, UserId};
use crate::layout::IDENTITY_ROLES_PARTITION;
use crate::{ErrorKind, Guid, QueryOptions};

impl RoleRow {
    fn to_role(&self) -> Role {
        Role {
            name: self.name.clone(),
            normalized_name: self.normalized_name.clone(),
        }
    }

    /// The partition of this role's claims.
    fn claims_partition(&self) -> String {
        format!("{}:{}", self.rk, self.role_guid)
    }
}

impl ClaimRow {
    pub(super) fn new(pk: String, claim: &Claim) -> ClaimRow {
        let key = claim_key(&claim.claim_type, &claim.value);
        ClaimRow {
            pk,
            rk: key.clone(),
            claim_key: key,
            claim_type: claim.claim_type.clone(),
            claim_value: claim.value.clone(),
        }
    }

    pub(super) fn to_claim(&self) -> Claim {
        Claim::new(self.claim_type.clone(), self.claim_value.clone())
    }
}

impl Identity {
    async fn role_row(&self, name: &str) -> IdentityResult<Option<RoleRow>> {
        let key = role_key(&normalize(name));
        Ok(self.inner.roles.get((IDENTITY_ROLES_PARTITION, key.as_str())).await?)
    }

    async fn existing_role(&self, name: &str) -> IdentityResult<RoleRow> {
        self.role_row(name)
            .await?
            .ok_or_else(|| IdentityError::RoleNotFound(name.to_owned()))
    }

    /// Creates a role; [`IdentityError::DuplicateRole`] if one has the same
    /// name in any letter case, [`IdentityError::Invalid`] for an empty or
    /// overlong name.
    pub async fn create_role(&self, name: &str) -> IdentityResult<Role> {
        check_name("role", name)?;
        let normalized_name = normalize(name);
        let mut row = RoleRow {
            pk: IDENTITY_ROLES_PARTITION.to_owned(),
            rk: role_key(&normalized_name),
            role_guid: Guid::new_random(),
            name: name.to_owned(),
            normalized_name,
            etag: None,
        };
        match self.inner.roles.create(&mut row).await {
            Ok(_) => Ok(row.to_role()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Err(IdentityError::DuplicateRole),
            Err(e) => Err(e.into()),
        }
    }

    /// The role of this name (any letter case), or `None`.
    pub async fn role(&self, name: &str) -> IdentityResult<Option<Role>> {
        Ok(self.role_row(name).await?.map(|r| r.to_role()))
    }

    /// Every role.
    pub async fn roles(&self) -> IdentityResult<Vec<Role>> {
        let rows = self
            .inner
            .roles
            .query(QueryOptions::partition(IDENTITY_ROLES_PARTITION))
            .await?;
        Ok(rows.iter().map(RoleRow::to_role).collect())
    }

    /// Deletes a role: at once for every check (memberships and claims of it
    /// no longer count), then its claims and memberships are removed.
    /// `Ok(false)` if there was no such role.
    pub async fn delete_role(&self, name: &str) -> IdentityResult<bool> {
        let Some(role) = self.role_row(name).await? else {
            return Ok(false);
        };
        match self.inner.roles.delete_entity(&role).await {
            Ok(()) => {}
            Err(e) if super::users::lost(&e) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        self.inner
            .role_claims
            .delete_partition(&role.claims_partition())
            .await?;
        let links = self.links_of(&role).await?;
        for link in &links {
            self.inner
                .user_roles
                .delete((link.pk.as_str(), link.rk.as_str()))
                .await?;
        }
        Ok(true)
    }

    /// The links to this role (of this role's GUID): a query over the link table.
    async fn links_of(&self, role: &RoleRow) -> IdentityResult<Vec<UserRoleRow>> {
        let key = role.rk.as_str();
        let filter = UserRoleRow::filter(|c| c.role_key.eq(key));
        let links = self.inner.user_roles.query(QueryOptions::all().filter(filter)).await?;
        Ok(links.into_iter().filter(|l| l.role_guid == role.role_guid).collect())
    }

    /// Adds the user to a role. [`IdentityError::RoleNotFound`] when no
    /// role has that name, [`IdentityError::UserNotFound`] when no user has
    /// that id. Adding a member again is not an error.
    ///
    /// ```
    /// use unified_tables::web::identity::{Identity, IdentityError, NewUser};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let identity = Identity::new(&unified_tables::Tables::memory());
    /// let erin = identity.register(NewUser::new("erin").password("pw")).await?;
    /// let missing = identity.add_to_role(erin.id(), "auditor").await;
    /// assert!(matches!(missing, Err(IdentityError::RoleNotFound(ref r)) if r == "auditor"));
    /// assert!(!identity.is_in_role(erin.id(), "auditor").await?);      // the queries stay quiet
    /// identity.remove_from_role(erin.id(), "auditor").await?;
    /// assert!(identity.users_in_role("auditor").await?.is_empty());
    /// # Ok::<(), IdentityError>(())
    /// # }).unwrap();
    /// ```
    pub async fn add_to_role(&self, user: &UserId, role: &str) -> IdentityResult<()> {
        let role = self.existing_role(role).await?;
        if self.user_row(user).await?.is_none() {
            return Err(IdentityError::UserNotFound(user.clone()));
        }
        let mut link = UserRoleRow {
            pk: user.to_string(),
            rk: role.rk.clone(),
            role_key: role.rk.clone(),
            role_guid: role.role_guid,
            normalized_role_name: role.normalized_name.clone(),
        };
        self.inner.user_roles.upsert(&mut link).await?;
        Ok(())
    }

    /// Removes the user from a role; a missing role or membership is not an error.
    pub async fn remove_from_role(&self, user: &UserId, role: &str) -> IdentityResult<()> {
        let key = role_key(&normalize(role));
        self.inner.user_roles.delete((user.to_string(), key)).await?;
        Ok(())
    }

    /// Whether the user is a member of the role; `false` for a missing role.
    pub async fn is_in_role(&self, user: &UserId, role: &str) -> IdentityResult<bool> {
        let Some(role) = self.role_row(role).await? else {
            return Ok(false);
        };
        let link = self.inner.user_roles.get((user.to_string(), role.rk.clone())).await?;
        Ok(link.is_some_and(|l| l.role_guid == role.role_guid))
    }

    /// The roles the user is a member of, with their rows.
    async fn role_rows_of(&self, user: &UserId) -> IdentityResult<Vec<RoleRow>> {
        let links = self
            .inner
            .user_roles
            .query(QueryOptions::partition(user.to_string()))
            .await?;
        if links.is_empty() {
            return Ok(Vec::new());
        }
        let roles = self
            .inner
            .roles
            .query(QueryOptions::partition(IDENTITY_ROLES_PARTITION))
            .await?;
        Ok(roles
            .into_iter()
            .filter(|r| links.iter().any(|l| l.rk == r.rk && l.role_guid == r.role_guid))
            .collect())
    }

    /// The names (as created) of the user's roles.
    pub async fn roles_of(&self, user: &UserId) -> IdentityResult<Vec<String>> {
        Ok(self.role_rows_of(user).await?.into_iter().map(|r| r.name).collect())
    }

    /// The members of a role; empty for a missing role. Reads every
    /// user–role link whose role is this one (a query over the link table).
    pub async fn users_in_role(&self, role: &str) -> IdentityResult<Vec<User>> {
        let Some(role) = self.role_row(role).await? else {
            return Ok(Vec::new());
        };
        let links = self.links_of(&role).await?;
        let ids = links.into_iter().map(|l| l.pk);
        self.users_of(ids).await
    }

    /// Adds a claim to a role (again: no change). [`IdentityError::RoleNotFound`]
    /// when no role has that name. A claim of type [`Claim::PERMISSION`]
    /// grants its value as a permission to the role's members.
    pub async fn add_role_claim(&self, role: &str, claim: &Claim) -> IdentityResult<()> {
        let role = self.existing_role(role).await?;
        let mut row = ClaimRow::new(role.claims_partition(), claim);
        self.inner.role_claims.upsert(&mut row).await?;
        Ok(())
    }

    /// Removes a claim from a role; `Ok(false)` if it had none such (or there is no such role).
    pub async fn remove_role_claim(&self, role: &str, claim: &Claim) -> IdentityResult<bool> {
        let Some(role) = self.role_row(role).await? else {
            return Ok(false);
        };
        let key = claim_key(&claim.claim_type, &claim.value);
        Ok(self.inner.role_claims.delete((role.claims_partition(), key)).await?)
    }

    /// The claims of a role; empty for a missing role.
    pub async fn role_claims(&self, role: &str) -> IdentityResult<Vec<Claim>> {
        let Some(role) = self.role_row(role).await? else {
            return Ok(Vec::new());
        };
        let rows = self
            .inner
            .role_claims
            .query(QueryOptions::partition(role.claims_partition()))
            .await?;
        Ok(rows.iter().map(ClaimRow::to_claim).collect())
    }

    /// The permissions the user has through their roles: the values of the
    /// [`Claim::PERMISSION`] claims of every role they are a member of.
    pub async fn permissions(&self, user: &UserId) -> IdentityResult<HashSet<String>> {
        let mut permissions = HashSet::new();
        for role in self.role_rows_of(user).await? {
            let rows = self
                .inner
                .role_claims
                .query(QueryOptions::partition(role.claims_partition()))
                .await?;
            permissions.extend(
                rows.into_iter()
                    .filter(|c| c.claim_type == Claim::PERMISSION)
                    .map(|c| c.claim_value),
            );
        }
        Ok(permissions)
    }
}
