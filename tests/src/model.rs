//! Entities the scenarios store.

use std::collections::BTreeMap;
use std::time::SystemTime;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use unified_tables::{DateTime, ETag, Guid, TableEntity, TableEnum, TableRecord};

/// A plain entity with stamps and system fields.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Customer {
    #[table(partition_key)]
    pub region: String,
    #[table(row_key)]
    pub email: String,
    pub name: String,
    pub visits: u32,
    pub balance: f64,
    #[table(etag)]
    pub etag: Option<ETag>,
    #[table(timestamp)]
    pub timestamp: Option<DateTime>,
    #[table(created_at)]
    pub created_at: Option<DateTime>,
    #[table(updated_at)]
    pub updated_at: Option<DateTime>,
}

impl Customer {
    /// A customer with no ETag or stamps.
    pub fn new(region: &str, email: &str, name: &str) -> Customer {
        Customer {
            region: region.into(),
            email: email.into(),
            name: name.into(),
            visits: 0,
            balance: 0.0,
            etag: None,
            timestamp: None,
            created_at: None,
            updated_at: None,
        }
    }
}

/// A unit enum stored as its variant name.
#[derive(TableEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Open,
    Closed,
    #[table(rename = "OnHold")]
    Paused,
}

/// A nested record flattened into `Parent_Child` columns.
#[derive(TableRecord, Debug, Clone, PartialEq)]
pub struct Geo {
    pub lat: f64,
    pub lon: f64,
}

/// A nested record with a nested record inside.
#[derive(TableRecord, Debug, Clone, PartialEq)]
pub struct Address {
    pub city: String,
    pub zip: Option<String>,
    #[table(flatten)]
    pub geo: Option<Geo>,
}

/// A serde type stored as one JSON cell.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Extra {
    pub note: String,
    pub counts: Vec<u32>,
}

/// Every supported value type.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Everything {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub text: String,
    pub empty: String,
    pub letter: char,
    pub flag: bool,
    pub tiny: i8,
    pub short: i16,
    pub small: i32,
    pub byte: u8,
    pub word: u16,
    pub unsigned: u32,
    pub big: i64,
    pub ubig: u64,
    pub size: usize,
    pub single: f32,
    pub double: f64,
    pub nan: f64,
    pub inf: f64,
    pub neg_inf: f64,
    pub when: DateTime,
    pub chrono_when: chrono::DateTime<chrono::Utc>,
    pub time_when: time::OffsetDateTime,
    pub system_when: SystemTime,
    pub uuid: uuid::Uuid,
    pub guid: Guid,
    pub money: Decimal,
    pub bytes: Vec<u8>,
    pub no_bytes: Option<Vec<u8>>,
    pub status: Status,
    pub maybe_status: Option<Status>,
    pub maybe_big: Option<i64>,
    pub maybe_text: Option<String>,
    pub tags: Vec<String>,
    pub scores: BTreeMap<String, i32>,
    #[table(json)]
    pub extra: Extra,
    #[table(json)]
    pub maybe_extra: Option<Extra>,
    #[table(flatten)]
    pub address: Address,
    #[table(flatten)]
    pub billing: Option<Address>,
    #[table(skip)]
    pub scratch: u32,
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl Everything {
    /// A value with edge cases in every field.
    pub fn sample(pk: &str, rk: &str) -> Everything {
        let instant = DateTime::parse("2024-02-29T23:59:59.1234567Z").expect("valid");
        Everything {
            pk: pk.into(),
            rk: rk.into(),
            text: "héllo wörld \u{1F600} 𝄞 '\"\\ <tag> & \u{FFFD}".into(),
            empty: String::new(),
            letter: '\u{1F980}',
            flag: true,
            tiny: i8::MIN,
            short: i16::MAX,
            small: i32::MIN,
            byte: u8::MAX,
            word: u16::MAX,
            unsigned: u32::MAX,
            big: i64::MIN,
            ubig: i64::MAX as u64,
            size: 1 << 40,
            single: 1.5,
            double: -1.797_693_134_862_315_7e308,
            nan: f64::NAN,
            inf: f64::INFINITY,
            neg_inf: f64::NEG_INFINITY,
            when: DateTime::MIN_STORABLE,
            chrono_when: instant.into(),
            time_when: DateTime::MAX.into(),
            system_when: instant.into(),
            uuid: uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
            guid: Guid([0xff; 16]),
            money: Decimal::new(12_345, 2),
            bytes: vec![0, 1, 2, 254, 255],
            no_bytes: None,
            status: Status::Paused,
            maybe_status: Some(Status::Closed),
            maybe_big: Some(i64::MAX),
            maybe_text: None,
            tags: vec!["a".into(), "b'c".into(), String::new()],
            scores: BTreeMap::from([("x".to_owned(), -1), ("y".to_owned(), 2)]),
            extra: Extra {
                note: "nested \u{10FFFF}".into(),
                counts: vec![1, 2, 3],
            },
            maybe_extra: None,
            address: Address {
                city: "Lviv".into(),
                zip: Some("79000".into()),
                geo: Some(Geo { lat: 49.84, lon: 24.03 }),
            },
            billing: None,
            scratch: 0,
            etag: None,
        }
    }

    /// Equality that treats NaN as equal to NaN and ignores the ETag.
    pub fn same_values(&self, other: &Everything) -> bool {
        let mut a = self.clone();
        let mut b = other.clone();
        assert!(
            a.nan.is_nan() && b.nan.is_nan(),
            "NaN did not survive: {} / {}",
            a.nan,
            b.nan
        );
        a.nan = 0.0;
        b.nan = 0.0;
        a.etag = None;
        b.etag = None;
        a == b
    }
}

