//! Secondary indexes: what the derive declares ([`IndexDef`], the typed
//! handle [`Index`]), which field types can be indexed and what a lookup
//! takes ([`IndexValue`], [`IndexKey`]), the order-preserving text form of
//! indexed values ([`encode`]) and the shapes of index rows ([`rows`]).
//! The store keeps them and looks them up: see
//! [`guide::secondary_indexes`](crate::guide::secondary_indexes).

mod def;
pub mod encode;
mod limits;
pub mod rows;
mod value;

pub use def::{
    any_global, any_local, any_unique_global, Global, Index, IndexDef, Local, Projection, UniqueGlobal, UniqueLocal,
};
pub(crate) use limits::check_transaction;
pub use value::{stored_cell, IndexKey, IndexValue, OrderedIndexKey, OrderedIndexValue, PrefixIndexValue};
