//! The rows a pool of accounts keeps in each account: its descriptor, the
//! record of a reshard under way, and the lists of its tables and containers.

/// The table in each account of a pool that holds the pool's descriptor.
pub const POOL_TABLE: &str = "UnifiedTablesPool";
/// The descriptor row's PartitionKey.
pub const POOL_PARTITION: &str = "pool";
/// The descriptor row's RowKey.
pub const POOL_ROW: &str = "descriptor";
/// The descriptor's columns: the pool's id (lower-case hex, shared by every
/// account), its size (`Edm.Int32`), its accounts' names in pool order (a
/// JSON array) and this account's position in it (`Edm.Int32`).
pub const POOL_ID: &str = "PoolId";
/// See [`POOL_ID`].
pub const POOL_SIZE: &str = "Size";
/// See [`POOL_ID`].
pub const POOL_ACCOUNTS: &str = "Accounts";
/// See [`POOL_ID`].
pub const POOL_POSITION: &str = "Position";
/// The descriptor's epoch (`Edm.Int64`): 1 when the pool is first recorded,
/// one more at each step of a reshard that changes what a handle may write
/// (the freeze of the moving partitions, the switch to the grown pool). A
/// descriptor without the column is at epoch 0.
pub const POOL_EPOCH: &str = "Epoch";
/// On account 0's descriptor while a reshard is under way: the names of the
/// accounts the pool grows to (a JSON array). Writes to the partitions that
/// move are refused until the switch.
pub const POOL_GROWING_TO: &str = "GrowingTo";
/// On account 0's descriptor from a reshard's switch until the job has
/// removed the moved partitions from their old accounts: the names of the
/// accounts the pool grew from (a JSON array). Writes to the partitions
/// that moved are refused until then.
pub const POOL_GROWN_FROM: &str = "GrownFrom";
/// The RowKey, in [`POOL_PARTITION`] of account 0, of the record of a reshard
/// under way: its id, phase, old and new accounts, tables and containers.
pub const POOL_JOB_ROW: &str = "reshard";
/// The reshard record's columns: the job's id (lower-case hex), its phase
/// ([`POOL_PHASE_COPY`] or [`POOL_PHASE_REMOVE`]), the old and the new
/// accounts' names, the tables and the blob containers it moves (JSON arrays).
pub const POOL_JOB_ID: &str = "JobId";
/// See [`POOL_JOB_ID`].
pub const POOL_JOB_PHASE: &str = "Phase";
/// See [`POOL_JOB_ID`].
pub const POOL_JOB_FROM: &str = "From";
/// See [`POOL_JOB_ID`].
pub const POOL_JOB_TO: &str = "To";
/// See [`POOL_JOB_ID`].
pub const POOL_JOB_TABLES: &str = "Tables";
/// See [`POOL_JOB_ID`].
pub const POOL_JOB_CONTAINERS: &str = "Containers";
/// The reshard phase that copies the moving partitions (the pool's moving
/// partitions are frozen, the old pool still opens).
pub const POOL_PHASE_COPY: &str = "copy";
/// The reshard phase after the switch: the grown pool opens, and the moved
/// partitions are being removed from their old accounts (frozen until then,
/// see [`POOL_GROWN_FROM`]).
pub const POOL_PHASE_REMOVE: &str = "remove";
/// The partition of account 0's [`POOL_TABLE`] that lists the pool's tables,
/// one row each (RowKey: the table's name), recorded by a pooled handle
/// before it creates the table and before its first write to it; a reshard
/// moves every table listed.
pub const POOL_TABLES_PARTITION: &str = "tables";
/// Like [`POOL_TABLES_PARTITION`], for the blob containers of the pool.
pub const POOL_CONTAINERS_PARTITION: &str = "containers";
