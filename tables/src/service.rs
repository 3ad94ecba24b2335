//! The limits and name rules of the table and blob services.
//!
//! Every layer that needs one of these facts (the in-memory backend that
//! enforces them, the planner that stays within them, the store that refuses
//! a write before sending it) reads it from here.

use crate::error::{Error, KeyKind, Result};
use crate::value::{utf16_len, Key, Row};

// --- Tables ----------------------------------------------------------------

/// The longest the service works on one table operation once it has the
/// request: past it, it answers 500 `OperationTimedOut`, and the operation
/// may still complete (a write in flight can land up to this long after
/// it reached the service).
pub const SERVER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The longest key the service accepts, in UTF-16 units.
pub const MAX_KEY_UNITS: usize = 1024;
/// The most custom properties an entity may have.
pub const MAX_PROPERTIES: usize = 252;
/// The largest entity the service accepts, measured with its size formula.
pub const MAX_ENTITY_BYTES: usize = 1_048_488;
/// The most bytes one string or binary cell may hold (strings count 2 bytes per UTF-16 unit).
pub const MAX_CELL_BYTES: usize = 65_535;
/// The longest property name the service accepts, in UTF-16 units.
pub const MAX_PROPERTY_NAME_UNITS: usize = 255;
/// The most operations one entity-group transaction may hold.
pub const MAX_TRANSACTION_OPS: usize = 100;
/// The largest request body of one entity-group transaction.
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;
/// The most entities one query page returns.
pub const MAX_PAGE_SIZE: u32 = 1000;

/// Whether the service refuses this character in a key.
pub fn is_refused_key_char(c: char) -> bool {
    matches!(c, '/' | '\\' | '#' | '?') || matches!(c as u32, 0x00..=0x1F | 0x7F..=0x9F)
}

/// Checks one key against the service's rules.
pub fn validate_key(which: KeyKind, key: &str) -> Result<()> {
    let units = utf16_len(key);
    if units > MAX_KEY_UNITS {
        return Err(Error::InvalidKey {
            which,
            key: shown(key),
            reason: format!("it is {units} UTF-16 units long and the service allows at most {MAX_KEY_UNITS}"),
        });
    }
    if let Some(c) = key.chars().find(|c| is_refused_key_char(*c)) {
        return Err(Error::InvalidKey {
            which,
            key: shown(key),
            reason: format!(
                "it contains {c:?}; keys may not contain '/', '\\', '#', '?' or control characters (encode them, e.g. replace '/' with another separator)"
            ),
        });
    }
    Ok(())
}

impl Key {
    /// Checks both keys against the service's rules: at most 1024 UTF-16
    /// units, none of `/ \ # ?`, no control characters (U+0000..U+001F,
    /// U+007F..U+009F).
    pub fn validate(&self) -> Result<()> {
        validate_key(KeyKind::PartitionKey, &self.partition_key)?;
        validate_key(KeyKind::RowKey, &self.row_key)
    }
}

/// A key or name for a message: its first 64 characters.
pub(crate) fn shown(text: &str) -> String {
    const MAX_SHOWN: usize = 64;
    if text.chars().count() <= MAX_SHOWN {
        text.to_owned()
    } else {
        let head: String = text.chars().take(MAX_SHOWN).collect();
        format!("{head}…")
    }
}

/// The smallest string greater than every string starting with `prefix`,
/// in the service's ordinal UTF-16 order of keys: drop trailing U+FFFF units
/// and increment the last remaining UTF-16 unit. `None` when the prefix is
/// all U+FFFF.
pub fn next_prefix(prefix: &str) -> Option<String> {
    let mut units: Vec<u16> = prefix.encode_utf16().collect();
    while let Some(&last) = units.last() {
        if last == 0xFFFF {
            units.pop();
            continue;
        }
        *units.last_mut()? = last + 1;
        return Some(String::from_utf16_lossy(&units));
    }
    None
}

/// Checks a table name: `^[A-Za-z][A-Za-z0-9]{2,62}$`, not `tables`.
pub fn check_table_name(name: &str) -> Result<()> {
    let ok = (3..=63).contains(&name.len())
        && name.as_bytes()[0].is_ascii_alphabetic()
        && name.bytes().all(|b| b.is_ascii_alphanumeric())
        && !name.eq_ignore_ascii_case("tables");
    if ok {
        Ok(())
    } else {
        Err(Error::config(format!(
            "`{name}` is not a valid table name: use 3 to 63 letters and digits, starting with a letter (and not `tables`)"
        )))
    }
}

