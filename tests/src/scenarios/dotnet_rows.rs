//! Rows written exactly as the .NET library Unified.Data.Tables stores them,
//! read through derived types: append logs of both key formats, JSON cells
//! with camelCase members, and the scalar and system cells of a .NET entity.

use serde::{Deserialize, Serialize};
use unified_tables::backend::Backend;
use unified_tables::keys::{parse_append_key, AppendKeyFormat};
use unified_tables::{DateTime, Error, QueryOptions, Row, TableEntity, TableEnum, Value};

use crate::model::{Event, Note};
use crate::Env;

/// 2026-01-01T00:00:00Z as .NET's inverted ticks and as reverse-ticked nanoseconds.
const DOTNET_2026: u64 = 2_516_350_751_999_999_999;
const OURS_2026: u128 = 999_999_999_998_232_774_399_999_999_999;

/// The instant `seconds` after 2026-01-01T00:00:00Z.
fn at(seconds: i64) -> DateTime {
    DateTime::from_unix_nanos((1_767_225_600 + i128::from(seconds)) * 1_000_000_000)
}

/// A .NET append key `seconds` after 2026, spelled by hand: `[{sub}~]{19 digits}-{8 hex}`.
fn dotnet_key(sub: Option<&str>, seconds: i64, suffix: Option<u32>) -> String {
    let ticks = DOTNET_2026 as i128 - i128::from(seconds) * 10_000_000;
    let mut key = format!("{ticks:019}");
    if let Some(s) = suffix {
        key.push_str(&format!("-{s:08x}"));
    }
    match sub {
        Some(sub) => format!("{sub}~{key}"),
        None => key,
    }
}

/// This crate's key `seconds` after 2026: `[{sub}~]{30 digits}`.
fn our_key(sub: Option<&str>, seconds: i64) -> String {
    let key = format!("{:030}", OURS_2026 as i128 - i128::from(seconds) * 1_000_000_000);
    match sub {
        Some(sub) => format!("{sub}~{key}"),
        None => key,
    }
}

/// An event row as the .NET library's `AppendAsync` stores a `ChatMessage : Entity`:
/// the text, and the `Id`, `CreatedAt` and `UpdatedAt` columns of `Entity`.
fn dotnet_event(partition: &str, key: &str, text: &str, when: DateTime) -> Row {
    Row::new(partition, key)
        .with("Id", Value::String(format!("{partition}|{key}")))
        .with("CreatedAt", Value::DateTime(when))
        .with("UpdatedAt", Value::DateTime(when))
        .with("Text", Value::String(text.into()))
}

fn texts(events: Vec<Event>) -> Vec<String> {
    events.into_iter().map(|e| e.text).collect()
}

