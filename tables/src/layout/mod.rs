//! The on-storage layout: every cell suffix and system column this crate
//! writes, the continuation-row key shape, blob names and the blob reference
//! cell. Rows and blobs laid out here are the ones the .NET library
//! Unified.Data.Tables reads and writes, so tables can be shared.
//!
//! | cells of a field `Col` | what they hold |
//! |---|---|
//! | `Col` | a native cell (or a large value that fits one cell) |
//! | `Col__Json` | JSON text of a serde-stored value |
//! | `Col__GZip` | base64 of gzip over the JSON text, when it does not fit one cell |
//! | `Col__Truncated` | marker of a value trimmed under a trimming policy |
//! | `Col__c0` .. `Col__cN` | chunks of a split large value |
//! | `Col__chunks`, `Col__sha256`, `Col__enc`, `Col__len` | the manifest of a split value |
//! | `Col__blob` | the reference of a value or file stored as a blob |
//!
//! The main row of an entity with continuation rows holds `_SplitParts`;
//! continuation row `n` has the RowKey `{RowKey}~{n:04}` and the cells
//! `_SplitOf` (the main RowKey) and `_SplitIndex` (`n`).
//!
//! Every row the store writes as an entity's main row (and every row a union
//! store writes or merges) carries [`WRITE_TOKEN`], `_WriteToken`: 22
//! characters of base64 naming the write that stored this version. A write
//! whose answer is lost reads the row back and finds its own token there (or
//! not), so it is settled exactly once. The cell counts against the
//! service's 252 properties and 1 MiB like any other; readers skip it (the
//! .NET library skips every `_` column as a system column).
//!
//! Index rows of secondary indexes live under the reserved key prefix
//! [`INDEX_PREFIX`] and carry [`INDEX_OF`] (see
//! [`guide::secondary_indexes`](crate::guide::secondary_indexes)).
//!
//! A named lock is the blob of its name in the container
//! [`LOCK_CONTAINER`] (unless another is chosen); the blob's bytes are the
//! last fencing token handed out, in decimal ASCII (empty for none).

mod blobs;
mod index_rows;
mod pool;

pub use blobs::*;
pub use index_rows::*;
pub use pool::*;

use crate::value::{Row, Value};

// --- Cell suffixes ------------------------------------------------------------

/// Suffix of a JSON cell.
pub const JSON_SUFFIX: &str = "__Json";
/// Suffix of a gzip-compressed JSON cell.
pub const GZIP_SUFFIX: &str = "__GZip";
/// Suffix of the marker cell written when a value was trimmed.
pub const TRUNCATED_SUFFIX: &str = "__Truncated";
/// Suffix of a blob reference cell.
pub const BLOB_SUFFIX: &str = "__blob";
/// Suffix of a split value's chunk count.
pub const CHUNKS_SUFFIX: &str = "__chunks";
/// Suffix of a split value's SHA-256 (lower-case hex of the stored bytes).
pub const SHA256_SUFFIX: &str = "__sha256";
/// Suffix of a split value's encoding (`text`, `gzip`, `binary`, `utf16le`).
pub const ENC_SUFFIX: &str = "__enc";
/// Suffix of a split value's stored length in bytes.
pub const LEN_SUFFIX: &str = "__len";
/// Prefix of a chunk cell's suffix: `{Col}__c{n}`.
const CHUNK_SUFFIX: &str = "__c";

/// `{column}__Json`.
pub fn json_cell(column: &str) -> String {
    format!("{column}{JSON_SUFFIX}")
}

/// `{column}__GZip`.
pub fn gzip_cell(column: &str) -> String {
    format!("{column}{GZIP_SUFFIX}")
}

/// `{column}__Truncated`.
pub fn truncated_cell(column: &str) -> String {
    format!("{column}{TRUNCATED_SUFFIX}")
}

/// `{column}__blob`.
pub fn blob_cell(column: &str) -> String {
    format!("{column}{BLOB_SUFFIX}")
}

/// `{column}__c{index}`: chunk `index` (0-based) of a split value.
pub fn chunk_cell(column: &str, index: usize) -> String {
    format!("{column}{CHUNK_SUFFIX}{index}")
}

/// `{column}__chunks`.
pub fn chunks_cell(column: &str) -> String {
    format!("{column}{CHUNKS_SUFFIX}")
}

