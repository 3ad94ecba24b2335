//! The rows of the identity tables: one `TableEntity` per table. Their keys
//! are hashes (see `layout`), their columns named as ASP.NET Core Identity
//! names its properties.

use crate::{DateTime, ETag, Guid, TableEntity};

/// A user. PartitionKey: hash of the normalized user name; RowKey: `user`.
/// The row is its own user-name index: a second user of the same normalized
/// name meets this row's key. Its normalized email is a global unique index
/// (one holder across partitions, reserved before the row is written).
#[derive(TableEntity, Debug, Clone, PartialEq, Eq)]
#[table(name = "IdentityUsers")]
pub(super) struct UserRow {
    #[table(partition_key)]
    pub(super) pk: String,
    #[table(row_key)]
    pub(super) rk: String,
    pub(super) user_guid: Guid,
    pub(super) user_name: String,
    pub(super) normalized_user_name: String,
    pub(super) email: Option<String>,
    #[unique(global, protocol = "reserve", name = "email")]
    pub(super) normalized_email: Option<String>,
    pub(super) email_confirmed: bool,
    pub(super) password_hash: Option<String>,
    pub(super) security_stamp: String,
    pub(super) two_factor_enabled: bool,
    pub(super) lockout_end: Option<DateTime>,
    pub(super) access_failed_count: u32,
    pub(super) created_at: DateTime,
    #[table(etag)]
    pub(super) etag: Option<ETag>,
}

/// A role. PartitionKey: `roles`; RowKey: hash of the normalized name.
#[derive(TableEntity, Debug, Clone)]
#[table(name = "IdentityRoles")]
pub(super) struct RoleRow {
    #[table(partition_key)]
    pub(super) pk: String,
    #[table(row_key)]
    pub(super) rk: String,
    /// Drawn when the role is created: links and claims of an earlier role
    /// of the same name (deleted) carry another and are ignored.
    pub(super) role_guid: Guid,
    pub(super) name: String,
    pub(super) normalized_name: String,
    #[table(etag)]
    pub(super) etag: Option<ETag>,
}

/// A user's membership of a role. PartitionKey: the user id; RowKey: the role's key.
#[derive(TableEntity, Debug, Clone)]
#[table(name = "IdentityUserRoles")]
pub(super) struct UserRoleRow {
    #[table(partition_key)]
    pub(super) pk: String,
    #[table(row_key)]
    pub(super) rk: String,
    /// The role's key again, as a column the members query filters on.
    pub(super) role_key: String,
    /// The `role_guid` of the role when the link was made.
    pub(super) role_guid: Guid,
    pub(super) normalized_role_name: String,
}

/// A claim of a role or a user. PartitionKey: `{role key}:{role guid}` or
/// the user id; RowKey: the pair key of type and value.
#[derive(TableEntity, Debug, Clone)]
#[table(name = "IdentityUserClaims")]
pub(super) struct ClaimRow {
    #[table(partition_key)]
    pub(super) pk: String,
    #[table(row_key)]
    pub(super) rk: String,
    /// The pair key again, as a column the holders query filters on.
    pub(super) claim_key: String,
    pub(super) claim_type: String,
    pub(super) claim_value: String,
}

/// An external login. PartitionKey: the pair key of provider and provider
/// key; RowKey: `login`. The owner is a value, never part of the key, and the
/// row is only ever created: a second account cannot take it over.
#[derive(TableEntity, Debug, Clone)]
#[table(name = "IdentityUserLogins")]
pub(super) struct LoginRow {
    #[table(partition_key)]
    pub(super) pk: String,
    #[table(row_key)]
    pub(super) rk: String,
    pub(super) login_provider: String,
    pub(super) provider_key: String,
    pub(super) provider_display_name: Option<String>,
    pub(super) user_id: String,
    #[table(etag)]
    pub(super) etag: Option<ETag>,
}

/// A token. PartitionKey: the user id; RowKey: the pair key of provider and name.
#[derive(TableEntity, Debug, Clone)]
#[table(name = "IdentityUserTokens")]
pub(super) struct TokenRow {
    #[table(partition_key)]
    pub(super) pk: String,
    #[table(row_key)]
    pub(super) rk: String,
    pub(super) login_provider: String,
    pub(super) name: String,
    pub(super) value: String,
}