/// A log that .NET services and this crate both append to reads newest
/// first across both key formats; each store writes the format it is set to.
pub async fn append_logs_of_both_key_formats_read_in_time_order(env: &Env) {
    let store = env.tables.store_in::<Event>(&env.table);
    store.ensure_created().await.unwrap();
    // Events 0..12, one second apart, alternating between the two
    // sub-streams and, within each, between the two key formats.
    for i in 0..12i64 {
        let sub = (i % 2 == 1).then_some("session-7");
        let dotnet = (i / 2) % 2 == 0;
        let key = if dotnet {
            dotnet_key(sub, i, Some(0x1a2b_3c00 + i as u32))
        } else {
            our_key(sub, i)
        };
        let row = if dotnet {
            dotnet_event("room", &key, &i.to_string(), at(i))
        } else {
            Row::new("room", key.as_str()).with("Text", Value::String(i.to_string()))
        };
        env.put_raw(row).await;
    }
    // The oldest event, keyed by .NET without the random suffix.
    env.put_raw(dotnet_event("room", &dotnet_key(None, -1, None), "-1", at(-1)))
        .await;

    env.reset_counts();
    let main = store.recent("room", 6, None).await.unwrap();
    assert_eq!(texts(main), ["10", "8", "6", "4", "2", "0"]);
    assert_eq!(env.counts().queries, 1, "fewer than n .NET keys: one scan");
    assert_eq!(
        texts(store.recent("room", 3, Some("session-7")).await.unwrap()),
        ["11", "9", "7"]
    );
    assert_eq!(
        texts(store.recent("room", 100, None).await.unwrap()),
        ["10", "8", "6", "4", "2", "0", "-1"]
    );

    env.reset_counts();
    let newest = store.recent("room", 2, None).await.unwrap();
    assert_eq!(
        texts(newest),
        ["10", "8"],
        "the newest .NET key does not hide a newer one of ours"
    );
    assert_eq!(
        env.counts().queries,
        2,
        "n .NET keys: a second scan reads the other format"
    );

    // Each store appends in its own format, and both read back newest first.
    let dotnet = store.with_append_keys(AppendKeyFormat::DotNet);
    assert_eq!(dotnet.append_keys(), AppendKeyFormat::DotNet);
    assert_eq!(store.append_keys(), AppendKeyFormat::ReverseTicked);
    let mut a = Event::new("dotnet now");
    dotnet.append("room", &mut a, Some("session-7")).await.unwrap();
    let mut b = Event::new("ours now");
    store.append("room", &mut b, Some("session-7")).await.unwrap();
    let time = a.key.strip_prefix("session-7~").expect("the sub-stream prefix");
    let (ticks, hex) = time.split_once('-').expect("ticks-hex");
    assert!(
        ticks.len() == 19 && ticks.bytes().all(|c| c.is_ascii_digit()),
        "{}",
        a.key
    );
    assert!(
        hex.len() == 8 && hex.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)),
        "{}",
        a.key
    );
    assert_eq!(b.key.len(), "session-7~".len() + 30, "{}", b.key);
    assert_eq!(
        texts(store.recent("room", 3, Some("session-7")).await.unwrap()),
        ["ours now", "dotnet now", "11"]
    );
    let parsed = parse_append_key(&a.key).unwrap();
    assert_eq!(
        (parsed.sub_stream, parsed.format),
        (Some("session-7"), AppendKeyFormat::DotNet)
    );

    // Sub-streams containing `~`, as .NET allows: keys split on the last `~`.
    env.put_raw(dotnet_event(
        "room",
        &dotnet_key(Some("chat~2"), 0, Some(7)),
        "chat~2 from .NET",
        at(0),
    ))
    .await;
    dotnet
        .append("room", &mut Event::new("chat~2 from Rust"), Some("chat~2"))
        .await
        .unwrap();
    assert_eq!(
        texts(dotnet.recent("room", 10, Some("chat~2")).await.unwrap()),
        ["chat~2 from Rust", "chat~2 from .NET"]
    );
    assert!(store.recent("room", 10, Some("chat")).await.unwrap().is_empty());
    // Rows that are not append keys of the sub-stream are skipped, not decoded.
    env.put_raw(Row::new("room", "session-7~0001").with("Text", Value::String("not a key".into())))
        .await;
    env.put_raw(Row::new("room", "session-7~2~2516350751999999999").with("Text", Value::String("nested".into())))
        .await;
    let all = texts(store.recent("room", 100, Some("session-7")).await.unwrap());
    assert_eq!(all.len(), 8, "{all:?}");
    assert!(!all.iter().any(|t| t == "not a key" || t == "nested"), "{all:?}");
}

/// .NET normalizes an append's partition and sub-stream as ids; so does
/// `recent` on an id-keyed type, over keys of both formats.
pub async fn an_id_keyed_log_reads_dotnet_appends(env: &Env) {
    let notes = env.tables.store_in::<Note>(&env.table);
    notes.ensure_created().await.unwrap();
    let key = dotnet_key(Some("session-1"), 0, Some(0xabcd_ef01));
    env.put_raw(
        Row::new("room-9", key.as_str())
            .with("Id", Value::String(format!("room-9|{key}")))
            .with("Body", Value::String("from .NET".into()))
            .with("CreatedAt", Value::DateTime(at(0)))
            .with("UpdatedAt", Value::DateTime(at(0))),
    )
    .await;
    let mut note = Note {
        id: String::new(),
        body: "from Rust".into(),
        created_at: None,
        updated_at: None,
        etag: None,
    };
    notes
        .with_append_keys(AppendKeyFormat::DotNet)
        .append("Room 9", &mut note, Some(" Session 1 "))
        .await
        .unwrap();
    assert!(note.id.starts_with("room-9|session-1~"), "{}", note.id);
    let read = notes.recent("Room 9", 5, Some("Session 1")).await.unwrap();
    assert_eq!(
        read.iter().map(|n| n.body.as_str()).collect::<Vec<_>>(),
        ["from Rust", "from .NET"]
    );
    assert_eq!(read[1].id, format!("room-9|{key}"));
}

