//! The traits the derives implement, and the column metadata they generate.

use crate::codec::{EncodeOptions, Prefix, ValueKind};
use crate::error::Result;
use crate::value::{DateTime, ETag, Row};

/// A struct stored as one row of a table. Implement it with
/// [`#[derive(TableEntity)]`](derive@crate::TableEntity), whose page documents every attribute.
///
/// ```
/// use unified_tables::{TableEntity, ETag};
///
/// #[derive(TableEntity, Debug, Clone, PartialEq)]
/// struct Order {
///     #[table(partition_key)]
///     customer: String,
///     #[table(row_key)]
///     number: String,
///     total: f64,
///     lines: Vec<String>,
///     #[table(etag)]
///     etag: Option<ETag>,
/// }
///
/// assert_eq!(Order::SCHEMA.table, "Order");
/// let o = Order { customer: "c1".into(), number: "0001".into(), total: 9.5, lines: vec!["pen".into()], etag: None };
/// let row = o.to_row(&Default::default()).unwrap();
/// assert!(row.get("Total").is_some());
/// assert!(row.get("Lines__Json").is_some());
/// assert_eq!(Order::from_row(row).unwrap(), o);
/// ```
pub trait TableEntity: Sized + Send + Sync + 'static {
    /// The table name and column metadata, generated at compile time.
    const SCHEMA: &'static Schema;

    /// The entity's keys as written (composite ids normalized per the schema).
    fn key(&self) -> Key;

    /// The row to store: keys and every stored column. System fields (ETag,
    /// Timestamp) are not columns.
    fn to_row(&self, options: &EncodeOptions) -> Result<Row>;

    /// Rebuilds the entity from a stored row, including its ETag and Timestamp.
    fn from_row(row: Row) -> Result<Self>;

    /// The ETag the entity was read with, if it has an ETag field and one was set.
    fn etag(&self) -> Option<&ETag>;

    /// Records the version after a read or write (no-op without an ETag field).
    fn set_etag(&mut self, etag: Option<ETag>);

    /// Records the service Timestamp (no-op without a Timestamp field).
    fn set_timestamp(&mut self, timestamp: Option<DateTime>);

    /// The created stamp, if the entity has one and it is set.
    fn created_at(&self) -> Option<DateTime>;

    /// Sets the created stamp (no-op without one).
    fn set_created_at(&mut self, at: DateTime);

    /// Sets the updated stamp (no-op without one).
    fn set_updated_at(&mut self, at: DateTime);

    /// Gives the entity these keys (for a composite id: the id they form).
    fn set_key(&mut self, key: Key);

    /// The typed filter columns, one per field (generated).
    type Columns;

    /// The filter columns.
    fn columns() -> Self::Columns;

    /// Builds a typed filter over this entity's columns:
    /// `Customer::filter(|c| c.status.eq(Status::Open) & c.visits.ge(3u32))`.
    fn filter<W>(build: impl FnOnce(&Self::Columns) -> W) -> W {
        build(&Self::columns())
    }

    /// Chooses the fields a query reads, from this entity's typed columns:
    /// `Customer::projection(|c| [c.name.col(), c.address.col()])`, given
    /// to [`QueryOptions::select`](crate::QueryOptions::select).
    ///
    /// A flattened record selects all its columns (`c.address.col()`) or one
    /// (`c.address.city.col()`); a JSON-stored field is read whole; a large
    /// value or file makes the query read its rows whole; a `#[table(skip)]`
    /// field cannot be selected (it is not stored).
    ///
    /// ```
    /// use unified_tables::{QueryOptions, TableEntity};
    /// # #[derive(TableEntity)] struct Customer { #[table(partition_key)] region: String, #[table(row_key)] email: String, name: String, visits: u32 }
    /// let only_names = QueryOptions::partition("eu").select(Customer::projection(|c| [c.name.col()]));
    /// # let _ = only_names;
    /// ```
    fn projection<P>(build: impl FnOnce(&Self::Columns) -> P) -> P
    where
        P: IntoIterator<Item = crate::query::Selected<Self>>,
    {
        build(&Self::columns())
    }

    /// The files (`#[blob_content]` fields) the entity holds, by column.
    fn blob_contents(&self) -> Vec<(&'static str, &crate::codec::BlobContent)> {
        Vec::new()
    }

    /// The files the entity holds, mutably (the store binds them to their blobs).
    fn blob_contents_mut(&mut self) -> Vec<(&'static str, &mut crate::codec::BlobContent)> {
        Vec::new()
    }

    /// The partial-update builder (generated).
    type Updater: crate::update::UpdateBuilder<Self>;

    /// Starts a partial update: `Customer::update().balance(250.0)`, sent
    /// with [`Store::patch`](crate::Store::patch).
    fn update() -> Self::Updater;

    /// The column of the `#[table(soft_delete)]` deletion stamp, if the type
    /// has one: reads and queries then leave soft-deleted rows out (see
    /// [`SoftDelete`](crate::SoftDelete)).
    const SOFT_DELETE_COLUMN: Option<&'static str> = None;

    /// How the read cache copies the entity: `Some(Clone::clone)` when the
    /// type implements `Clone` (the derive decides at compile time), `None`
    /// when it does not, in which case the type is never cached.
    fn cache_cloner() -> Option<fn(&Self) -> Self> {
        None
    }

    /// A copy for the read cache, when the type can be copied.
    fn cache_clone(&self) -> Option<Self> {
        Self::cache_cloner().map(|clone| clone(self))
    }

    /// The secondary indexes of the type (`#[index]`, `#[unique]`,
    /// `#[table(index(..))]`): every write keeps them, see
    /// [`guide::secondary_indexes`](crate::guide::secondary_indexes).
    const INDEXES: &'static [crate::index::IndexDef] = &[];

    /// Whether [`decode_page`](TableEntity::decode_page) reads pages (the
    /// derive sets it for types of plain cells only: no large value, file,
    /// flattened record, JSON or binary field, alias, soft-delete stamp or
    /// composite id).
    const DECODES_PAGES: bool = false;

    /// The entities of a Query Entities answer body (`{"value":[..]}`),
    /// read straight from its JSON without building rows, when this type
    /// can be and every row of the page is what [`from_row`](TableEntity::from_row)
    /// of its row would read the same way. `None` means "read the page
    /// through rows": a row with a column the type does not declare, a
    /// repeated column, or anything the row path refuses (which then says
    /// why). The default reads no page.
    fn decode_page(body: &[u8]) -> Option<Vec<Self>> {
        let _ = body;
        None
    }
}

