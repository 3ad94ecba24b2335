//! What the derive says about one index: [`IndexDef`], and the typed handle
//! [`Index`] a lookup starts from.

use std::fmt;
use std::marker::PhantomData;

use crate::layout::is_cell_of;

/// The cells an index row carries besides the keys and the indexed values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projection {
    /// None (the default): a lookup reads each entity.
    Keys,
    /// These columns (`project(a, b)`), by stored name: a field's column,
    /// or each column of a flattened record (`Parent_Child`). An index row
    /// carries every cell of each, in whatever form the entity's row holds
    /// it (`{Col}`, `{Col}__Json`, `{Col}__GZip`, ...; see
    /// [`layout::is_cell_of`](crate::layout::is_cell_of)).
    Columns(&'static [&'static str]),
    /// Every ordinary column (`project(all)`), for readers of the index rows.
    All,
}

/// One secondary index of an entity type, as `#[derive(TableEntity)]`
/// generates it from `#[index]`, `#[unique]` or `#[table(index(..))]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexDef {
    /// The index's name (`email`): in its keys, and in the generated lookups' names.
    pub name: &'static str,
    /// The indexed columns, by stored name, in index order.
    pub columns: &'static [&'static str],
    /// Whether at most one entity may hold a value.
    pub unique: bool,
    /// Whether the index spans partitions (kept after the write) rather than
    /// living in the entity's partition (kept in its transaction).
    pub global: bool,
    /// What an index row carries besides the keys and the indexed values.
    pub projection: Projection,
}

impl IndexDef {
    /// Whether the index lives in the entity's partition.
    pub const fn is_local(&self) -> bool {
        !self.global
    }

    /// Whether the cell `column` (a column, or one of its forms such as
    /// `{Col}__Json`) is indexed or projected: a write that changes it
    /// changes the index rows.
    pub fn covers(&self, column: &str) -> bool {
        self.columns.iter().any(|c| is_cell_of(column, c))
            || match self.projection {
                Projection::Keys => false,
                Projection::Columns(cols) => cols.iter().any(|c| is_cell_of(column, c)),
                Projection::All => true,
            }
    }
}

/// Whether any of `indexes` is local.
pub const fn any_local(indexes: &[IndexDef]) -> bool {
    let mut i = 0;
    while i < indexes.len() {
        if !indexes[i].global {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether any of `indexes` is global.
pub const fn any_global(indexes: &[IndexDef]) -> bool {
    let mut i = 0;
    while i < indexes.len() {
        if indexes[i].global {
            return true;
        }
        i += 1;
    }
    false
}

/// Whether any of `indexes` is global and unique (its writes reserve their values).
pub const fn any_unique_global(indexes: &[IndexDef]) -> bool {
    let mut i = 0;
    while i < indexes.len() {
        if indexes[i].global && indexes[i].unique {
            return true;
        }
        i += 1;
    }
    false
}

/// The kind of an index with many entities per value in the entity's partition (`#[index]`).
#[derive(Debug, Clone, Copy)]
pub struct Local;
/// The kind of a unique index in the entity's partition (`#[unique]`).
#[derive(Debug, Clone, Copy)]
pub struct UniqueLocal;
/// The kind of an index across partitions (`#[index(global)]`).
#[derive(Debug, Clone, Copy)]
pub struct Global;
/// The kind of a unique index across partitions (`#[unique(global, protocol = "reserve")]`).
#[derive(Debug, Clone, Copy)]
pub struct UniqueGlobal;

/// A typed handle of one index of entity type `T`, of kind `K` ([`Local`],
/// [`UniqueLocal`], [`Global`], [`UniqueGlobal`]) over values of type `V` (the
/// field's type, or a tuple for a composite). The derive makes one per
/// index as an associated constant of the entity (`Customer::BY_EMAIL`);
/// [`Store::index`](crate::Store::index) turns it into lookups.
pub struct Index<T, K, V> {
    def: &'static IndexDef,
    _types: PhantomData<TypeTag<T, K, V>>,
}

/// Ties a handle to its types without owning values of them.
type TypeTag<T, K, V> = fn() -> (T, K, V);

impl<T, K, V> Index<T, K, V> {
    #[doc(hidden)]
    pub const fn new(def: &'static IndexDef) -> Self {
        Index {
            def,
            _types: PhantomData,
        }
    }

    /// What the index is.
    pub const fn def(&self) -> &'static IndexDef {
        self.def
    }

    /// The index's name.
    pub const fn name(&self) -> &'static str {
        self.def.name
    }
}

impl<T, K, V> Clone for Index<T, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, K, V> Copy for Index<T, K, V> {}

impl<T, K, V> fmt::Debug for Index<T, K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Index").field(&self.def.name).finish()
    }
}
