//! Attribute keywords, in one place.

pub(crate) const TABLE: &str = "table";
pub(crate) const ALIAS: &str = "alias";
pub(crate) const PROTECTED: &str = "protected";
pub(crate) const BLOB_CONTENT: &str = "blob_content";

// Container: #[table(name = "...")], #[table(ids = "normalized" | "as_written")], #[table(no_write_token)],
// #[table(no_inherent)]
pub(crate) const NAME: &str = "name";
pub(crate) const IDS: &str = "ids";
pub(crate) const NO_WRITE_TOKEN: &str = "no_write_token";
pub(crate) const NO_INHERENT: &str = "no_inherent";
pub(crate) const CONTAINER_KEYS: &[&str] = &[NAME, IDS, NO_WRITE_TOKEN, NO_INHERENT, INDEX];

// Secondary indexes: #[index(..)] / #[unique(..)] on a field,
// #[table(index(name = "..", fields(a, b), unique, global, protocol = "..", project(..)))] on the struct.
pub(crate) const INDEX: &str = "index";
pub(crate) const UNIQUE: &str = "unique";
pub(crate) const GLOBAL: &str = "global";
pub(crate) const PROTOCOL: &str = "protocol";
pub(crate) const PROJECT: &str = "project";
pub(crate) const FIELDS: &str = "fields";
pub(crate) const ALL: &str = "all";

// Field keys.
pub(crate) const PARTITION_KEY: &str = "partition_key";
pub(crate) const ROW_KEY: &str = "row_key";
pub(crate) const ID: &str = "id";
pub(crate) const RENAME: &str = "rename";
pub(crate) const SKIP: &str = "skip";
pub(crate) const FLATTEN: &str = "flatten";
pub(crate) const JSON: &str = "json";
pub(crate) const ETAG: &str = "etag";
pub(crate) const TIMESTAMP: &str = "timestamp";
pub(crate) const CREATED_AT: &str = "created_at";
pub(crate) const UPDATED_AT: &str = "updated_at";
pub(crate) const SPLIT: &str = "split";
pub(crate) const OFFLOAD: &str = "offload";
pub(crate) const SOFT_DELETE: &str = "soft_delete";
pub(crate) const ORDERING: &str = "ordering";
pub(crate) const FIELD_KEYS: &[&str] = &[
    PARTITION_KEY,
    ROW_KEY,
    ID,
    RENAME,
    SKIP,
    FLATTEN,
    JSON,
    ETAG,
    TIMESTAMP,
    CREATED_AT,
    UPDATED_AT,
    SPLIT,
    OFFLOAD,
    SOFT_DELETE,
    ORDERING,
];

// Enum variants: #[table(rename = "...")]
pub(crate) const VARIANT_KEYS: &[&str] = &[RENAME];

// Union variants: #[table(tag = "...")], #[table(also = ["...", ..])], #[table(other)]
pub(crate) const TAG: &str = "tag";
pub(crate) const ALSO: &str = "also";
pub(crate) const OTHER: &str = "other";
pub(crate) const UNION_VARIANT_KEYS: &[&str] = &[TAG, ALSO, OTHER];

/// Column names the service or this crate reserves.
pub(crate) const RESERVED_COLUMNS: &[&str] = &["PartitionKey", "RowKey", "Timestamp", "ETag"];