/// An entity with an `#[table(etag)]` field: the ETag-conditional verbs
/// ([`Store::update`](crate::Store::update), [`Store::update_with`](crate::Store::update_with),
/// [`Store::delete_entity`](crate::Store::delete_entity)) need it, because
/// without an ETag field they could only be refused with
/// [`Error::MissingETag`](crate::Error::MissingETag).
///
/// `#[derive(TableEntity)]` implements it when the struct has an
/// `#[table(etag)] etag: Option<ETag>` field. A type without one writes with
/// the unconditional verbs: [`Store::replace`](crate::Store::replace),
/// [`Store::upsert`](crate::Store::upsert), [`Store::delete`](crate::Store::delete),
/// or the compare-and-swap verbs ([`Store::mutate`](crate::Store::mutate)),
/// which carry the version they read themselves.
///
/// ```
/// use unified_tables::{ETag, HasETag, TableEntity};
///
/// #[derive(TableEntity)]
/// struct Order {
///     #[table(partition_key)] customer: String,
///     #[table(row_key)] number: String,
///     #[table(etag)] etag: Option<ETag>,
/// }
///
/// fn conditional<T: HasETag>() {}
/// conditional::<Order>();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no `#[table(etag)]` field, so this write cannot be conditional on the version read",
    label = "needs an entity type with an ETag field",
    note = "add `#[table(etag)] etag: Option<unified_tables::ETag>` to `{Self}` (see https://docs.rs/unified-tables/latest/unified_tables/derive.TableEntity.html#tableetag), or write without a condition: `replace(&mut e)` instead of `update`, `delete(key)` instead of `delete_entity`, or `mutate(key, ..)`, which reads the version itself"
)]
pub trait HasETag: TableEntity {}

