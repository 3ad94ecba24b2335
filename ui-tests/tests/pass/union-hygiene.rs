//! A union's generated code refers to everything by absolute path, so it
//! compiles next to user types that shadow the prelude, with every payload
//! shape and field attribute a variant may carry.

#![allow(dead_code)]

use unified_tables::{TableRecord, TableUnion};

struct Result;
struct Option;
struct String;
struct Some;
struct None;
struct Ok;
struct Err;
struct Default;
struct Vec;
struct Value;
struct Key;
struct Error;

#[derive(TableRecord, Debug, Clone, PartialEq)]
struct Placed {
    amount: f64,
    lines: ::std::vec::Vec<::std::string::String>,
}

#[derive(TableRecord, Debug, Clone, PartialEq)]
struct Address {
    city: ::std::string::String,
    zip: ::core::option::Option<::std::string::String>,
}

#[derive(TableUnion, Debug, Clone, PartialEq)]
enum Event {
    Placed(Placed),
    #[table(tag = "OrderShipped", also = ["Shipped", "Shop.Events.OrderShipped, Shop"])]
    Shipped {
        #[alias("Courier")]
        carrier: ::std::string::String,
        #[table(flatten)]
        to: Address,
        #[table(rename = "Eta")]
        arrives: ::core::option::Option<unified_tables::DateTime>,
        #[table(json)]
        parcels: ::std::collections::BTreeMap<::std::string::String, u32>,
        #[table(skip)]
        scratch: u32,
        r#type: ::std::string::String,
    },
    #[table(tag = "Closed")]
    Cancelled,
    #[table(other)]
    Unknown(unified_tables::Row),
}

fn main() {
    assert_eq!(<Event as TableUnion>::VARIANTS.len(), 3);
    assert!(<Event as TableUnion>::CATCH_ALL);
}