/// An entity keyed by a composite id, as the .NET library keys its rows.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(name = "Notes")]
pub struct Note {
    #[table(id)]
    pub id: String,
    pub body: String,
    #[table(created_at)]
    pub created_at: Option<DateTime>,
    #[table(updated_at)]
    pub updated_at: Option<DateTime>,
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// The same as [`Note`], with ids kept as written.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(name = "Notes", ids = "as_written")]
pub struct RawNote {
    #[table(id)]
    pub id: String,
    pub body: String,
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// A minimal row for bulk scenarios.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Item {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub n: i64,
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl Item {
    /// An item with row key `{n:05}`.
    pub fn new(pk: &str, n: i64) -> Item {
        Item {
            pk: pk.into(),
            rk: format!("{n:05}"),
            n,
            etag: None,
        }
    }
}

/// An entity whose `Name` column was once called `FullName`.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Renamed {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    #[alias("FullName")]
    pub name: String,
    #[alias("OldTags")]
    pub tags: Vec<String>,
}

/// An account whose credit limit and owner only some roles may change.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Account {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub note: String,
    #[protected("admin,accountant")]
    pub credit_limit: i64,
    #[protected("admin")]
    pub owner: Option<String>,
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl Account {
    /// An account with a limit of 100, owned by `owner`.
    pub fn new(rk: &str, owner: &str) -> Account {
        Account {
            pk: "acct".into(),
            rk: rk.into(),
            note: String::new(),
            credit_limit: 100,
            owner: Some(owner.into()),
            etag: None,
        }
    }
}

/// An entity for filter scenarios: one column of each filterable kind.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Ticket {
    #[table(partition_key)]
    pub queue: String,
    #[table(row_key)]
    pub number: String,
    pub title: String,
    pub status: Status,
    pub priority: i32,
    pub views: i64,
    pub score: f64,
    pub amount: Decimal,
    pub opened: DateTime,
    pub active: bool,
    pub reference: uuid::Uuid,
    pub owner: Option<String>,
    pub labels: Vec<String>,
    #[table(flatten)]
    pub address: Address,
    #[table(skip)]
    pub cache: u32,
    #[table(etag)]
    pub etag: Option<ETag>,
    #[table(updated_at)]
    pub updated_at: Option<DateTime>,
}