/// Refuses a row that breaks the property-count or entity-size limit.
pub(crate) fn check_row_limits(row: &Row) -> Result<()> {
    if row.properties.len() > MAX_PROPERTIES {
        return Err(Error::LimitExceeded {
            limit: "TooManyProperties",
            detail: format!(
                "the entity has {} properties and the service allows at most {MAX_PROPERTIES}; skip fields, or group some into one JSON field",
                row.properties.len()
            ),
        });
    }
    let size = row.stored_size();
    if size > MAX_ENTITY_BYTES {
        let largest = row
            .properties
            .iter()
            .max_by_key(|(_, v)| v.stored_size())
            .map(|(k, v)| format!(" (largest column: `{k}`, {} bytes)", v.stored_size()))
            .unwrap_or_default();
        return Err(Error::LimitExceeded {
            limit: "EntityTooLarge",
            detail: format!(
                "the entity is {size} bytes and the service allows at most {MAX_ENTITY_BYTES}{largest}; mark large fields #[table(split = ..)]"
            ),
        });
    }
    Ok(())
}

// --- Blobs -----------------------------------------------------------------

/// The longest blob name the service accepts, in characters (UTF-16 units).
pub const MAX_BLOB_NAME_UNITS: usize = 1024;
/// The most `/`-separated segments a blob name may have.
pub const MAX_BLOB_NAME_SEGMENTS: usize = 254;
/// The most results one blob listing page holds (and the default).
pub const MAX_LIST_RESULTS: u32 = 5000;
/// The largest single Put Blob the service accepts (5000 MiB).
pub const MAX_PUT_BLOB_BYTES: u64 = 5000 * 1024 * 1024;
/// The Content-Type the service stores when a put gives none.
pub const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

/// The error code of a 404 that says the entity asked for does not exist
/// (not its table): for a read, an answer.
pub(crate) const ENTITY_NOT_FOUND: &str = "ResourceNotFound";
/// The error code of a 404 that says the blob asked for does not exist (not
/// its container): for a read, an answer.
pub(crate) const BLOB_NOT_FOUND: &str = "BlobNotFound";

/// A blob name as the service stores it: `\` turned into `/`, `.` and `..`
/// segments resolved, and checked against the naming rules. Both backends
/// address blobs only through this type, so they agree on every name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobName(String);

impl BlobName {
    /// The name under which the service stores the blob addressed as `name`,
    /// or the 400 `InvalidUri` error the service gives.
    ///
    /// The service resolves the request path: a `\` becomes `/`, a `.`
    /// segment is dropped and a `..` segment removes the segment before it
    /// (`./key`, `a/./key` and `a/../key` store to `key`, `a/key` and `key`).
    /// Refused: a name that is empty after folding, one whose `..` would
    /// climb out of the container, one longer than 1024 characters or with
    /// more than 254 segments, and one that starts or ends with `/` (such a
    /// blob cannot be addressed the same way through every client).
    ///
    /// ```
    /// use unified_tables::service::BlobName;
    /// assert_eq!(BlobName::parse("./key").unwrap().as_str(), "key");
    /// assert_eq!(BlobName::parse("a/./b").unwrap().as_str(), "a/b");
    /// assert_eq!(BlobName::parse("a/../b").unwrap().as_str(), "b");
    /// assert_eq!(BlobName::parse(r"a\b").unwrap().as_str(), "a/b");
    /// assert!(BlobName::parse("../b").is_err());
    /// ```
    pub fn parse(name: &str) -> Result<BlobName> {
        let replaced = name.replace('\\', "/");
        let segments: Vec<&str> = replaced.split('/').collect();
        let last = segments.len() - 1;
        let mut folded: Vec<&str> = Vec::with_capacity(segments.len());
        for (index, segment) in segments.into_iter().enumerate() {
            match segment {
                "." => {}
                ".." => {
                    if folded.pop().is_none() {
                        return Err(invalid_blob_name(
                            name,
                            "a `..` segment would leave the container; remove it",
                        ));
                    }
                }
                other => {
                    folded.push(other);
                    continue;
                }
            }
            // A dot segment at the end leaves the path ending with `/`.
            if index == last {
                folded.push("");
            }
        }
        let canonical = folded.join("/");
        if canonical.is_empty() {
            return Err(invalid_blob_name(name, "a blob name needs at least one character"));
        }
        let units = utf16_len(&canonical);
        if units > MAX_BLOB_NAME_UNITS {
            return Err(invalid_blob_name(
                name,
                &format!("a blob name may have at most {MAX_BLOB_NAME_UNITS} characters, this one has {units}"),
            ));
        }
        if canonical.starts_with('/') || canonical.ends_with('/') {
            return Err(invalid_blob_name(
                name,
                "a blob name may not start or end with `/` (after folding `.` and `..` segments)",
            ));
        }
        let count = folded.len();
        if count > MAX_BLOB_NAME_SEGMENTS {
            return Err(invalid_blob_name(
                name,
                &format!("a blob name may have at most {MAX_BLOB_NAME_SEGMENTS} segments, this one has {count}"),
            ));
        }
        Ok(BlobName(canonical))
    }