/// A nested struct whose fields are stored as `Parent_Child` columns of the
/// entity that holds it. Implement it with `#[derive(TableRecord)]` and mark
/// the field `#[table(flatten)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be flattened into columns",
    label = "`#[table(flatten)]` needs a type with `#[derive(TableRecord)]`",
    note = "add `#[derive(TableRecord)]` to `{Self}`, or drop `#[table(flatten)]` to store it as one JSON cell (see https://docs.rs/unified-tables/latest/unified_tables/derive.TableEntity.html#tableflatten)"
)]
pub trait TableRecord: Sized {
    /// The record's own columns (names relative to the parent's prefix).
    const COLUMNS: &'static [Column];

    /// The names of the record's cells relative to the parent's prefix, in
    /// field order: one per stored field, and a nested record's names
    /// under its own prefix (`Geo_Lat`). A parent joins its prefix to them
    /// at compile time and passes them in the [`Prefix`], so that each
    /// cell is named by a `&'static str`.
    const CELL_NAMES: &'static [&'static str];

    /// Writes the record's columns, each named `{prefix}{Column}`.
    fn write_columns(&self, prefix: Prefix<'_>, row: &mut Row, options: &EncodeOptions) -> Result<()>;

    /// Reads the record's columns back.
    fn read_columns(row: &mut Row, prefix: Prefix<'_>) -> Result<Self>;

    /// The record's typed filter columns inside entity `E`.
    type Columns<E>;

    /// The filter columns, named under `prefix`.
    fn columns<E>(prefix: &str) -> Self::Columns<E>;

    /// The record's partial-update builder inside entity `E`'s builder.
    type Updater<E, A>: crate::update::RecordUpdater<E, A>;

    /// Whether the row holds any column of the record (used for `Option<Record>`).
    fn present_in(row: &Row, prefix: Prefix<'_>) -> bool {
        let prefix = prefix.as_str();
        row.properties.keys().any(|k| k.starts_with(prefix))
    }
}

/// How an entity's keys are formed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyMode {
    /// `#[table(partition_key)]` and `#[table(row_key)]` fields.
    Fields,
    /// One composite id field, `{PartitionKey}|{RowKey}`, stored as the `Id` column.
    CompositeId {
        /// Whether ids are normalized (trim, spaces to `-`, lower-case) on write.
        normalize: bool,
    },
}

/// How a column's value is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// A native cell or a JSON cell, as the field's type decides.
    Value(ValueKind),
    /// A byte field stored as one `Edm.Binary` cell.
    Binary,
    /// A nested record flattened into `{Column}_{Child}` columns.
    Flatten(&'static [Column]),
    /// A large value stored at any size (split cells, continuation rows or a blob).
    Large {
        /// The cell encoding of split parts.
        encoding: LargeEncoding,
        /// Whether the blob tier may be used.
        offload: bool,
        /// What the value is.
        form: LargeForm,
    },
    /// A file stored as a blob, referenced by `{Column}__blob`.
    Blob,
}

/// What a large value is, and so where its one-cell form lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LargeForm {
    /// A string: an `Edm.String` cell `{Col}`.
    Text,
    /// Bytes: an `Edm.Binary` cell `{Col}`.
    Bytes,
    /// A JSON-stored value: `{Col}__Json`.
    Json,
}

/// The encoding of a large value's parts (`__enc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LargeEncoding {
    /// UTF-16-safe text chunks.
    Text,
    /// Base64 of gzip.
    Gzip,
    /// Raw bytes.
    Binary,
}

impl LargeEncoding {
    /// The `__enc` cell's value.
    pub const fn name(self) -> &'static str {
        match self {
            LargeEncoding::Text => "text",
            LargeEncoding::Gzip => "gzip",
            LargeEncoding::Binary => "binary",
        }
    }
}

/// One stored column, as generated by the derive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The column name (for a flattened record: the prefix without `_`).
    pub name: &'static str,
    /// The Rust field it comes from.
    pub field: &'static str,
    /// How it is stored.
    pub kind: ColumnKind,
    /// Whether an absent column is expected (`Option` fields).
    pub optional: bool,
    /// Older names read when the column is absent (`#[alias("Old")]`).
    pub aliases: &'static [&'static str],
    /// Roles allowed to change the value (`#[protected("a,b")]`); empty when unprotected.
    pub protected: &'static [&'static str],
}

