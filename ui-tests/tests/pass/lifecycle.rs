//! The soft-delete stamp and the ordering token, with every accepted field
//! type, next to user types that shadow the prelude.

#![allow(dead_code)]

use unified_tables::{OrderedEntity, SoftDelete, TableEntity};

struct Result;
struct Option;
struct String;
struct Some;
struct None;
struct DateTime;
struct OrderingToken;

#[derive(TableEntity)]
struct Message {
    #[table(partition_key)]
    room: ::std::string::String,
    #[table(row_key)]
    id: ::std::string::String,
    #[table(soft_delete)]
    deleted_at: ::core::option::Option<unified_tables::DateTime>,
    #[table(ordering)]
    sequence: ::core::option::Option<unified_tables::OrderingToken>,
}

#[derive(TableEntity)]
struct Upload {
    #[table(id)]
    id: ::std::string::String,
    #[table(soft_delete, rename = "RemovedOn")]
    removed: ::core::option::Option<::std::time::SystemTime>,
    #[table(ordering)]
    sequencer: unified_tables::OrderingToken,
}

fn main() {
    assert_eq!(<Message as SoftDelete>::DELETED_COLUMN, "DeletedAt");
    assert_eq!(<Message as OrderedEntity>::ORDERING_COLUMN, "Sequence");
    assert_eq!(<Upload as SoftDelete>::DELETED_COLUMN, "RemovedOn");
    assert_eq!(<Upload as TableEntity>::SOFT_DELETE_COLUMN, ::core::option::Option::Some("RemovedOn"));
}