    /// The name as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Display for BlobName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn invalid_blob_name(name: &str, reason: &str) -> Error {
    let more = if name.chars().count() > 64 { "…" } else { "" };
    let head: String = name.chars().take(64).collect();
    Error::service(
        400,
        "InvalidUri",
        format!("The requested URI does not represent any resource on the server: blob name `{head}{more}`: {reason}."),
    )
}

/// The service's container naming rules: 3–63 characters of lower-case
/// letters, digits and dashes, starting and ending with a letter or digit,
/// no two dashes in a row (400 `InvalidResourceName` otherwise).
pub fn check_container_name(name: &str) -> Result<()> {
    let bytes = name.as_bytes();
    let valid = (3..=63).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
        && !name.contains("--");
    if valid {
        Ok(())
    } else {
        Err(Error::service(
            400,
            "InvalidResourceName",
            format!(
                "The specified resource name contains invalid characters: container `{name}` (3-63 lower-case letters, digits and single dashes, starting and ending with a letter or digit)."
            ),
        ))
    }
}

// --- Service profiles --------------------------------------------------------

/// Which service answers the table protocol. Both speak the same REST API;
/// they differ in limits, in the order of query results, in how a query is
/// resumed and in how they say "slow down". Every check the crate makes
/// before sending, and every read that needs key order, asks the profile of
/// the backend it talks to ([`Backend::profile`](crate::backend::Backend::profile)).
///
/// | | [`TableStorage`](ServiceProfile::TableStorage) | [`CosmosTable`](ServiceProfile::CosmosTable) |
/// |---|---|---|
/// | query results | in (PartitionKey, RowKey) order | in no order |
/// | RowKey | 1,024 UTF-16 units | also at most 255 bytes of UTF-8 |
/// | transaction body | 4 MiB | 2 MB |
/// | reserved property names | `PartitionKey`, `RowKey`, `Timestamp` | also `id`, `rid`, `etag`, `ResourceId`, `ETag` |
/// | table names | case-insensitive | case-sensitive |
/// | throttling | 503 `ServerBusy` | 429 with `x-ms-retry-after-ms` |
/// | blobs | same account | none: a separate storage account |
///
/// ```
/// use unified_tables::service::ServiceProfile;
///
/// let cosmos = ServiceProfile::from_table_host("orders.table.cosmos.azure.com");
/// assert_eq!(cosmos, ServiceProfile::CosmosTable);
/// assert!(!cosmos.sorts_results());
/// assert_eq!(cosmos.max_transaction_bytes(), 2_000_000);
/// assert!(cosmos.check_property_name("id").is_err());
/// assert!(ServiceProfile::TableStorage.check_property_name("id").is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ServiceProfile {
    /// Azure Table Storage (a storage account, or Azurite).
    #[default]
    TableStorage,
    /// Azure Cosmos DB for Table.
    CosmosTable,
}

/// The longest RowKey Cosmos DB for Table accepts, in bytes of UTF-8.
pub const COSMOS_MAX_ROW_KEY_BYTES: usize = 255;
/// The largest request body of one Cosmos DB for Table transaction.
pub const COSMOS_MAX_TRANSACTION_BYTES: usize = 2_000_000;
/// Property names Cosmos DB for Table keeps for itself, besides the system
/// properties of both services.
pub const COSMOS_RESERVED_NAMES: [&str; 5] = ["id", "rid", "etag", "ResourceId", "ETag"];
/// The host suffix of Cosmos DB for Table endpoints.
pub const COSMOS_TABLE_HOST_SUFFIX: &str = ".table.cosmos.azure.com";
/// The status Cosmos DB for Table answers a throttled request with.
pub const COSMOS_THROTTLED_STATUS: u16 = 429;
/// The error code of Cosmos DB for Table's throttling answer.
pub const COSMOS_THROTTLED_CODE: &str = "TooManyRequests";
/// The header that says how long to wait after a 429, in milliseconds.
pub const RETRY_AFTER_MS_HEADER: &str = "x-ms-retry-after-ms";
/// The header carrying a Cosmos DB request's cost in request units.
pub const REQUEST_CHARGE_HEADER: &str = "x-ms-request-charge";

