//! Every attribute of the derives, used correctly.

use serde::{Deserialize, Serialize};
use unified_tables::{BlobContent, DateTime, ETag, TableEntity, TableEnum, TableRecord};

#[derive(TableEnum, Debug, Clone, Copy, PartialEq)]
enum Tier {
    Free,
    #[table(rename = "Pro")]
    Professional,
}

#[derive(TableRecord, Debug, Clone, PartialEq)]
struct Geo {
    lat: f64,
    lon: f64,
}

#[derive(TableRecord, Debug, Clone, PartialEq)]
struct Address {
    #[table(rename = "Town")]
    city: String,
    #[alias("Postcode")]
    zip: Option<String>,
    #[protected("admin")]
    verified: bool,
    #[table(json)]
    lines: Vec<String>,
    #[table(skip)]
    cached: u32,
    #[table(flatten)]
    geo: Option<Geo>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Preferences {
    theme: String,
    pinned: Vec<u32>,
}

/// Keyed by partition and row key fields.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(name = "Accounts")]
struct Account {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    number: String,
    #[table(rename = "DisplayName")]
    #[alias("FullName")]
    name: String,
    #[protected("admin, accountant")]
    credit_limit: f64,
    tier: Tier,
    #[table(json)]
    preferences: Preferences,
    #[table(flatten)]
    address: Address,
    #[table(skip)]
    session: Option<String>,
    #[table(split = "text")]
    notes: String,
    #[table(split = "gzip", offload = "never")]
    history: Vec<String>,
    #[table(split = "binary")]
    scan: Option<Vec<u8>>,
    #[blob_content]
    contract: Option<BlobContent>,
    #[table(etag)]
    etag: Option<ETag>,
    #[table(timestamp)]
    timestamp: Option<DateTime>,
    #[table(created_at)]
    created_at: Option<DateTime>,
    #[table(updated_at)]
    updated_at: Option<DateTime>,
}

/// Keyed by a composite id kept as written.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(name = "Notes", ids = "as_written")]
struct Note {
    #[table(id, rename = "NoteId")]
    id: String,
    body: String,
}

fn main() {
    let account = Account {
        region: "eu".into(),
        number: "0001".into(),
        name: "Alice".into(),
        credit_limit: 100.0,
        tier: Tier::Professional,
        preferences: Preferences {
            theme: "dark".into(),
            pinned: vec![1, 2],
        },
        address: Address {
            city: "Lviv".into(),
            zip: Some("79000".into()),
            verified: true,
            lines: vec!["Main St 1".into()],
            cached: 0,
            geo: Some(Geo { lat: 49.84, lon: 24.03 }),
        },
        session: None,
        notes: "short".into(),
        history: vec!["created".into()],
        scan: Some(vec![0, 1, 2]),
        contract: None,
        etag: None,
        timestamp: None,
        created_at: None,
        updated_at: None,
    };
    assert_eq!(Account::SCHEMA.table, "Accounts");
    let row = account.to_row(&Default::default()).unwrap();
    assert!(row.get("DisplayName").is_some());
    assert!(row.get("Address_Town").is_some());
    assert_eq!(Account::from_row(row).unwrap(), account);

    let note = Note {
        id: "Folder|Note 1".into(),
        body: "hello".into(),
    };
    let row = note.to_row(&Default::default()).unwrap();
    assert_eq!(row.partition_key, "Folder");
    assert_eq!(Note::from_row(row).unwrap(), note);
}