/// A struct whose serde names are PascalCase.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "PascalCase")]
pub struct Address {
    pub street: String,
    pub city: String,
    pub zip_code: Option<String>,
}

/// A struct with serde's default (field) names.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Line {
    pub sku: String,
    pub qty: u32,
    pub status: LineStatus,
}

/// Variants named as declared (PascalCase), as .NET's JsonStringEnumConverter writes them.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
pub enum LineStatus {
    Packed,
    Shipped,
}

/// A struct matching .NET's camelCase members, written the way .NET writes them.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opens_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closes_at: Option<String>,
}

/// JSON-stored fields of every naming style.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Shipment {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    #[table(json)]
    pub address: Address,
    pub lines: Vec<Line>,
    #[table(json)]
    pub window: Option<Window>,
}

/// JSON cells hold camelCase members when .NET writes them; they read into
/// structs with other serde names, in any letter case, as .NET reads them.
pub async fn json_cells_read_members_in_any_letter_case(env: &Env) {
    let store = env.tables.store_in::<Shipment>(&env.table);
    store.ensure_created().await.unwrap();
    // Exactly as .NET writes them: camelCase members, nulls omitted, non-ASCII
    // text unescaped; the list is in a `__GZip` cell (base64 of gzip over the
    // UTF-8 JSON) whose second status was written in lower case by another client.
    env.put_raw(
        Row::new("eu", "s1")
            .with(
                "Address__Json",
                Value::String(r#"{"street":"Шевченка 1","city":"Lviv","zipCode":"79000"}"#.into()),
            )
            .with(
                "Lines__GZip",
                Value::String(
                    "H4sIAAAAAAACA4uuVirOLlWyUnLUNVTSUSosqVSyMtJRKi5JLCktBgoHJCZnp6Yo1erA1DnpGsHUGSKpK87ILCgAKYwFAGXj3nNSAAAA"
                        .into(),
                ),
            )
            .with(
                "Window__Json",
                Value::String(r#"{"OpensAt":"09:00","CLOSESAT":"17:00"}"#.into()),
            ),
    )
    .await;
    let got = store.get(("eu", "s1")).await.unwrap().unwrap();
    assert_eq!(
        got.address,
        Address {
            street: "Шевченка 1".into(),
            city: "Lviv".into(),
            zip_code: Some("79000".into()),
        }
    );
    assert_eq!(
        got.lines,
        [
            Line {
                sku: "A-1".into(),
                qty: 2,
                status: LineStatus::Packed
            },
            Line {
                sku: "B-2".into(),
                qty: 1,
                status: LineStatus::Shipped
            },
        ]
    );
    assert_eq!(
        got.window,
        Some(Window {
            opens_at: Some("09:00".into()),
            closes_at: Some("17:00".into()),
        }),
        "optional members in another casing are read, not left at None"
    );

    // Written back: each struct as serde names it; with camelCase and
    // skipped nulls the cell holds the members .NET writes.
    let mut back = got.clone();
    back.rk = "s2".into();
    back.window = Some(Window {
        opens_at: Some("08:00".into()),
        closes_at: None,
    });
    store.create(&mut back).await.unwrap();
    let raw = env.backend().get(&env.table, "eu", "s2").await.unwrap().unwrap();
    let cell = |name: &str| -> serde_json::Value {
        serde_json::from_str(raw.get(name).and_then(Value::as_str).expect(name)).unwrap()
    };
    assert_eq!(cell("Window__Json"), serde_json::json!({"opensAt": "08:00"}));
    assert_eq!(
        cell("Address__Json"),
        serde_json::json!({"Street": "Шевченка 1", "City": "Lviv", "ZipCode": "79000"})
    );
    assert_eq!(store.get(("eu", "s2")).await.unwrap().unwrap(), back);

    // A member stored in two casings is ambiguous: a Decode error naming the cell.
    env.put_raw(Row::new("eu", "s3").with(
        "Address__Json",
        Value::String(r#"{"street":"a","city":"Lviv","City":"Kyiv"}"#.into()),
    ))
    .await;
    let err = store.get(("eu", "s3")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode { column, found, .. } if column == "Address__Json" && found.contains("duplicate field `City`")),
        "{err}"
    );
}

/// A `TableEnum` stored by name.
#[derive(TableEnum, Debug, Clone, Copy, PartialEq)]
pub enum OrderStatus {
    Open,
    Packed,
    Shipped,
}

/// An entity declared as a .NET `Order : Entity` is, cell for cell.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Order {
    #[table(id)]
    pub id: String,
    pub status: OrderStatus,
    pub total: rust_decimal::Decimal,
    pub serial: u64,
    pub quantity: i16,
    pub grade: char,
    pub ratio: f32,
    pub flags: u8,
    pub shipped_on: DateTime,
    pub duration: String,
    pub due: String,
    pub notes: String,
    #[table(created_at)]
    pub created_at: Option<DateTime>,
    #[table(updated_at)]
    pub updated_at: Option<DateTime>,
}

/// The scalar and system cells of a row the .NET library wrote read into
/// the Rust types the README pairs with the .NET ones.
pub async fn a_dotnet_entity_row_reads_cell_for_cell(env: &Env) {
    let store = env.tables.store_in::<Order>(&env.table);
    store.ensure_created().await.unwrap();
    let trimmed = format!(
        "{}\n\u{2026}[truncated 10000 chars to fit table storage]",
        "n".repeat(30_000)
    );
    env.put_raw(
        Row::new("shop", "order-1")
            .with("Id", Value::String("shop|order-1".into()))
            // A polymorphic store's discriminator: a system column, ignored.
            .with("_TypeName", Value::String("Shop.Order, Shop".into()))
            .with("Status", Value::String("Shipped".into()))
            .with("Total", Value::Double(12.5))
            // A ulong above long.MaxValue, stored by an unchecked cast.
            .with("Serial", Value::Int64(-2))
            // short, char and float go to JSON cells.
            .with("Quantity__Json", Value::String("5".into()))
            .with("Grade__Json", Value::String(r#""A""#.into()))
            .with("Ratio__Json", Value::String("1.5".into()))
            // byte: one byte of Edm.Binary.
            .with("Flags", Value::Binary(vec![7]))
            // default(DateTime) is written as the sentinel 1601-01-01.
            .with(
                "ShippedOn",
                Value::DateTime(DateTime::parse("1601-01-01T00:00:00Z").unwrap()),
            )
            // TimeSpan: the "c" format in a string cell.
            .with("Duration", Value::String("1.02:30:00.5000000".into()))
            // DateOnly has no public constructor: a JSON cell holding an ISO date.
            .with("Due__Json", Value::String(r#""2026-01-31""#.into()))
            // A string trimmed under TrimWithMarker, and its marker.
            .with("Notes", Value::String(trimmed.clone()))
            .with("Notes__Truncated", Value::String("kept 30000 of 40000 chars".into()))
            .with("CreatedAt", Value::DateTime(at(0)))
            .with("UpdatedAt", Value::DateTime(at(1))),
    )
    .await;
    let order = store.get("shop|order-1").await.unwrap().unwrap();
    assert_eq!(
        order,
        Order {
            id: "shop|order-1".into(),
            status: OrderStatus::Shipped,
            total: rust_decimal::Decimal::new(125, 1),
            serial: u64::MAX - 1,
            quantity: 5,
            grade: 'A',
            ratio: 1.5,
            flags: 7,
            shipped_on: DateTime::default(),
            duration: "1.02:30:00.5000000".into(),
            due: "2026-01-31".into(),
            notes: trimmed,
            created_at: Some(at(0)),
            updated_at: Some(at(1)),
        }
    );
    // This crate writes a ulong above i64::MAX nowhere: it refuses it, naming the column.
    let mut big = order.clone();
    big.id = "shop|order-2".into();
    let err = store.create(&mut big).await.unwrap_err();
    assert!(
        matches!(&err, Error::InvalidValue { column, .. } if column == "Serial"),
        "{err}"
    );
    assert!(store.get("shop|order-2").await.unwrap().is_none(), "nothing stored");
    // The .NET library's enum names read case-sensitively, as Enum.Parse does.
    env.put_raw(Row::new("shop", "order-3").with("Status", Value::String("shipped".into())))
        .await;
    let err = store.get("shop|order-3").await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode { column, .. } if column == "Status"),
        "{err}"
    );
    // Missing columns read as .NET's defaults: the zero variant, the 1601 sentinel.
    env.put_raw(Row::new("shop", "order-4").with("Id", Value::String("shop|order-4".into())))
        .await;
    let bare = store.get("shop|order-4").await.unwrap().unwrap();
    assert_eq!(
        (bare.status, bare.shipped_on, bare.serial, bare.grade),
        (
            OrderStatus::Open,
            DateTime::parse("1601-01-01T00:00:00Z").unwrap(),
            0,
            '\0'
        )
    );
    // A .NET page cursor is not one of this crate's.
    let cursor: unified_tables::Cursor = "MTpwfH58MTA=.bmV4dC1wayBuZXh0LXJr".parse().unwrap();
    let err = store
        .page(QueryOptions::partition("shop").take(10).after(cursor))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidCursor(_)), "{err}");
}

/// A record flattened into `Parent_Child` columns.
#[derive(unified_tables::TableRecord, Debug, Clone, PartialEq, Default)]
pub struct Place {
    pub city: String,
    pub notes: String,
}

/// Fields whose cells .NET may store in a form other than this crate's.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Mixed {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub data: Vec<u8>,
    pub extra: Option<Vec<u8>>,
    pub status: OrderStatus,
    #[table(flatten)]
    pub place: Place,
}

