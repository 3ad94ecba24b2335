//! The generated code refers to everything by absolute path, so it compiles
//! next to user types that shadow the prelude.

#![allow(dead_code)]

use unified_tables::{TableEntity, TableEnum, TableRecord};

struct Result;
struct Option;
struct String;
struct Box;
struct Some;
struct None;
struct Ok;
struct Err;
struct Default;
struct Vec;
struct Value;
struct Row;
struct Key;
struct Error;

#[derive(TableEnum, Debug, Clone, Copy, PartialEq)]
enum Status {
    Open,
    #[table(rename = "OnHold")]
    Paused,
}

#[derive(TableRecord, Debug, Clone, PartialEq)]
struct Address {
    #[alias("Town")]
    city: ::std::string::String,
    zip: ::core::option::Option<::std::string::String>,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Customer {
    #[table(partition_key)]
    region: ::std::string::String,
    #[table(row_key)]
    email: ::std::string::String,
    name: ::std::string::String,
    status: Status,
    maybe_status: ::core::option::Option<Status>,
    photo: ::std::vec::Vec<u8>,
    tags: ::std::vec::Vec<::std::string::String>,
    nested: ::std::boxed::Box<i64>,
    #[table(flatten)]
    address: Address,
    #[table(flatten)]
    billing: ::core::option::Option<Address>,
    #[table(json)]
    notes: ::std::vec::Vec<::std::string::String>,
    #[table(split = "binary")]
    scan: ::core::option::Option<::std::vec::Vec<u8>>,
    #[table(skip)]
    scratch: u32,
    #[table(etag)]
    etag: ::core::option::Option<unified_tables::ETag>,
    #[table(timestamp)]
    timestamp: ::core::option::Option<unified_tables::DateTime>,
    #[table(created_at)]
    created_at: ::core::option::Option<unified_tables::DateTime>,
    #[table(updated_at)]
    updated_at: ::core::option::Option<unified_tables::DateTime>,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Note {
    #[table(id)]
    id: ::std::string::String,
    #[table(split = "gzip")]
    body: ::std::string::String,
}

// Field types named as the generated builders' type parameters would be:
// the derive picks other names for them.
#[derive(TableEnum, Debug, Clone, Copy, PartialEq)]
enum Auth {
    Password,
    Passkey,
}

#[derive(TableEnum, Debug, Clone, Copy, PartialEq)]
enum Entity {
    Person,
    Company,
}

#[derive(TableRecord, Debug, Clone, PartialEq)]
struct Login {
    auth: Auth,
    entity: Entity,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Account {
    #[table(partition_key)]
    tenant: ::std::string::String,
    #[table(row_key)]
    name: ::std::string::String,
    auth: Auth,
    entity: ::core::option::Option<Entity>,
    #[table(flatten)]
    login: Login,
}

fn main() {
    let patch = Account::update()
        .auth(Auth::Passkey)
        .entity(Entity::Company)
        .login(|l| l.auth(Auth::Password).entity(Entity::Person));
    let _ = Account::filter(|c| c.auth.eq(Auth::Passkey) & c.login.entity.eq(Entity::Person));
    let _ = patch;

    let customer = Customer {
        region: "eu".into(),
        email: "a@example.com".into(),
        name: "Alice".into(),
        status: Status::Paused,
        maybe_status: ::core::option::Option::Some(Status::Open),
        photo: ::std::vec![1, 2, 3],
        tags: ::std::vec!["x".into()],
        nested: ::std::boxed::Box::new(7),
        address: Address {
            city: "Lviv".into(),
            zip: ::core::option::Option::None,
        },
        billing: ::core::option::Option::None,
        notes: ::std::vec!["n".into()],
        scan: ::core::option::Option::Some(::std::vec![9]),
        scratch: 0,
        etag: ::core::option::Option::None,
        timestamp: ::core::option::Option::None,
        created_at: ::core::option::Option::None,
        updated_at: ::core::option::Option::None,
    };
    let row = customer.to_row(&::core::default::Default::default()).unwrap();
    assert_eq!(Customer::from_row(row).unwrap(), customer);

    let note = Note {
        id: "folder|note".into(),
        body: "hello".into(),
    };
    let row = note.to_row(&::core::default::Default::default()).unwrap();
    assert_eq!(Note::from_row(row).unwrap(), note);
}