/// `{column}__sha256`.
pub fn sha256_cell(column: &str) -> String {
    format!("{column}{SHA256_SUFFIX}")
}

/// `{column}__enc`.
pub fn enc_cell(column: &str) -> String {
    format!("{column}{ENC_SUFFIX}")
}

/// `{column}__len`.
pub fn len_cell(column: &str) -> String {
    format!("{column}{LEN_SUFFIX}")
}

/// Whether `cell` is the column's own cell or one of its suffixed cells
/// (`{column}__…`).
pub fn is_cell_of(cell: &str, column: &str) -> bool {
    cell.strip_prefix(column)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("__"))
}

/// Whether a cell name is a blob reference (`…__blob`).
pub fn is_blob_cell(name: &str) -> bool {
    name.ends_with(BLOB_SUFFIX)
}

/// A cell of a split value, as named on storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitCell {
    /// `__c{n}`: chunk `n`.
    Chunk(usize),
    /// `__chunks`: the chunk count.
    Chunks,
    /// `__sha256`: the hash of the stored bytes.
    Sha256,
    /// `__enc`: the encoding.
    Enc,
    /// `__len`: the stored length.
    Len,
}

/// Which split cell of `column` the cell `name` is, if any.
pub fn split_cell(name: &str, column: &str) -> Option<SplitCell> {
    let rest = name.strip_prefix(column)?;
    split_suffix(rest)
}

/// Splits a cell name into its column and split cell, if it is one.
pub fn parse_split_cell(name: &str) -> Option<(&str, SplitCell)> {
    let at = name.rfind("__")?;
    split_suffix(&name[at..]).map(|cell| (&name[..at], cell))
}

fn split_suffix(rest: &str) -> Option<SplitCell> {
    match rest {
        CHUNKS_SUFFIX => Some(SplitCell::Chunks),
        SHA256_SUFFIX => Some(SplitCell::Sha256),
        ENC_SUFFIX => Some(SplitCell::Enc),
        LEN_SUFFIX => Some(SplitCell::Len),
        _ => {
            let digits = rest.strip_prefix(CHUNK_SUFFIX)?;
            if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse().ok().map(SplitCell::Chunk)
        }
    }
}

// --- Soft deletion -------------------------------------------------------------

/// What the deletion-stamp column of a `#[table(soft_delete)]` type holds
/// while the row is live: 1601-01-01T00:00:00Z, the earliest date the
/// service stores and the cell the .NET library writes for `default(DateTime)`.
/// A soft-deleted row holds the instant it was deleted, always later.
///
/// The column is always written, because the service never matches a
/// comparison on a property a row does not have (not even `ne`): only a
/// value that is present can select live rows server-side.
pub const NOT_DELETED: crate::value::DateTime = crate::value::DateTime::MIN_STORABLE;

// --- System columns and continuation rows -----------------------------------

/// Column of the main row holding the number of continuation rows.
pub const SPLIT_PARTS: &str = "_SplitParts";
/// Column of a continuation row naming its main row's RowKey.
pub const SPLIT_OF: &str = "_SplitOf";
/// Column of a continuation row holding its index (1-based).
pub const SPLIT_INDEX: &str = "_SplitIndex";
/// Most continuation rows an entity can have (four digits).
pub const MAX_CONTINUATION_ROWS: usize = 9_999;
/// Characters a continuation key adds to the main RowKey (`~0001`).
pub const CONTINUATION_SUFFIX_UNITS: usize = 5;

/// Column of an entity's main row holding the token of the write that
/// stored this version: 16 random bytes in URL-safe base64 without padding
/// ([`WRITE_TOKEN_CHARS`] characters), fresh for every write. A write whose
/// answer is lost or ambiguous reads the row back: its own token there
/// means it was applied. No reader takes it as a field.
pub const WRITE_TOKEN: &str = "_WriteToken";
/// Characters of a [`WRITE_TOKEN`] value.
pub const WRITE_TOKEN_CHARS: usize = 22;

/// The RowKey of continuation row `index` (1-based).
pub fn continuation_key(row_key: &str, index: usize) -> String {
    format!("{row_key}~{index:04}")
}