/// Each cell form reads into the field or fails the read naming the cell;
/// none is read as absent.
pub async fn every_cell_form_reads_or_fails_naming_the_cell(env: &Env) {
    let store = env.tables.store_in::<Mixed>(&env.table);
    store.ensure_created().await.unwrap();
    // A List<byte> and an enum in JSON cells read into the fields.
    env.put_raw(
        Row::new("p", "json")
            .with("Data__Json", Value::String("[1,2,255]".into()))
            .with("Extra__Json", Value::String("[]".into()))
            .with("Status__Json", Value::String(r#""Packed""#.into()))
            .with("Place_City", Value::String("Lviv".into())),
    )
    .await;
    let got = store.get(("p", "json")).await.unwrap().unwrap();
    assert_eq!(
        (got.data, got.extra, got.status, got.place.city.as_str()),
        (vec![1, 2, 255], Some(vec![]), OrderStatus::Packed, "Lviv")
    );
    env.put_raw(Row::new("p", "bad-bytes").with("Data__Json", Value::String("[256]".into())))
        .await;
    let err = store.get(("p", "bad-bytes")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode { column, .. } if column == "Data__Json"),
        "{err}"
    );
    // A record .NET stored as one JSON cell cannot fill flattened columns.
    env.put_raw(Row::new("p", "record").with("Place__Json", Value::String(r#"{"city":"Lviv","notes":"n"}"#.into())))
        .await;
    let err = store.get(("p", "record")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode { column, expected, .. } if column == "Place__Json" && expected.contains("#[table(json)]")),
        "{err}"
    );
    // A large value under a nested field that is not split.
    let reference = r#"{"path":"Mixed/p/nested/Place_Notes/0","sha256":"00","length":1}"#;
    env.put_raw(Row::new("p", "nested").with("Place_Notes__blob", Value::String(reference.into())))
        .await;
    let err = store.get(("p", "nested")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Decode { column, .. } if column == "Place_Notes__blob"),
        "{err}"
    );
    let listed = store.query(QueryOptions::partition("p")).await.unwrap_err();
    assert!(matches!(listed, Error::Decode { .. }), "{listed}");
}

/// A plain string field and a JSON-stored struct.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Letter {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub text: String,
    #[table(json)]
    pub address: Address,
}

/// The exact formats the README gives another client for reading this
/// crate's rows: JSON and gzip cells, split cells and continuation rows,
/// blob references and blob names.
pub async fn rows_of_this_crate_have_the_formats_the_readme_states(env: &Env) {
    use base64::Engine as _;
    use std::io::Read as _;
    assert_eq!(
        unified_tables::BlobOptions::default().container(),
        "unified-tables-values"
    );
    let raw_row = |rk: &'static str| async move { env.backend().get(&env.table, "p", rk).await.unwrap().unwrap() };

    // A string over one cell: base64 of gzip over its JSON literal, quoted and
    // escaped. A JSON object: compact, members sorted by name, non-ASCII as is.
    let letters = env.tables.store_in::<Letter>(&env.table);
    let text = "line \"1\"\n".repeat(4_000);
    let mut letter = Letter {
        pk: "p".into(),
        rk: "letter".into(),
        text: text.clone(),
        address: Address {
            street: "Шевченка 1".into(),
            city: "Lviv".into(),
            zip_code: None,
        },
    };
    letters.create(&mut letter).await.unwrap();
    let row = raw_row("letter").await;
    assert!(row.get("Text").is_none());
    let packed = base64::engine::general_purpose::STANDARD
        .decode(row.get("Text__GZip").and_then(Value::as_str).unwrap())
        .unwrap();
    let mut unpacked = String::new();
    flate2::read::GzDecoder::new(&packed[..])
        .read_to_string(&mut unpacked)
        .unwrap();
    assert_eq!(unpacked, serde_json::to_string(&text).unwrap());
    assert!(unpacked.starts_with("\"line \\\"1\\\"\\n"), "{}", &unpacked[..20]);
    assert_eq!(
        row.get("Address__Json").and_then(Value::as_str),
        Some(r#"{"City":"Lviv","Street":"Шевченка 1","ZipCode":null}"#)
    );

    // A split value with continuation rows.
    let tables = crate::eager_tables(env);
    let docs = tables.store_in::<crate::model::Document>(&env.table);
    let mut doc = crate::model::Document::new("p", "doc");
    doc.body = "x".repeat(1_200_000);
    docs.create(&mut doc).await.unwrap();
    let main = raw_row("doc").await;
    assert_eq!(main.get("Body__chunks"), Some(&Value::Int32(38)));
    assert_eq!(main.get("Body__enc").and_then(Value::as_str), Some("text"));
    assert_eq!(main.get("Body__len"), Some(&Value::Int64(1_200_000)));
    assert_eq!(
        main.get("Body__sha256").and_then(Value::as_str),
        Some(unified_tables::sha256_hex(doc.body.as_bytes()).as_str())
    );
    let Some(Value::Int32(parts)) = main.get("_SplitParts").cloned() else {
        panic!("no _SplitParts: {:?}", main.get("_SplitParts"))
    };
    assert!(parts >= 1);
    let mut chunks = 0;
    for index in 0..=parts {
        let row = if index == 0 {
            main.clone()
        } else {
            let rk = format!("doc~{index:04}");
            let cont = env.backend().get(&env.table, "p", &rk).await.unwrap().unwrap();
            assert_eq!(cont.get("_SplitOf").and_then(Value::as_str), Some("doc"));
            assert_eq!(cont.get("_SplitIndex"), Some(&Value::Int32(index)));
            cont
        };
        for (name, value) in &row.properties {
            if name.starts_with("Body__c") && name != "Body__chunks" {
                let Value::String(s) = value else {
                    panic!("{name} is not text")
                };
                assert!(s.encode_utf16().count() <= 32_000);
                chunks += 1;
            }
        }
    }
    assert_eq!(chunks, 38, "every chunk on the main row or a continuation row");

    // A value over the blob threshold: the reference and the blob.
    let mut big = crate::model::Document::new("p", "big");
    big.data = (0..4_194_304u32).map(|i| (i % 251) as u8).collect();
    docs.create(&mut big).await.unwrap();
    let row = raw_row("big").await;
    let reference: serde_json::Value =
        serde_json::from_str(row.get("Data__blob").and_then(Value::as_str).unwrap()).unwrap();
    let sha = unified_tables::sha256_hex(&big.data);
    assert_eq!(
        reference,
        serde_json::json!({
            "path": format!("{}/p/big/Data/{sha}", env.table),
            "sha256": sha,
            "length": 4_194_304,
            "contentType": "application/octet-stream",
            "encoding": "binary",
        })
    );
    let blobs = env.blobs.as_ref().expect("a blob backend");
    let container = crate::blob_options().container().to_owned();
    let (_, bytes) = blobs
        .get(&container, reference["path"].as_str().unwrap(), None)
        .await
        .unwrap()
        .expect("the blob");
    assert_eq!(bytes, big.data);
}