impl ServiceProfile {
    /// The profile of a table endpoint's host: Cosmos DB for Table for a
    /// host ending in `.table.cosmos.azure.com`, Table Storage otherwise.
    /// A custom domain in front of Cosmos needs the profile named
    /// explicitly.
    pub fn from_table_host(host: &str) -> ServiceProfile {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        if host.ends_with(COSMOS_TABLE_HOST_SUFFIX) {
            ServiceProfile::CosmosTable
        } else {
            ServiceProfile::TableStorage
        }
    }

    /// A short name for messages and telemetry: `table_storage` or `cosmos_table`.
    pub fn name(self) -> &'static str {
        match self {
            ServiceProfile::TableStorage => "table_storage",
            ServiceProfile::CosmosTable => "cosmos_table",
        }
    }

    /// Whether query results come back in (PartitionKey, RowKey) order, and
    /// a `$top` query returns the first matches in that order. When not,
    /// a read that needs order reads every match and orders them itself.
    pub fn sorts_results(self) -> bool {
        self == ServiceProfile::TableStorage
    }

    /// Whether the service compares table names with their case.
    pub fn table_names_are_case_sensitive(self) -> bool {
        self == ServiceProfile::CosmosTable
    }

    /// Whether the service keeps blobs beside its tables (one account, one
    /// connection string); Cosmos DB for Table needs a storage account of
    /// its own for them.
    pub fn has_blobs(self) -> bool {
        self == ServiceProfile::TableStorage
    }

    /// The largest request body of one entity-group transaction.
    pub fn max_transaction_bytes(self) -> usize {
        match self {
            ServiceProfile::TableStorage => MAX_TRANSACTION_BYTES,
            ServiceProfile::CosmosTable => COSMOS_MAX_TRANSACTION_BYTES,
        }
    }

    /// The budget the crate packs a transaction's rows into: the service's
    /// limit less a margin for the multipart envelope's fixed parts.
    pub fn transaction_body_budget(self) -> usize {
        self.max_transaction_bytes() - 64 * 1024
    }

    /// Property names the service refuses besides the system properties.
    pub fn reserved_names(self) -> &'static [&'static str] {
        match self {
            ServiceProfile::TableStorage => &[],
            ServiceProfile::CosmosTable => &COSMOS_RESERVED_NAMES,
        }
    }

    /// Refuses a property name this service keeps for itself, naming it
    /// and what to do.
    pub fn check_property_name(self, name: &str) -> Result<()> {
        if self.reserved_names().contains(&name) {
            return Err(Error::config(format!(
                "the column `{name}` has a name {} keeps for itself ({}); rename the field's column, e.g. #[table(rename = \"{name}_\")]",
                self.service_name(),
                self.reserved_names().join(", ")
            )));
        }
        Ok(())
    }

    /// Checks one key against this service's rules: the rules of
    /// [`validate_key`], and on Cosmos DB for Table a RowKey of at most 255
    /// bytes.
    pub fn validate_key(self, which: KeyKind, key: &str) -> Result<()> {
        validate_key(which, key)?;
        if self == ServiceProfile::CosmosTable && which == KeyKind::RowKey && key.len() > COSMOS_MAX_ROW_KEY_BYTES {
            return Err(Error::InvalidKey {
                which,
                key: shown(key),
                reason: format!(
                    "it is {} bytes long and Cosmos DB for Table allows at most {COSMOS_MAX_ROW_KEY_BYTES} bytes in a RowKey; use a shorter key (or a hash of it)",
                    key.len()
                ),
            });
        }
        Ok(())
    }

    /// Checks a row before it is sent: both keys and the reserved names.
    pub fn check_row(self, row: &Row) -> Result<()> {
        self.validate_key(KeyKind::PartitionKey, &row.partition_key)?;
        self.validate_key(KeyKind::RowKey, &row.row_key)?;
        if self != ServiceProfile::TableStorage {
            for name in row.properties.keys() {
                self.check_property_name(name)?;
            }
        }
        Ok(())
    }

    /// Whether an answer with this status and code asks the client to slow
    /// down (the request was not processed).
    pub fn is_throttled(self, status: u16, code: &str) -> bool {
        status == COSMOS_THROTTLED_STATUS || (status == 503 && code == "ServerBusy")
    }

    fn service_name(self) -> &'static str {
        match self {
            ServiceProfile::TableStorage => "Azure Table Storage",
            ServiceProfile::CosmosTable => "Cosmos DB for Table",
        }
    }
}

impl std::fmt::Display for ServiceProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.service_name())
    }
}