impl Ticket {
    /// Ticket `n` of queue `q`, with values derived from `n`.
    pub fn new(queue: &str, n: u32) -> Ticket {
        Ticket {
            queue: queue.into(),
            number: format!("{n:04}"),
            title: format!("ticket {n}"),
            status: [Status::Open, Status::Closed, Status::Paused][n as usize % 3],
            priority: (n % 5) as i32,
            views: n as i64 * 1_000_000_000_000,
            score: n as f64 / 2.0,
            amount: Decimal::new(n as i64 * 150, 2),
            opened: DateTime::from_unix_nanos(1_700_000_000_000_000_000 + n as i128 * 86_400_000_000_000),
            active: n.is_multiple_of(2),
            reference: uuid::Uuid::from_u128(n as u128),
            owner: (!n.is_multiple_of(4)).then(|| format!("owner{}", n % 4)),
            labels: vec![format!("l{n}")],
            address: Address {
                city: ["Lviv", "Kyiv", "Odesa"][n as usize % 3].into(),
                zip: None,
                geo: None,
            },
            cache: 0,
            etag: None,
            updated_at: None,
        }
    }
}

/// An event of an append log.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Event {
    #[table(partition_key)]
    pub stream: String,
    #[table(row_key)]
    pub key: String,
    pub text: String,
}

impl Event {
    /// An event with no key yet.
    pub fn new(text: &str) -> Event {
        Event {
            stream: String::new(),
            key: String::new(),
            text: text.into(),
        }
    }
}

/// A document with large values of every kind and a file.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Document {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub title: String,
    #[table(split = "text")]
    pub body: String,
    #[table(split = "gzip")]
    pub notes: Option<String>,
    #[table(split = "binary")]
    pub data: Vec<u8>,
    #[table(split = "gzip")]
    pub lines: Vec<String>,
    #[table(split = "text", offload = "never")]
    pub local: String,
    #[blob_content]
    pub attachment: Option<unified_tables::BlobContent>,
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl Document {
    /// A small document.
    pub fn new(pk: &str, rk: &str) -> Document {
        Document {
            pk: pk.into(),
            rk: rk.into(),
            title: "doc".into(),
            body: String::new(),
            notes: None,
            data: Vec::new(),
            lines: Vec::new(),
            local: String::new(),
            attachment: None,
            etag: None,
        }
    }

    /// Equality of the stored values (files compared by hash and length).
    pub fn same(&self, other: &Document) -> bool {
        let strip = |d: &Document| Document {
            etag: None,
            attachment: None,
            ..d.clone()
        };
        strip(self) == strip(other)
    }
}

/// A document as an older version of a program stored it: its large
/// values and file under their old column names.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(name = "Document")]
pub struct OldDocument {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    #[table(split = "gzip")]
    pub old_body: String,
    #[table(split = "text")]
    pub old_lines: Vec<String>,
    #[blob_content]
    pub old_file: Option<unified_tables::BlobContent>,
}

/// The same document today: the large values and the file renamed, the
/// old names kept as aliases.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(name = "Document")]
pub struct RenamedDocument {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    #[alias("OldBody")]
    #[table(split = "gzip")]
    pub body: String,
    #[alias("OldLines")]
    #[table(split = "text")]
    pub lines: Vec<String>,
    #[alias("OldFile")]
    #[blob_content]
    pub file: Option<unified_tables::BlobContent>,
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// Every date type, for the codec's date tests.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Dates {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub when: unified_tables::DateTime,
    pub chrono_when: chrono::DateTime<chrono::Utc>,
    pub time_when: time::OffsetDateTime,
    pub system_when: std::time::SystemTime,
}

/// A reader of the `Document` table that does not mark `body` split.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(name = "Document")]
pub struct UnsplitDocument {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub title: String,
    pub body: String,
}

/// A reader of the `Document` table whose fields are all plain: it reads
/// values split on the main row, as any reader of the format does.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(name = "Document")]
pub struct PlainDocument {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub title: String,
    pub body: String,
    pub notes: Option<String>,
    pub data: Vec<u8>,
    #[table(etag)]
    pub etag: Option<ETag>,
}