/// What the derive knows about an entity type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schema {
    /// The table name.
    pub table: &'static str,
    /// How keys are formed.
    pub keys: KeyMode,
    /// The stored columns, in field order.
    pub columns: &'static [Column],
    /// The created-stamp column, if any.
    pub created_column: Option<&'static str>,
    /// The updated-stamp column, if any.
    pub updated_column: Option<&'static str>,
    /// Whether the type's rows carry a write token (`false` with
    /// `#[table(no_write_token)]`): see `Store`'s "Exactly once under lost answers".
    pub write_token: bool,
}

impl Schema {
    /// The fewest cells a row of the type has (an `Option` field that is
    /// `None` writes none; any other field at least one).
    pub const fn min_cells(&self) -> usize {
        min_cells_in(self.columns)
    }

    /// Whether the type asks for write tokens, though none of its rows has
    /// room for one (the service's 252 properties): the derive refuses it.
    #[doc(hidden)]
    pub const fn never_has_room_for_a_token(&self) -> bool {
        self.write_token && self.min_cells() >= crate::service::MAX_PROPERTIES
    }

    /// Every physical column name a row of this type may carry in its
    /// ordinary form (nested records expanded to `Parent_Child`). JSON
    /// fields are listed with their `__Json` suffix.
    pub fn column_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        expand(self.columns, "", &mut out);
        out
    }

    /// Whether the type has large values or files (evaluated at compile time where used in `const`).
    pub const fn has_large_values(&self) -> bool {
        let mut i = 0;
        while i < self.columns.len() {
            if matches!(self.columns[i].kind, ColumnKind::Large { .. } | ColumnKind::Blob) {
                return true;
            }
            i += 1;
        }
        false
    }

    /// Whether any column, nested ones included, is `#[protected]`.
    pub const fn has_protected(&self) -> bool {
        protected_in(self.columns)
    }

    /// The columns whose values are protected.
    pub fn protected_columns(&self) -> impl Iterator<Item = &'static Column> {
        self.columns.iter().filter(|c| !c.protected.is_empty())
    }

    /// The large-value columns.
    pub fn large_columns(&self) -> impl Iterator<Item = &'static Column> {
        self.columns
            .iter()
            .filter(|c| matches!(c.kind, ColumnKind::Large { .. }))
    }

    /// The blob columns.
    pub fn blob_columns(&self) -> impl Iterator<Item = &'static Column> {
        self.columns.iter().filter(|c| matches!(c.kind, ColumnKind::Blob))
    }
}

/// The fewest cells rows of `columns` have.
const fn min_cells_in(columns: &[Column]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < columns.len() {
        if !columns[i].optional {
            n += match columns[i].kind {
                ColumnKind::Flatten(children) => min_cells_in(children),
                _ => 1,
            };
        }
        i += 1;
    }
    n
}

/// Whether any of `columns`, nested ones included, is `#[protected]`.
#[doc(hidden)]
pub const fn protected_in(columns: &[Column]) -> bool {
    let mut i = 0;
    while i < columns.len() {
        if !columns[i].protected.is_empty() {
            return true;
        }
        if let ColumnKind::Flatten(children) = columns[i].kind {
            if protected_in(children) {
                return true;
            }
        }
        i += 1;
    }
    false
}

fn expand(columns: &'static [Column], prefix: &str, out: &mut Vec<String>) {
    for c in columns {
        match c.kind {
            ColumnKind::Flatten(children) => expand(children, &format!("{prefix}{}_", c.name), out),
            ColumnKind::Value(ValueKind::Json) => out.push(crate::layout::json_cell(&format!("{prefix}{}", c.name))),
            ColumnKind::Blob => out.push(crate::layout::blob_cell(&format!("{prefix}{}", c.name))),
            _ => out.push(format!("{prefix}{}", c.name)),
        }
    }
}

mod column_value;
mod probe;
pub(crate) use crate::value::{normalize_id, Key};
pub use column_value::IntoColumnValue;
pub use probe::{CloneProbe, ProbeClone, ProbeNoClone};