/// The number of continuation rows a main row declares, capped at
/// [`MAX_CONTINUATION_ROWS`] (a larger or non-positive number is damage, read as
/// the most an entity can have, so such a row stays deletable).
pub fn split_parts(row: &Row) -> usize {
    let declared = match row.get(SPLIT_PARTS) {
        Some(Value::Int32(n)) => i64::from(*n),
        Some(Value::Int64(n)) => *n,
        _ => 0,
    };
    usize::try_from(declared).map_or(0, |n| n.min(MAX_CONTINUATION_ROWS))
}

/// Whether a RowKey has the continuation shape: `~` and exactly four digits at the end.
pub fn is_continuation_key(row_key: &str) -> bool {
    let b = row_key.as_bytes();
    b.len() >= 5 && b[b.len() - 5] == b'~' && b[b.len() - 4..].iter().all(u8::is_ascii_digit)
}

// --- Identity rows (`web::identity`) -----------------------------------------------
//
// Keys never carry user text: a user name, an email, a role name, a claim, a
// login provider and key are hashed (SHA-256, lower-case hex), so any text a
// user types is a valid key.

/// The RowKey of a user row; its PartitionKey is the hash of the normalized user name.
pub const IDENTITY_USER_ROW_KEY: &str = "user";
/// The RowKey of an external login; its PartitionKey is [`identity_pair_key`] of provider and key.
pub const IDENTITY_LOGIN_ROW_KEY: &str = "login";
/// The PartitionKey of every role row; a role's RowKey is the hash of its normalized name.
pub const IDENTITY_ROLES_PARTITION: &str = "roles";
/// The table-name suffixes of the identity tables, after the prefix (default `Identity`):
/// users (with the rows of their email index), roles, user-role links, role claims,
/// user claims, logins, tokens.
pub const IDENTITY_TABLE_SUFFIXES: [&str; 7] = [
    "Users",
    "Roles",
    "UserRoles",
    "RoleClaims",
    "UserClaims",
    "UserLogins",
    "UserTokens",
];

/// The key of a piece of user text: the SHA-256 hex of its UTF-8 bytes.
pub fn identity_text_key(text: &str) -> String {
    crate::value::sha256_hex(text.as_bytes())
}

/// The key of a pair of texts (claim type and value, provider and key,
/// provider and token name): the SHA-256 hex of `{len(a)}:{a}{b}`, an
/// encoding in which no two pairs meet.
pub fn identity_pair_key(a: &str, b: &str) -> String {
    crate::value::sha256_hex(format!("{}:{a}{b}", a.len()).as_bytes())
}

// --- Polymorphic rows ------------------------------------------------------------

/// Column of a polymorphic (union) row naming the variant it holds: the
/// discriminator token. Marker rows have none.
pub const TYPE_NAME: &str = "_TypeName";
/// The first character of every system column (`_TypeName`, `_SplitParts`,
/// a marker row's flags); a payload's columns never start with it.
pub const SYSTEM_PREFIX: char = '_';

/// Whether a column is a system column (`_`-prefixed).
pub fn is_system_column(name: &str) -> bool {
    name.starts_with(SYSTEM_PREFIX)
}

/// The system columns this crate's layout reserves, which a caller's marker
/// or merged columns may not name.
pub const RESERVED_SYSTEM_COLUMNS: &[&str] = &[
    TYPE_NAME,
    SPLIT_PARTS,
    SPLIT_OF,
    SPLIT_INDEX,
    WRITE_TOKEN,
    INDEX_OF,
    INDEX_ON,
    INDEX_ROW,
    INDEX_PARTITION,
    INDEX_RESERVED_AT,
    INDEX_CONFIRMED,
    INDEX_KEYS,
];

// --- Locks ------------------------------------------------------------------------

/// The default container of named locks.
pub const LOCK_CONTAINER: &str = "unified-tables-locks";

/// The bytes of a lock blob holding fencing token `token`.
pub fn encode_fencing_token(token: u64) -> Vec<u8> {
    token.to_string().into_bytes()
}

/// The fencing token a lock blob holds (0 for an empty blob), or `None` when
/// its bytes are not a token.
pub fn decode_fencing_token(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return Some(0);
    }
    let text = std::str::from_utf8(bytes).ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

// --- Sessions -----------------------------------------------------------------------

