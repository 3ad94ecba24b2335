//! Hostile stored and wire text: every parser of cells, dates, GUIDs, gzip
//! cells, blob references and wire JSON gives a value or a typed error naming
//! the column, never a panic and never a silent default.
//!
//! The property tests run a small number of cases by default; set
//! `UNIFIED_TABLES_FUZZ_CASES` (e.g. `100000`) for a longer run.

use std::collections::HashMap;
use std::io::Write;
use std::time::SystemTime;

use base64::Engine as _;
use flate2::{write::GzEncoder, Compression};
use proptest::prelude::*;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use unified_tables::layout::{BLOB_SUFFIX, GZIP_SUFFIX, JSON_SUFFIX};
use unified_tables::wire::row_from_json;
use unified_tables::{BlobContent, DateTime, Error, Guid, Row, TableEntity, TableEnum, Value};
use unified_tables_tests::model::Dates;

// ---------------------------------------------------------------------------
// Entities
// ---------------------------------------------------------------------------

#[derive(TableEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    Free,
    Pro,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Extra {
    a: i32,
    b: String,
}

/// One field of every kind of cell the codec reads.
#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Everything {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    text: String,
    letter: char,
    flag: bool,
    tiny: i8,
    small: i16,
    medium: i32,
    big: i64,
    byte: u8,
    ushort: u16,
    uint: u32,
    ulong: u64,
    size: usize,
    single: f32,
    double: f64,
    when: DateTime,
    chrono_when: chrono::DateTime<chrono::Utc>,
    time_when: time::OffsetDateTime,
    system_when: SystemTime,
    id: Guid,
    uuid: uuid::Uuid,
    money: Decimal,
    bytes: Vec<u8>,
    tags: Vec<String>,
    counts: HashMap<String, i64>,
    pair: (i32, String),
    tier: Option<Tier>,
    maybe: Option<i32>,
    maybe_when: Option<DateTime>,
    #[table(json)]
    extra: Option<Extra>,
    #[blob_content]
    file: Option<BlobContent>,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Ids {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    guid: Guid,
    uuid: uuid::Uuid,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Lists {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    tags: Vec<String>,
    counts: HashMap<String, i64>,
    anything: serde_json::Value,
    text: String,
}

/// The scalars the .NET library stores as `{Col}__Json` cells, and a `byte`.
#[derive(TableEntity, Debug, Clone, PartialEq)]
struct DotnetScalars {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    short: i16,
    ushort: u16,
    sbyte: i8,
    letter: char,
    single: f32,
    byte: u8,
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn row() -> Row {
    Row::new("p", "r")
}

fn string(s: &str) -> Value {
    Value::String(s.to_owned())
}

fn gzip_base64(bytes: &[u8]) -> String {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).expect("in memory");
    base64::engine::general_purpose::STANDARD.encode(enc.finish().expect("in memory"))
}

/// The column, expected and found of a `Decode` error; panics on anything else.
fn decode_error<T: std::fmt::Debug>(result: Result<T, Error>) -> (String, String, String) {
    match result {
        Err(Error::Decode {
            column,
            expected,
            found,
        }) => (column, expected, found),
        other => panic!("expected Error::Decode, got {other:?}"),
    }
}

/// The property-test budget: small by default, `UNIFIED_TABLES_FUZZ_CASES` for more.
fn config(default_cases: u32) -> ProptestConfig {
    let cases = std::env::var("UNIFIED_TABLES_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Whether a decode result is a value or an error that names a column.
fn is_typed<T>(result: &Result<T, Error>) -> Result<(), TestCaseError> {
    match result {
        Ok(_) => Ok(()),
        Err(Error::Decode { column, .. }) | Err(Error::Integrity { column, .. }) => {
            prop_assert!(
                !column.is_empty(),
                "an error without a column: {:?}",
                result.as_ref().err()
            );
            Ok(())
        }
        Err(other) => Err(TestCaseError::fail(format!("an unexpected kind of error: {other:?}"))),
    }
}

// ---------------------------------------------------------------------------
// Dates
// ---------------------------------------------------------------------------

const HUGE_OFFSET: &str = "2024-01-01T00:00:00+99999999999:00";

#[test]
fn a_date_with_a_huge_offset_is_a_decode_error_for_every_date_type() {
    for column in ["When", "ChronoWhen", "TimeWhen", "SystemWhen"] {
        for text in [
            HUGE_OFFSET,
            "2024-01-01T00:00:00-99999999999:00",
            "2024-01-01T00:00:00+99:00",
            "2024-01-01T00:00:00++1:00",
            "2024-01-01T00:00:00+-1:00",
            "2024-01-01T00:00:00+01:60",
            "2024-01-01T00:00:00+1:00",
            "9999-12-31T23:59:59-00:01",
            "0001-01-01T00:00:00+00:01",
        ] {
            let (col, expected, found) = decode_error(Dates::from_row(row().with(column, string(text))));
            assert_eq!(col, column, "{text}");
            assert!(expected.contains("DateTime"), "{expected}");
            assert!(found.contains(text), "{found}");
        }
    }
    assert!(DateTime::parse(HUGE_OFFSET).is_err());
}

#[test]
fn dates_at_the_edges_of_the_range_still_read() {
    let back = Dates::from_row(
        row()
            .with("When", string("0001-01-01T00:00:00Z"))
            .with("ChronoWhen", string("9999-12-31T23:59:59.99999999999999999999Z"))
            .with("TimeWhen", string("2024-01-01T01:00:00+0100"))
            .with("SystemWhen", string("2024-01-01T00:00:00.5-23:59")),
    )
    .expect("every form reads");
    assert_eq!(back.when.ticks(), 0);
    assert_eq!(DateTime::from(back.chrono_when), DateTime::MAX);
    assert_eq!(
        DateTime::from(back.time_when),
        DateTime::parse("2024-01-01T00:00:00Z").unwrap()
    );
    assert_eq!(
        DateTime::from(back.system_when),
        DateTime::parse("2024-01-01T23:59:00.5Z").unwrap()
    );
}

#[test]
fn a_wire_date_with_a_huge_offset_is_an_error_naming_the_column() {
    let body =
        format!(r#"{{"PartitionKey":"p","RowKey":"r","When":"{HUGE_OFFSET}","When@odata.type":"Edm.DateTime"}}"#);
    let err = row_from_json(&serde_json::from_str(&body).unwrap()).expect_err("not a date");
    assert!(err.contains("`When`") && err.contains(HUGE_OFFSET), "{err}");

    let body = format!(r#"{{"PartitionKey":"p","RowKey":"r","Timestamp":"{HUGE_OFFSET}"}}"#);
    let err = row_from_json(&serde_json::from_str(&body).unwrap()).expect_err("not a Timestamp");
    assert!(err.contains("`Timestamp`") && err.contains(HUGE_OFFSET), "{err}");
}

#[test]
fn wire_keys_etags_and_timestamps_of_the_wrong_type_are_errors() {
    for (body, column) in [
        (r#"{"PartitionKey":5,"RowKey":"r"}"#, "PartitionKey"),
        (r#"{"PartitionKey":"p","RowKey":null}"#, "RowKey"),
        (r#"{"PartitionKey":"p","RowKey":"r","Timestamp":17}"#, "Timestamp"),
        (r#"{"PartitionKey":"p","RowKey":"r","odata.etag":true}"#, "odata.etag"),
    ] {
        let err = row_from_json(&serde_json::from_str(body).unwrap()).expect_err(body);
        assert!(err.contains(&format!("`{column}`")), "{err}");
    }
}

// ---------------------------------------------------------------------------
// GUIDs
// ---------------------------------------------------------------------------

#[test]
fn a_guid_with_plus_signs_is_refused() {
    for text in [
        "+f9619ff-+b86-+011-+42d-+0c04fc964ff",
        "6f9619ff-8b86-d011-b42d-00c04fc964+f",
        "6f9619ff+8b86+d011+b42d+00c04fc964ff",
        "+f9619ff8b86d011b42d00c04fc964ff",
    ] {
        assert!(text.parse::<Guid>().is_err(), "{text}");
        for column in ["Guid", "Uuid"] {
            let (col, expected, _) = decode_error(Ids::from_row(row().with(column, string(text))));
            assert_eq!(col, column);
            assert!(expected.contains("Guid"), "{expected}");
        }
        let body = format!(r#"{{"PartitionKey":"p","RowKey":"r","Id":"{text}","Id@odata.type":"Edm.Guid"}}"#);
        let err = row_from_json(&serde_json::from_str(&body).unwrap()).expect_err(text);
        assert!(err.contains("`Id`"), "{err}");
    }
    let good = Ids::from_row(
        row()
            .with("Guid", string("{6F9619FF-8B86-D011-B42D-00C04FC964FF}"))
            .with("Uuid", string("6f9619ff8b86d011b42d00c04fc964ff")),
    )
    .expect("documented forms");
    assert_eq!(good.guid.to_string(), good.uuid.to_string());
}

// ---------------------------------------------------------------------------
// Silent defaults in the codec
// ---------------------------------------------------------------------------

#[test]
fn a_plain_cell_of_the_wrong_type_for_a_list_is_a_decode_error() {
    for cell in [Value::Int32(3), Value::Bool(true), Value::Binary(vec![1, 2, 3])] {
        for column in ["Tags", "Counts", "Anything"] {
            let (col, expected, found) = decode_error(Lists::from_row(row().with(column, cell.clone())));
            assert_eq!(col, column);
            assert!(expected.contains(&format!("{column}__Json")), "{expected}");
            assert!(found.contains(cell.edm_type().name()), "{found}");
        }
    }
    // A string holding JSON is still read.
    let back = Lists::from_row(row().with("Tags", string(r#"["a","b"]"#))).expect("JSON text");
    assert_eq!(back.tags, ["a", "b"]);
}

#[test]
fn a_json_cell_that_is_not_a_string_is_a_decode_error() {
    for column in ["Tags", "Counts", "Anything", "Text"] {
        let name = format!("{column}__Json");
        let (col, _, found) = decode_error(Lists::from_row(row().with(name.as_str(), Value::Int64(7))));
        assert_eq!(col, name);
        assert!(found.contains("Edm.Int64"), "{found}");
    }
    for column in ["Short", "Letter", "Single", "Byte"] {
        let name = format!("{column}__Json");
        let (col, _, _) = decode_error(DotnetScalars::from_row(row().with(name.as_str(), Value::Bool(true))));
        assert_eq!(col, name);
    }
}

#[test]
fn dotnet_json_scalars_read_into_their_fields() {
    let back = DotnetScalars::from_row(
        row()
            .with("Short__Json", string("-5"))
            .with("Ushort__Json", string("65535"))
            .with("Sbyte__Json", string("-128"))
            .with("Letter__Json", string("\"я\""))
            .with("Single__Json", string("1.5"))
            .with("Byte", Value::Binary(vec![200])),
    )
    .expect("the .NET cells read");
    assert_eq!(
        back,
        DotnetScalars {
            pk: "p".into(),
            rk: "r".into(),
            short: -5,
            ushort: u16::MAX,
            sbyte: -128,
            letter: 'я',
            single: 1.5,
            byte: 200,
        }
    );
    // The same, gzip-compressed.
    let back = DotnetScalars::from_row(row().with("Short__GZip", Value::String(gzip_base64(b"12")))).expect("gzip");
    assert_eq!(back.short, 12);
}

#[test]
fn json_scalars_that_do_not_fit_are_decode_errors_naming_the_cell() {
    for (column, json) in [
        ("Short", "[1]"),
        ("Short", "null"),
        ("Short", "{}"),
        ("Short", "40000"),
        ("Short", "1.5"),
        ("Short", "not json"),
        ("Ushort", "-1"),
        ("Sbyte", "128"),
        ("Letter", "\"ab\""),
        ("Letter", "5"),
        ("Single", "null"),
        ("Single", "\"x\""),
        ("Single", "1e300"),
    ] {
        let name = format!("{column}__Json");
        let (col, expected, found) = decode_error(DotnetScalars::from_row(row().with(name.as_str(), string(json))));
        assert_eq!(col, name, "{json}");
        assert!(!expected.is_empty() && !found.is_empty());
    }
}

#[test]
fn a_one_byte_binary_cell_reads_into_u8_and_no_other_length_does() {
    let back = DotnetScalars::from_row(row().with("Byte", Value::Binary(vec![7]))).expect("one byte");
    assert_eq!(back.byte, 7);
    for bytes in [vec![], vec![1, 2]] {
        let (col, _, found) = decode_error(DotnetScalars::from_row(
            row().with("Byte", Value::Binary(bytes.clone())),
        ));
        assert_eq!(col, "Byte");
        assert!(found.contains(&format!("{} bytes", bytes.len())), "{found}");
    }
    // Only u8 reads binary.
    let (col, _, _) = decode_error(DotnetScalars::from_row(row().with("Ushort", Value::Binary(vec![7]))));
    assert_eq!(col, "Ushort");
}

// ---------------------------------------------------------------------------
// Unbounded decompression
// ---------------------------------------------------------------------------

#[test]
fn a_gzip_cell_that_unpacks_past_the_bound_is_an_integrity_error() {
    // 40 MiB of spaces, as JSON whitespace around a list, packs into some 40 KB.
    let mut enc = GzEncoder::new(Vec::new(), Compression::best());
    enc.write_all(b"[").unwrap();
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..40 {
        enc.write_all(&spaces).unwrap();
    }
    enc.write_all(b"]").unwrap();
    let packed = base64::engine::general_purpose::STANDARD.encode(enc.finish().unwrap());
    assert!(packed.len() < 65_535, "the bomb fits a cell: {}", packed.len());
    for column in ["Tags", "Text"] {
        let name = format!("{column}__GZip");
        match Lists::from_row(row().with(name.as_str(), Value::String(packed.clone()))) {
            Err(Error::Integrity { column, reason }) => {
                assert_eq!(column, name);
                assert!(reason.contains("more than"), "{reason}");
            }
            other => panic!("expected Error::Integrity, got {other:?}"),
        }
    }
}

#[test]
fn a_damaged_gzip_cell_is_a_decode_error() {
    let mut packed = base64::engine::general_purpose::STANDARD
        .decode(gzip_base64(br#"["a","b","c"]"#))
        .unwrap();
    let at = packed.len() - 6;
    packed[at] ^= 0xff;
    let text = base64::engine::general_purpose::STANDARD.encode(packed);
    let (col, _, _) = decode_error(Lists::from_row(row().with("Tags__GZip", Value::String(text))));
    assert_eq!(col, "Tags__GZip");
}

// ---------------------------------------------------------------------------
// Property tests: generated input gives a value or a typed error
// ---------------------------------------------------------------------------

/// Text that looks like a date: each part is a number of any size, and the
/// separators and zone are drawn from near misses.
fn date_like() -> impl Strategy<Value = String> {
    let number = prop_oneof![
        (0u64..100).prop_map(|n| format!("{n:02}")),
        (0u64..10_000).prop_map(|n| format!("{n:04}")),
        any::<u64>().prop_map(|n| n.to_string()),
        "[0-9+\\- ]{0,6}",
    ];
    let zone = prop_oneof![
        Just(String::new()),
        Just("Z".to_owned()),
        (any::<bool>(), number.clone(), number.clone())
            .prop_map(|(neg, h, m)| format!("{}{h}:{m}", if neg { '-' } else { '+' })),
        (any::<bool>(), number.clone()).prop_map(|(neg, h)| format!("{}{h}", if neg { '-' } else { '+' })),
        "[0-9Zz:+\\-]{0,8}",
    ];
    let fraction = prop_oneof![Just(String::new()), "\\.[0-9]{0,30}", "\\.[0-9a-z+\\-]{0,4}"];
    (
        number.clone(),
        number.clone(),
        number.clone(),
        prop_oneof![Just('T'), Just(' '), Just('t'), Just('x')],
        number.clone(),
        number.clone(),
        number,
        fraction,
        zone,
    )
        .prop_map(|(y, mo, d, sep, h, mi, s, frac, zone)| format!("{y}-{mo}-{d}{sep}{h}:{mi}:{s}{frac}{zone}"))
}

fn guid_like() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9a-fA-F+\\-{} ]{30,40}",
        "[0-9a-f]{8}-[0-9a-f+]{4}-[0-9a-f+]{4}-[0-9a-f+]{4}-[0-9a-f+]{12}",
        "\\{?[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\\}?",
        any::<String>(),
    ]
}

/// The strict reading of the documented GUID forms, written independently of the parser.
fn is_documented_guid(text: &str) -> bool {
    let t = text.trim();
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit());
    let hyphenated = |s: &str| {
        s.len() == 36
            && s.bytes().enumerate().all(|(i, b)| {
                if matches!(i, 8 | 13 | 18 | 23) {
                    b == b'-'
                } else {
                    b.is_ascii_hexdigit()
                }
            })
    };
    (t.len() == 32 && hex(t))
        || hyphenated(t)
        || (t.len() == 38 && t.starts_with('{') && t.ends_with('}') && hyphenated(&t[1..37]))
}

/// Text a cell might hold: random, date-like, GUID-like, JSON-like or gzip.
fn cell_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        date_like(),
        guid_like(),
        Just("5".to_owned()),
        Just("-1".to_owned()),
        Just("1e400".to_owned()),
        Just("1.5".to_owned()),
        Just("18446744073709551616".to_owned()),
        Just("\"a\"".to_owned()),
        Just("[1,\"x\"]".to_owned()),
        Just("null".to_owned()),
        Just("{}".to_owned()),
        Just("{\"a\":1,\"b\":\"x\"}".to_owned()),
        Just("[1,\"x\"]".to_owned()),
        Just("Free".to_owned()),
        Just(r#"{"path":"t/p/x","sha256":"00","length":18446744073709551615}"#.to_owned()),
        "[0-9a-zA-Z+/=]{0,40}",
        any::<Vec<u8>>().prop_map(|b| gzip_base64(&b)),
        "[ -~]{0,20}".prop_map(|s| gzip_base64(s.as_bytes())),
    ]
}

fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        cell_text().prop_map(Value::String),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::Int32),
        any::<i64>().prop_map(Value::Int64),
        any::<f64>().prop_map(Value::Double),
        prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(1e300), Just(-0.0)].prop_map(Value::Double),
        (0..=DateTime::MAX.ticks()).prop_map(|t| Value::DateTime(DateTime::from_ticks(t).unwrap())),
        any::<[u8; 16]>().prop_map(|b| Value::Guid(Guid(b))),
        proptest::collection::vec(any::<u8>(), 0..4).prop_map(Value::Binary),
    ]
}

/// A row holding, for some of `Everything`'s columns, a random cell in a
/// random form (plain, `__Json`, `__GZip`, `__blob`).
fn hostile_row() -> impl Strategy<Value = Row> {
    let columns: Vec<&'static str> = Everything::SCHEMA.columns.iter().map(|c| c.name).collect();
    let n = columns.len();
    proptest::collection::vec(
        (
            0..n,
            prop_oneof![Just(""), Just(JSON_SUFFIX), Just(GZIP_SUFFIX), Just(BLOB_SUFFIX)],
            any_value(),
        ),
        0..24,
    )
    .prop_map(move |cells| {
        let mut row = row();
        for (i, suffix, value) in cells {
            row.insert(format!("{}{suffix}", columns[i]), value);
        }
        row
    })
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn parsing_date_like_text_never_panics(text in prop_oneof![date_like(), any::<String>()]) {
        if let Ok(t) = DateTime::parse(&text) {
            prop_assert!((0..=DateTime::MAX.ticks()).contains(&t.ticks()));
            prop_assert_eq!(DateTime::parse(&t.to_string()).ok(), Some(t));
        }
        let _ = Dates::from_row(row().with("When", Value::String(text.clone())));
        let body = serde_json::json!({
            "PartitionKey": "p", "RowKey": "r", "Timestamp": text,
            "When": text, "When@odata.type": "Edm.DateTime",
        });
        let _ = row_from_json(body.as_object().unwrap());
    }

    #[test]
    fn every_storable_instant_round_trips_through_text(ticks in 0..=DateTime::MAX.ticks()) {
        let t = DateTime::from_ticks(ticks).unwrap();
        prop_assert_eq!(DateTime::parse(&t.to_string()).ok(), Some(t));
    }

    #[test]
    fn guids_parse_exactly_the_documented_forms(text in guid_like()) {
        let parsed = text.parse::<Guid>();
        prop_assert_eq!(parsed.is_ok(), is_documented_guid(&text), "{:?}", text);
        if let Ok(g) = parsed {
            prop_assert_eq!(g.to_string().parse::<Guid>(), Ok(g));
        }
        let result = Ids::from_row(row().with("Guid", Value::String(text.clone())));
        is_typed(&result)?;
    }

    #[test]
    fn every_guid_reads_back_in_every_form(bytes in any::<[u8; 16]>()) {
        let g = Guid(bytes);
        let d = g.to_string();
        for form in [d.clone(), d.to_uppercase(), format!("{{{d}}}"), d.replace('-', "")] {
            prop_assert_eq!(form.parse::<Guid>(), Ok(g));
        }
    }

    #[test]
    fn decoding_hostile_rows_gives_a_value_or_a_typed_error(row in hostile_row()) {
        let result = Everything::from_row(row);
        is_typed(&result)?;
    }

    #[test]
    fn gzip_cells_of_random_or_damaged_bytes_give_a_value_or_a_typed_error(
        bytes in prop_oneof![
            any::<Vec<u8>>(),
            ("[ -~]{0,40}", any::<usize>(), any::<u8>()).prop_map(|(json, at, flip)| {
                let mut packed = base64::engine::general_purpose::STANDARD.decode(gzip_base64(json.as_bytes())).unwrap();
                let i = at % packed.len();
                packed[i] ^= flip;
                packed
            }),
        ],
        column in prop_oneof![Just("Tags"), Just("Text"), Just("Small"), Just("Extra"), Just("When")],
    ) {
        let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let result = Everything::from_row(row().with(format!("{column}__GZip"), Value::String(text)));
        is_typed(&result)?;
    }

    #[test]
    fn blob_references_give_a_value_or_a_typed_error(
        json in prop_oneof![
            any::<String>(),
            (any::<String>(), any::<String>(), any::<i128>(), proptest::option::of(any::<String>())).prop_map(
                |(path, sha, length, encoding)| {
                    serde_json::json!({"path": path, "sha256": sha, "length": length.to_string().parse::<serde_json::Number>().ok(), "encoding": encoding})
                        .to_string()
                }
            ),
        ],
    ) {
        let result = Everything::from_row(row().with("File__blob", Value::String(json)));
        is_typed(&result)?;
    }

    #[test]
    fn wire_rows_give_a_row_or_an_error(
        name in "[A-Za-z]{1,6}",
        annotation in prop_oneof![
            Just(None),
            prop_oneof![
                Just("Edm.String"), Just("Edm.Boolean"), Just("Edm.Int32"), Just("Edm.Int64"), Just("Edm.Double"),
                Just("Edm.DateTime"), Just("Edm.Guid"), Just("Edm.Binary"), Just("Edm.Nope"),
            ].prop_map(Some),
        ],
        value in prop_oneof![
            cell_text().prop_map(serde_json::Value::String),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            any::<bool>().prop_map(serde_json::Value::from),
            Just(serde_json::Value::Null),
            Just(serde_json::json!([1])),
        ],
    ) {
        let mut body = serde_json::json!({"PartitionKey": "p", "RowKey": "r"});
        let obj = body.as_object_mut().unwrap();
        obj.insert(name.clone(), value);
        if let Some(a) = annotation {
            obj.insert(format!("{name}@odata.type"), serde_json::Value::from(a));
        }
        if let Err(e) = row_from_json(obj) {
            prop_assert!(e.contains(&format!("`{name}`")), "{}", e);
        }
    }
}
