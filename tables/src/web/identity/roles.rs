//! Roles, user–role links and role claims (permissions).

use std::collections::HashSet;

use super::{Claim, Identity, IdentityResult, Role, User, UserId};

impl Identity {
    /// Creates a role; [`IdentityError::DuplicateRole`](super::IdentityError::DuplicateRole)
    /// if one has the same name in any letter case.
    pub async fn create_role(&self, name: &str) -> IdentityResult<Role> {
        let _ = name;
        todo!()
    }

    /// The role of this name (any letter case), or `None`.
    pub async fn role(&self, name: &str) -> IdentityResult<Option<Role>> {
        let _ = name;
        todo!()
    }

    /// Every role.
    pub async fn roles(&self) -> IdentityResult<Vec<Role>> {
        todo!()
    }

    /// Deletes a role, its claims and every user's membership of it.
    /// `Ok(false)` if there was no such role.
    pub async fn delete_role(&self, name: &str) -> IdentityResult<bool> {
        let _ = name;
        todo!()
    }

    /// Adds the user to a role.
    /// [`IdentityError::RoleNotFound`](super::IdentityError::RoleNotFound) when
    /// no role has that name, [`UserNotFound`](super::IdentityError::UserNotFound)
    /// when no user has that id. Adding a member again is not an error.
    pub async fn add_to_role(&self, user: &UserId, role: &str) -> IdentityResult<()> {
        let _ = (user, role);
        todo!()
    }

    /// Removes the user from a role; a missing role or membership is not an error.
    pub async fn remove_from_role(&self, user: &UserId, role: &str) -> IdentityResult<()> {
        let _ = (user, role);
        todo!()
    }

    /// Whether the user is a member of the role; `false` for a missing role.
    pub async fn is_in_role(&self, user: &UserId, role: &str) -> IdentityResult<bool> {
        let _ = (user, role);
        todo!()
    }

    /// The names (as created) of the user's roles.
    pub async fn roles_of(&self, user: &UserId) -> IdentityResult<Vec<String>> {
        let _ = user;
        todo!()
    }

    /// The members of a role; empty for a missing role. Reads every
    /// user–role link whose role is this one (a query over the link table).
    pub async fn users_in_role(&self, role: &str) -> IdentityResult<Vec<User>> {
        let _ = role;
        todo!()
    }

    /// Adds a claim to a role (again: no change).
    /// [`IdentityError::RoleNotFound`](super::IdentityError::RoleNotFound) when
    /// no role has that name. A claim of type [`Claim::PERMISSION`] grants its
    /// value as a permission to the role's members.
    pub async fn add_role_claim(&self, role: &str, claim: &Claim) -> IdentityResult<()> {
        let _ = (role, claim);
        todo!()
    }

    /// Removes a claim from a role; `Ok(false)` if it had none such.
    pub async fn remove_role_claim(&self, role: &str, claim: &Claim) -> IdentityResult<bool> {
        let _ = (role, claim);
        todo!()
    }

    /// The claims of a role; empty for a missing role.
    pub async fn role_claims(&self, role: &str) -> IdentityResult<Vec<Claim>> {
        let _ = role;
        todo!()
    }

    /// The permissions the user has through their roles: the values of the
    /// [`Claim::PERMISSION`] claims of every role they are a member of.
    pub async fn permissions(&self, user: &UserId) -> IdentityResult<HashSet<String>> {
        let _ = user;
        todo!()
    }
}