/// The table a session store uses unless told otherwise (`web::sessions`).
pub const DEFAULT_SESSION_TABLE: &str = "Sessions";
/// The RowKey of every session record; its PartitionKey is the session id as
/// tower-sessions prints it (22 characters of URL-safe base64), so each
/// session is a partition of its own.
pub const SESSION_ROW_KEY: &str = "session";
/// The session record's expiry (`Edm.DateTime`), which the sweep filters on.
pub const SESSION_EXPIRY_COLUMN: &str = "ExpiresAt";
/// The session record's data: a split gzip JSON value (one cell, split cells,
/// continuation rows or a blob, by size).
pub const SESSION_DATA_COLUMN: &str = "Data";

#[cfg(test)]
mod tests {
    #[test]
    fn fencing_tokens_are_decimal_text() {
        assert_eq!(super::encode_fencing_token(42), b"42");
        assert_eq!(super::decode_fencing_token(b"42"), Some(42));
        assert_eq!(super::decode_fencing_token(b""), Some(0));
        for bad in [&b"-1"[..], b"4 2", b"x", b"99999999999999999999999", b" "] {
            assert_eq!(super::decode_fencing_token(bad), None, "{bad:?}");
        }
    }

    use super::*;
    use crate::error::Error;

    #[test]
    fn segments_never_fold() {
        assert_eq!(escape_segment("."), "%2E");
        assert_eq!(escape_segment(".."), "%2E%2E");
        assert_eq!(escape_segment(""), "%");
        assert_eq!(escape_segment("a/b c"), "a%2Fb%20c");
        assert_eq!(escape_segment("ü"), "%C3%BC");
        let sha = "a".repeat(64);
        let name = blob_name("Docs", "", ".", "Body", &sha);
        assert_eq!(name, format!("Docs/%/%2E/Body/{sha}"));
        assert!(is_offload_shape(&name));
        assert!(!is_offload_shape("Docs/p/r/Body/xyz"));
    }

    #[test]
    fn continuation_keys() {
        assert_eq!(continuation_key("r", 1), "r~0001");
        assert!(is_continuation_key("r~0001") && is_continuation_key("a~b~0042"));
        assert!(!is_continuation_key("a~b") && !is_continuation_key("x~12") && !is_continuation_key("a~0001x"));
    }

    #[test]
    fn split_cells_are_named_and_parsed_in_one_place() {
        assert_eq!(split_cell(&chunk_cell("Body", 12), "Body"), Some(SplitCell::Chunk(12)));
        assert_eq!(split_cell(&chunks_cell("Body"), "Body"), Some(SplitCell::Chunks));
        assert_eq!(split_cell(&sha256_cell("Body"), "Body"), Some(SplitCell::Sha256));
        assert_eq!(split_cell(&enc_cell("Body"), "Body"), Some(SplitCell::Enc));
        assert_eq!(split_cell(&len_cell("Body"), "Body"), Some(SplitCell::Len));
        assert_eq!(split_cell("Body__c", "Body"), None);
        assert_eq!(split_cell("Body__cx", "Body"), None);
        assert_eq!(split_cell("Body__Json", "Body"), None);
        assert_eq!(split_cell("Bodyx__c0", "Body"), None);
        assert_eq!(
            parse_split_cell("Doc_Body__c3"),
            Some(("Doc_Body", SplitCell::Chunk(3)))
        );
        assert_eq!(parse_split_cell("Body__blob"), None);
    }

    #[test]
    fn blob_refs_round_trip() {
        let r = BlobRef {
            path: "T/p/r/Body/abc".into(),
            sha256: "abc".into(),
            length: 3,
            content_type: None,
            encoding: Some("gzip".into()),
        };
        assert_eq!(
            r.to_cell(),
            r#"{"path":"T/p/r/Body/abc","sha256":"abc","length":3,"encoding":"gzip"}"#
        );
        assert_eq!(BlobRef::parse("Body__blob", &r.to_cell()).unwrap(), r);
        assert!(matches!(BlobRef::parse("Body__blob", "{}"), Err(Error::Decode { .. })));
        let other_casing = r#"{"Path":"T/p/r/Body/abc","SHA256":"abc","Length":3,"ContentType":"text/plain"}"#;
        let parsed = BlobRef::parse("Body__blob", other_casing).unwrap();
        assert_eq!((parsed.length, parsed.content_type.as_deref()), (3, Some("text/plain")));
    }
}
