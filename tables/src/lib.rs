#![doc = include_str!("../docs/crate.md")]
#![warn(missing_docs, unreachable_pub, missing_debug_implementations)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The derives name this crate by its absolute path; inside it, that path is the crate itself.
extern crate self as unified_tables;

pub mod admin;
pub mod backend;
mod blob_container;
pub(crate) mod codec;
mod entity;
mod error;
pub mod guide;
pub mod index;
pub mod keys;
pub(crate) mod large;
pub mod layout;
mod named_stream;
mod options;
mod ordering;

pub mod lock;
pub mod query;
pub mod service;
mod soft_delete;
mod stamp;
mod store;
mod tables;
pub mod telemetry;
mod union;

pub mod update;
mod value;
#[cfg(any(feature = "tower-sessions", feature = "axum-login"))]
#[cfg_attr(docsrs, doc(cfg(any(feature = "tower-sessions", feature = "axum-login"))))]
pub mod web;

/// The README's Rust examples, compiled and run as doc tests (`cargo test --doc`).
/// `README.md` beside `Cargo.toml` is the workspace README (a link in the
/// repository, the file itself in the published package).
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// Shared by the crate's generated-input tests.
#[cfg(test)]
pub(crate) mod fuzz {
    /// The proptest configuration of generated-input tests: 256 cases, or
    /// `UNIFIED_TABLES_FUZZ_CASES`; failures are printed, never persisted.
    pub(crate) fn config() -> proptest::test_runner::Config {
        let cases = std::env::var("UNIFIED_TABLES_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256);
        proptest::test_runner::Config {
            cases,
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        }
    }
}

pub use backend::retry::{RetryPolicy, RetryPolicyBuilder};
pub use blob_container::{BlobContainer, Revalidated, StoredBlob};
pub use codec::{BlobContent, BlobContentStream};
pub use codec::{EncodeOptions, JsonValue, OversizedCellPolicy, TableValue};
pub use entity::{
    Column, ColumnKind, HasETag, IntoColumnValue, KeyMode, LargeEncoding, Schema, TableEntity, TableRecord,
};
pub use error::{redact, BoxError, Error, ErrorKind, KeyKind, Result, SweepFailure};
pub use ordering::{OrderedEntity, OrderingToken, TokenField};
pub use soft_delete::{DeletionStamp, DeletionStampIsSetBySoftDelete, SoftDelete};

pub use options::BlobOptions;
pub use options::{MutateAttempts, StoreOptions, SweepSchedule};
pub use stamp::{KeyPart, Stamp};
pub use store::union::{UnionColumns, UnionEntry, UnionPage, UnionQuery, UnionStore, UnionStream, UnionWrite};
pub use store::{
    AnyPartition, BuildIndexOptions, BuildStep, BuildSteps, ConvergeOptions, ConvergeStep, ConvergeSteps, Converged,
    Delivery, IndexCheckOptions, IndexFinding, IndexReport, OnePartition, PrefixNeedsAPartition, SweepReport,
    Visibility,
};
pub use store::{AppliedIntents, FailedIntent, IndexCursor, IndexLookup, IndexPage, IndexQuery, IndexStream};
pub use store::{
    CachePolicy, Concurrency, Count, Cursor, CursorKey, EntityPage, EntityStream, Lookup, Outcome, QueryOptions,
    ReadCache, ReadCacheBuilder, Store, DEFAULT_PAGE_SIZE,
};
pub use tables::{PoolOptions, ReshardOptions, ReshardReport, Tables};
#[doc = include_str!("../docs/table_entity.md")]
#[doc(inline)]
pub use unified_tables_derive::TableEntity;
#[doc = include_str!("../docs/table_enum.md")]
#[doc(inline)]
pub use unified_tables_derive::TableEnum;
#[doc = include_str!("../docs/table_record.md")]
#[doc(inline)]
pub use unified_tables_derive::TableRecord;
#[doc = include_str!("../docs/table_union.md")]
#[doc(inline)]
pub use unified_tables_derive::TableUnion;
pub use union::{TableUnion, UnionVariant};
pub use value::wire;
pub use value::{
    cmp_utf16, normalize_id, restore_id, sha256_hex, utf16_len, ColumnName, DateTime, ETag, EdmType, Guid, Key,
    ParseGuidError, Properties, Row, ToColumnName, Value,
};

/// Knobs the figures command turns to measure what a guarantee costs
/// (`cargo run --release --example figures`). Not a public API: a program
/// that turns one gives the guarantee up.
#[doc(hidden)]
pub mod __measure {
    pub use crate::tables::without_write_tokens;
}

/// Items the derive's generated code refers to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::codec::{concat_lists, join_each, joined_len, pick_names, split_joined, total_len};
    pub use crate::codec::{
        decode_binary, decode_in_row, decode_json, decode_optional_binary, encode_binary, encode_json, resolve_column,
        take_scalar_value, EncodeOptions, JoinedName, JsonValue, Prefix, TableValue, ValueKind,
    };
    pub use crate::codec::{decode_blob_ref, encode_blob_ref, BlobContent};
    pub use crate::entity::{
        protected_in, CloneProbe, Column, ColumnKind, HasETag, IntoColumnValue, KeyMode, LargeEncoding, LargeForm,
        ProbeClone, ProbeNoClone, Schema, TableEntity, TableRecord,
    };
    pub use crate::error::{Error, Result};
    pub use crate::index::{
        stored_cell, Global as GlobalIndex, Index, IndexDef, IndexKey, IndexValue, Local as LocalIndex, Projection,
        UniqueGlobal as UniqueGlobalIndex, UniqueLocal as UniqueLocalIndex,
    };
    pub use crate::large::{encode_large_bytes, encode_large_json, encode_large_json_value, encode_large_text};
    pub use crate::layout::JSON_SUFFIX;
    pub use crate::ordering::{OrderedEntity, OrderingToken, TokenField};
    pub use crate::query::{Col, Filterable, Nested, OptCol};
    pub use crate::query::{JsonCol, LargeCol, Selected, SkippedCol};
    pub use crate::soft_delete::{
        decode_deletion_stamp, encode_deletion_stamp, DeletionStamp, DeletionStampIsSetBySoftDelete, SoftDelete,
    };
    pub use crate::stamp::{KeyPart, Stamp};
    pub use crate::store::index::{find_global, find_local, get_global, get_local};
    pub use crate::store::Authorizer;
    pub use crate::store::{IndexQuery, Store};
    pub use crate::union::{TableUnion, UnionVariant};
    pub use crate::update::refusal::{
        ETagIsNotAColumn, KeysCannotBeUpdated, LargeFieldsCannotBePatched, MergeCannotClearAField,
        SkippedFieldsAreNotStored, TimestampIsSetByTheService,
    };
    pub use crate::update::{Authorized, MaySetProtected, RecordUpdater, Unauthorized, Update, UpdateBuilder};
    pub use crate::value::wire::{page_into, WireRow};
    pub use crate::value::{names_are_distinct, DateTime, ETag, EdmType, Properties, Row, Value};
    pub use crate::value::{normalize_id, restore_id, Key};
    pub use crate::{concat_names, joined_names};
    pub use core::default::Default;
    pub use core::option::Option::{self, None, Some};
    pub use core::result::Result::{Err, Ok};
    pub use futures::future::BoxFuture;
    pub use std::string::String;

    /// Error for a required column that is absent.
    pub fn absent_column(column: &str, type_name: &str) -> Error {
        crate::codec::absent(column, type_name)
    }

    /// The content of a required blob field, or an error naming its column.
    pub fn require_blob(content: Option<BlobContent>, column: &str) -> Result<BlobContent> {
        content.ok_or_else(|| crate::codec::absent(&crate::layout::blob_cell(column), "a blob reference"))
    }

    /// Writes a catch-all variant's row back as it was read: every column, its token included.
    pub fn write_raw_row(raw: &Row, row: &mut Row) {
        for (name, value) in &raw.properties {
            row.insert(name.clone(), value.clone());
        }
    }

    /// Error for an enum cell that names no variant.
    pub fn unknown_variant(column: &str, type_name: &str, found: &Value, variants: &[&str]) -> Error {
        Error::Decode {
            column: column.to_owned(),
            expected: format!("a {type_name} variant name ({})", variants.join(", ")),
            found: format!("{found:?}"),
        }
    }
}
