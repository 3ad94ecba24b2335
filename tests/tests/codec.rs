//! Edge values and error messages of the cell codecs, and the cell formats
//! shared with the .NET library (dotnet-formats.md §1.3 - §1.6).

use std::io::{Read, Write};
use std::time::{Duration, UNIX_EPOCH};

use base64::Engine as _;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use unified_tables::wire::{row_from_json, row_to_json};
use unified_tables::{DateTime, EncodeOptions, Error, Guid, OversizedCellPolicy, Row, TableEntity, TableEnum, Value};
use unified_tables_tests::model::Dates;

// ---------------------------------------------------------------------------
// Entities
// ---------------------------------------------------------------------------

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Ints {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    big: i64,
    small: i32,
    ubig: u64,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Numbers {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    nan: f64,
    inf: f64,
    neg_inf: f64,
    money: Decimal,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Texts {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    body: String,
    maybe: Option<String>,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Ids {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    uuid: uuid::Uuid,
    guid: Guid,
}

#[derive(TableEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Open,
    Closed,
    #[table(rename = "OnHold")]
    Paused,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Ticket {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    status: Status,
}

/// A serde type as the .NET library writes it: camelCase property names.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Step {
    step_name: String,
    done: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Plan {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    tags: Vec<String>,
    steps: Vec<Step>,
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn defaults() -> EncodeOptions {
    EncodeOptions::default()
}

fn policy(oversized: OversizedCellPolicy) -> EncodeOptions {
    EncodeOptions { oversized }
}

fn ints(big: i64, small: i32, ubig: u64) -> Ints {
    Ints {
        pk: "p".into(),
        rk: "r".into(),
        big,
        small,
        ubig,
    }
}

fn texts(body: impl Into<String>) -> Texts {
    Texts {
        pk: "p".into(),
        rk: "r".into(),
        body: body.into(),
        maybe: None,
    }
}

fn dates(when: DateTime) -> Dates {
    Dates {
        pk: "p".into(),
        rk: "r".into(),
        when,
        chrono_when: when.into(),
        time_when: when.into(),
        system_when: when.into(),
    }
}

fn row() -> Row {
    Row::new("p", "r")
}

fn string(s: &str) -> Value {
    Value::String(s.to_owned())
}

/// The row as the service's JSON, serialized to text and read back.
fn over_the_wire(row: &Row) -> (serde_json::Map<String, serde_json::Value>, Row) {
    let json = row_to_json(row);
    let text = serde_json::to_string(&json).expect("serializes");
    let back = row_from_json(&serde_json::from_str(&text).expect("valid JSON")).expect("reads back");
    (json, back)
}

fn gunzip_base64(cell: &Value) -> Vec<u8> {
    let text = cell.as_str().expect("a __GZip cell is an Edm.String");
    let packed = base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("standard base64 with padding");
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(packed.as_slice())
        .read_to_end(&mut out)
        .expect("one gzip member");
    out
}

/// What the .NET library stores: base64 (standard) of a gzip stream over the UTF-8 JSON.
fn reference_gzip(json: &str) -> Value {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(json.as_bytes()).expect("in memory");
    Value::String(base64::engine::general_purpose::STANDARD.encode(enc.finish().expect("in memory")))
}

/// Text that gzip cannot shrink below a cell: random CJK characters (one
/// UTF-16 unit, three UTF-8 bytes each), from a fixed seed.
fn incompressible(chars: usize, seed: u64) -> String {
    let mut x = seed | 1;
    (0..chars)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from_u32(0x4E00 + (x % 0x5000) as u32).expect("CJK")
        })
        .collect()
}

fn utf16_units(s: &str) -> usize {
    s.encode_utf16().count()
}

fn expect_decode_error(result: Result<impl std::fmt::Debug, Error>) -> (String, String, String) {
    match result {
        Err(Error::Decode {
            column,
            expected,
            found,
        }) => (column, expected, found),
        other => panic!("expected Error::Decode, got {other:?}"),
    }
}

fn expect_invalid_value(result: Result<impl std::fmt::Debug, Error>) -> (String, String, String) {
    match result {
        Err(e @ Error::InvalidValue { .. }) => {
            let message = e.to_string();
            let Error::InvalidValue { column, reason } = e else {
                unreachable!()
            };
            (column, reason, message)
        }
        other => panic!("expected Error::InvalidValue, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Integers
// ---------------------------------------------------------------------------

#[test]
fn i64_extremes_round_trip_as_int64_cells() {
    for (big, small, ubig) in [(i64::MIN, i32::MIN, 0), (i64::MAX, i32::MAX, i64::MAX as u64)] {
        let e = ints(big, small, ubig);
        let row = e.to_row(&defaults()).expect("storable");
        assert_eq!(row.get("Big"), Some(&Value::Int64(big)));
        assert_eq!(row.get("Small"), Some(&Value::Int32(small)));
        assert_eq!(row.get("Ubig"), Some(&Value::Int64(ubig as i64)));
        let (json, back) = over_the_wire(&row);
        assert_eq!(json["Big"], big.to_string(), "Int64 travels as a string");
        assert_eq!(json["Big@odata.type"], "Edm.Int64");
        assert_eq!(Ints::from_row(back).expect("decodes"), e);
    }
}

#[test]
fn u64_above_i64_max_is_refused_naming_the_column_and_the_fix() {
    for ubig in [i64::MAX as u64 + 1, u64::MAX] {
        let (column, reason, message) = expect_invalid_value(ints(0, 0, ubig).to_row(&defaults()));
        assert_eq!(column, "Ubig");
        assert!(reason.contains(&ubig.to_string()), "{reason}");
        assert!(
            reason.contains("use i64") && reason.contains("String"),
            "the reason says what to do instead: {reason}"
        );
        assert!(message.contains("`Ubig`"), "{message}");
    }
}

#[test]
fn a_negative_int64_reads_into_u64_as_the_dotnet_library_stores_ulong() {
    let row = row().with("Ubig", Value::Int64(-1));
    assert_eq!(Ints::from_row(row).expect("decodes").ubig, u64::MAX);
}

#[test]
fn an_int32_cell_reads_into_i64_and_an_int64_into_i32_when_it_fits() {
    let row1 = row()
        .with("Big", Value::Int32(-7))
        .with("Small", Value::Int64(42))
        .with("Ubig", Value::Int32(5));
    assert_eq!(Ints::from_row(row1).expect("decodes"), ints(-7, 42, 5));

    let too_big = row().with("Small", Value::Int64(i64::from(i32::MAX) + 1));
    let (column, expected, found) = expect_decode_error(Ints::from_row(too_big));
    assert_eq!(column, "Small");
    assert_eq!(expected, "i32");
    assert!(found.contains("2147483648"), "{found}");
}

#[test]
fn a_wrong_type_cell_is_a_decode_error_naming_the_column_and_the_expected_type() {
    let (column, expected, found) = expect_decode_error(Ints::from_row(row().with("Big", Value::Bool(true))));
    assert_eq!((column.as_str(), expected.as_str()), ("Big", "i64"));
    assert!(found.contains("Edm.Boolean"), "{found}");

    let (column, expected, found) = expect_decode_error(Texts::from_row(row().with("Body", Value::Int32(3))));
    assert_eq!((column.as_str(), expected.as_str()), ("Body", "a string"));
    assert!(found.contains("Edm.Int32"), "{found}");

    let when = row().with("When", Value::Guid(Guid([1; 16])));
    let (column, expected, found) = expect_decode_error(Dates::from_row(when));
    assert_eq!((column.as_str(), expected.as_str()), ("When", "a DateTime"));
    assert!(found.contains("Edm.Guid"), "{found}");

    let err = Ids::from_row(row().with("Uuid", string("not a guid"))).expect_err("not a GUID");
    let message = err.to_string();
    assert!(message.contains("`Uuid`") && message.contains("a Guid"), "{message}");
}

// ---------------------------------------------------------------------------
// Dates
// ---------------------------------------------------------------------------

#[test]
fn the_storable_date_bounds_round_trip() {
    for (when, text) in [
        (DateTime::MIN_STORABLE, "1601-01-01T00:00:00.0000000Z"),
        (DateTime::MAX, "9999-12-31T23:59:59.9999999Z"),
    ] {
        let e = dates(when);
        let row = e.to_row(&defaults()).expect("storable");
        for column in ["When", "ChronoWhen", "TimeWhen", "SystemWhen"] {
            assert_eq!(row.get(column), Some(&Value::DateTime(when)), "{column}");
        }
        let (json, back) = over_the_wire(&row);
        assert_eq!(json["When"], text);
        assert_eq!(json["When@odata.type"], "Edm.DateTime");
        assert_eq!(Dates::from_row(back).expect("decodes"), e);
    }
}

#[test]
fn a_date_before_1601_is_refused_naming_the_column() {
    let late_1600 = DateTime::from_parts(1600, 12, 31, 23, 59, 59, 9_999_999).expect("a valid date");
    let (column, reason, message) = expect_invalid_value(dates(late_1600).to_row(&defaults()));
    assert_eq!(column, "When");
    assert!(reason.contains("1601-01-01T00:00:00Z"), "{reason}");
    assert!(message.contains("`When`"), "{message}");

    // The same refusal through each instant type.
    let mut e = dates(DateTime::UNIX_EPOCH);
    e.chrono_when = late_1600.into();
    assert_eq!(expect_invalid_value(e.to_row(&defaults())).0, "ChronoWhen");
    let mut e = dates(DateTime::UNIX_EPOCH);
    e.time_when = late_1600.into();
    assert_eq!(expect_invalid_value(e.to_row(&defaults())).0, "TimeWhen");
    let mut e = dates(DateTime::UNIX_EPOCH);
    e.system_when = late_1600.into();
    assert_eq!(expect_invalid_value(e.to_row(&defaults())).0, "SystemWhen");
}

#[test]
fn an_instant_after_9999_is_refused_not_clamped() {
    let year_10000 = chrono::NaiveDate::from_ymd_opt(10_000, 1, 1)
        .expect("chrono has year 10000")
        .and_hms_opt(0, 0, 0)
        .expect("midnight")
        .and_utc();
    let mut e = dates(DateTime::UNIX_EPOCH);
    e.chrono_when = year_10000;
    let (column, reason, _) = expect_invalid_value(e.to_row(&defaults()));
    assert_eq!(column, "ChronoWhen");
    assert!(reason.contains("9999-12-31T23:59:59.9999999Z"), "{reason}");

    let mut e = dates(DateTime::UNIX_EPOCH);
    e.system_when = UNIX_EPOCH + Duration::from_secs(400_000_000_000);
    assert_eq!(expect_invalid_value(e.to_row(&defaults())).0, "SystemWhen");

    // One 100 ns tick past the last storable instant is refused too.
    let mut e = dates(DateTime::UNIX_EPOCH);
    e.chrono_when = chrono::DateTime::<chrono::Utc>::from(DateTime::MAX) + chrono::TimeDelta::nanoseconds(100);
    assert_eq!(expect_invalid_value(e.to_row(&defaults())).0, "ChronoWhen");
    // Sub-tick digits of the last instant are truncated, not refused.
    let mut e = dates(DateTime::UNIX_EPOCH);
    e.chrono_when = chrono::DateTime::<chrono::Utc>::from(DateTime::MAX) + chrono::TimeDelta::nanoseconds(99);
    let row = e.to_row(&defaults()).expect("still within the last tick");
    assert_eq!(row.get("ChronoWhen"), Some(&Value::DateTime(DateTime::MAX)));
}

#[test]
fn chrono_time_and_system_time_round_trip_at_100ns() {
    let base = DateTime::parse("2024-02-29T12:30:05Z").expect("valid");
    let nanos = base.unix_nanos() + 123_456_789;
    let chrono_when = chrono::DateTime::from_timestamp(
        i64::try_from(nanos.div_euclid(1_000_000_000)).expect("fits"),
        u32::try_from(nanos.rem_euclid(1_000_000_000)).expect("fits"),
    )
    .expect("valid");
    let time_when = time::OffsetDateTime::from_unix_timestamp_nanos(nanos).expect("valid");
    let system_when = UNIX_EPOCH + Duration::from_nanos(u64::try_from(nanos).expect("after 1970"));
    let e = Dates {
        pk: "p".into(),
        rk: "r".into(),
        when: base,
        chrono_when,
        time_when,
        system_when,
    };
    let row = e.to_row(&defaults()).expect("storable");
    let truncated = DateTime::parse("2024-02-29T12:30:05.1234567Z").expect("valid");
    for column in ["ChronoWhen", "TimeWhen", "SystemWhen"] {
        assert_eq!(row.get(column), Some(&Value::DateTime(truncated)), "{column}");
    }
    let back = Dates::from_row(row).expect("decodes");
    assert_eq!(back.when, base);
    assert_eq!(back.chrono_when.timestamp_subsec_nanos(), 123_456_700);
    assert_eq!(back.time_when.nanosecond(), 123_456_700);
    assert_eq!(
        back.system_when
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .subsec_nanos(),
        123_456_700
    );

    // Before 1970 (negative Unix time) as well.
    let old = DateTime::parse("1700-06-15T12:00:00.1234567Z").expect("valid");
    let e = dates(old);
    let back = Dates::from_row(e.to_row(&defaults()).expect("storable")).expect("decodes");
    assert_eq!(back, e);
    assert_eq!(DateTime::from(back.system_when), old);
}

#[test]
fn a_date_stored_as_a_string_reads_into_every_date_field() {
    let row = row()
        .with("When", string("2024-02-29T12:30:05.1234567Z"))
        .with("ChronoWhen", string("2024-02-29T14:30:05.1234567+02:00"))
        .with("TimeWhen", string("2024-02-29T12:30:05.1234567"))
        .with("SystemWhen", string("2024-02-29T12:30:05.1234567Z"));
    let back = Dates::from_row(row).expect("string cells read into dates");
    let expected = DateTime::parse("2024-02-29T12:30:05.1234567Z").expect("valid");
    assert_eq!(back, dates(expected));

    let (column, expected, _) = expect_decode_error(Dates::from_row(Row::new("p", "r").with("When", string("soon"))));
    assert_eq!((column.as_str(), expected.as_str()), ("When", "a DateTime"));
}

// ---------------------------------------------------------------------------
// Doubles and decimals
// ---------------------------------------------------------------------------

#[test]
fn nan_and_infinities_are_written_as_the_service_writes_them() {
    let e = Numbers {
        pk: "p".into(),
        rk: "r".into(),
        nan: f64::NAN,
        inf: f64::INFINITY,
        neg_inf: f64::NEG_INFINITY,
        money: Decimal::ZERO,
    };
    let row = e.to_row(&defaults()).expect("storable");
    let json = row_to_json(&row);
    for (column, text) in [("Nan", "NaN"), ("Inf", "Infinity"), ("NegInf", "-Infinity")] {
        assert_eq!(json[column], text, "{column}");
        assert_eq!(json[&format!("{column}@odata.type")], "Edm.Double", "{column}");
    }

    // A response body as the service sends it reads back.
    let body = r#"{"PartitionKey":"p","RowKey":"r",
        "Nan@odata.type":"Edm.Double","Nan":"NaN",
        "Inf@odata.type":"Edm.Double","Inf":"Infinity",
        "NegInf@odata.type":"Edm.Double","NegInf":"-Infinity",
        "Money@odata.type":"Edm.Double","Money":0.0}"#;
    let back = Numbers::from_row(row_from_json(&serde_json::from_str(body).expect("JSON")).expect("row")).expect("e");
    assert!(back.nan.is_nan());
    assert_eq!((back.inf, back.neg_inf), (f64::INFINITY, f64::NEG_INFINITY));
}

#[test]
fn decimals_are_stored_as_doubles_and_read_back() {
    let mut e = Numbers {
        pk: "p".into(),
        rk: "r".into(),
        nan: 0.0,
        inf: 0.0,
        neg_inf: 0.0,
        money: Decimal::new(12_345, 2),
    };
    let row = e.to_row(&defaults()).expect("storable");
    assert_eq!(row.get("Money"), Some(&Value::Double(123.45)));
    assert_eq!(Numbers::from_row(row).expect("decodes").money, Decimal::new(12_345, 2));

    e.money = Decimal::new(-1, 7);
    let back = Numbers::from_row(e.to_row(&defaults()).expect("storable")).expect("decodes");
    assert_eq!(back.money, Decimal::new(-1, 7));

    // Int64 and Int32 cells read into a decimal too (T/ColumnAliasTests.cs `Int64Cell_*`).
    let row = Row::new("p", "r")
        .with("Money", Value::Int64(1_234_567_890_123))
        .with("Nan", Value::Int32(2));
    let back = Numbers::from_row(row).expect("integers read into decimal and double");
    assert_eq!(back.money, Decimal::from(1_234_567_890_123_i64));
    assert_eq!(back.nan, 2.0);

    let (column, expected, _) =
        expect_decode_error(Numbers::from_row(Row::new("p", "r").with("Money", Value::Bool(true))));
    assert_eq!((column.as_str(), expected.as_str()), ("Money", "a Double"));
}

// ---------------------------------------------------------------------------
// Strings and GUIDs
// ---------------------------------------------------------------------------

#[test]
fn empty_strings_are_stored_not_dropped() {
    let mut e = texts("");
    e.maybe = Some(String::new());
    let row = e.to_row(&defaults()).expect("storable");
    assert_eq!(row.get("Body"), Some(&string("")));
    assert_eq!(row.get("Maybe"), Some(&string("")));
    let (_, back) = over_the_wire(&row);
    assert_eq!(Texts::from_row(back).expect("decodes"), e);

    // Absent columns: a String reads as empty (as .NET leaves it), an Option as None.
    assert_eq!(Texts::from_row(Row::new("p", "r")).expect("decodes"), texts(""));
}

#[test]
fn unicode_beyond_the_bmp_round_trips_and_counts_two_units_per_character() {
    let e = texts("😀 𝄞 \u{10FFFF} \u{1F980} ä \u{FFFF}");
    let (_, back) = over_the_wire(&e.to_row(&defaults()).expect("storable"));
    assert_eq!(Texts::from_row(back).expect("decodes"), e);

    // 32,767 UTF-16 units (65,533 UTF-8 bytes) is the largest raw cell ...
    let largest = format!("{}a", "😀".repeat(16_383));
    assert_eq!(utf16_units(&largest), 32_767);
    let row = texts(largest.clone()).to_row(&defaults()).expect("storable");
    assert_eq!(row.get("Body"), Some(&Value::String(largest)));
    // ... and 32,768 units goes to a __GZip cell.
    let over = "😀".repeat(16_384);
    let row = texts(over.clone()).to_row(&defaults()).expect("storable");
    assert!(row.get("Body").is_none());
    assert_eq!(
        gunzip_base64(row.get("Body__GZip").expect("gzip cell")),
        serde_json::to_vec(&over).unwrap()
    );
    assert_eq!(Texts::from_row(row).expect("decodes").body, over);
}

#[test]
fn a_guid_stored_as_a_string_reads_into_uuid_and_guid() {
    let row = row()
        .with("Uuid", string("6F9619FF-8B86-D011-B42D-00C04FC964FF"))
        .with("Guid", string("{6f9619ff-8b86-d011-b42d-00c04fc964ff}"));
    let back = Ids::from_row(row).expect("string cells read into GUIDs");
    assert_eq!(back.uuid, uuid::Uuid::from_u128(0x6F9619FF_8B86_D011_B42D_00C04FC964FF));
    assert_eq!(back.guid, Guid(*back.uuid.as_bytes()));

    let row = back.to_row(&defaults()).expect("storable");
    assert_eq!(row.get("Uuid"), Some(&Value::Guid(back.guid)));
    let (json, _) = over_the_wire(&row);
    assert_eq!(json["Uuid"], "6f9619ff-8b86-d011-b42d-00c04fc964ff");
    assert_eq!(json["Uuid@odata.type"], "Edm.Guid");
}

// ---------------------------------------------------------------------------
// Enums
// ---------------------------------------------------------------------------

#[test]
fn an_enum_is_stored_as_its_declared_name() {
    let e = Ticket {
        pk: "p".into(),
        rk: "r".into(),
        status: Status::Paused,
    };
    let row = e.to_row(&defaults()).expect("storable");
    assert_eq!(row.get("Status"), Some(&string("OnHold")));
    assert_eq!(Ticket::from_row(row).expect("decodes"), e);
}

#[test]
fn an_enum_with_an_unknown_name_gives_an_error_listing_the_variants() {
    for name in ["Pending", "open", "Paused"] {
        let (column, expected, found) = expect_decode_error(Ticket::from_row(row().with("Status", string(name))));
        assert_eq!(column, "Status");
        assert!(expected.contains("Open, Closed, OnHold"), "{expected}");
        assert!(found.contains(name), "{found}");
    }
}

#[test]
fn an_enum_stored_as_a_number_reads_by_position() {
    for (cell, status) in [
        (Value::Int32(0), Status::Open),
        (Value::Int32(1), Status::Closed),
        (Value::Int64(2), Status::Paused),
        (string("1"), Status::Closed),
    ] {
        let back = Ticket::from_row(row().with("Status", cell.clone())).expect("a position reads");
        assert_eq!(back.status, status, "{cell:?}");
    }
    let (column, expected, _) = expect_decode_error(Ticket::from_row(row().with("Status", Value::Int32(3))));
    assert_eq!(column, "Status");
    assert!(expected.contains("Open, Closed, OnHold"), "{expected}");
}

// ---------------------------------------------------------------------------
// JSON and gzip cells
// ---------------------------------------------------------------------------

#[test]
fn json_cells_hold_compact_json_as_the_dotnet_library_writes_it() {
    let e = Plan {
        pk: "p".into(),
        rk: "r".into(),
        tags: vec!["a".into(), "b'c".into(), "Привіт".into()],
        steps: vec![Step {
            step_name: "pack".into(),
            done: true,
            note: None,
        }],
    };
    let row = e.to_row(&defaults()).expect("storable");
    assert_eq!(row.get("Tags__Json"), Some(&string(r#"["a","b'c","Привіт"]"#)));
    // Compact, nulls omitted (here by serde's skip_serializing_if); the property order is not part of the format.
    let steps = row.get("Steps__Json").and_then(Value::as_str).expect("a JSON cell");
    assert!(!steps.contains([' ', '\n']), "compact: {steps}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(steps).expect("JSON"),
        serde_json::json!([{ "stepName": "pack", "done": true }])
    );
    assert_eq!(Plan::from_row(row).expect("decodes"), e);

    // Cells the .NET library wrote: \u escapes, HTML-safe escapes, extra properties.
    let row = Row::new("p", "r")
        .with("Tags__Json", string(r#"["\u00e9","\u003Ctag\u003E","\ud83d\ude00"]"#))
        .with(
            "Steps__Json",
            string(r#"[{"stepName":"ship","done":false,"note":"\u0022quoted\u0022","extra":1}]"#),
        );
    let back = Plan::from_row(row).expect(".NET JSON reads");
    assert_eq!(back.tags, ["é", "<tag>", "😀"]);
    assert_eq!(
        back.steps,
        [Step {
            step_name: "ship".into(),
            done: false,
            note: Some("\"quoted\"".into()),
        }]
    );

    let bad = Row::new("p", "r").with("Tags__Json", string("[1,"));
    let (column, expected, _) = expect_decode_error(Plan::from_row(bad));
    assert_eq!(column, "Tags__Json");
    assert!(expected.contains("JSON"), "{expected}");
}

#[test]
fn a_string_over_32767_units_goes_to_a_gzip_cell_of_its_json_literal_and_back() {
    let fits = "x".repeat(32_767);
    let row = texts(fits.clone()).to_row(&defaults()).expect("storable");
    assert_eq!(row.get("Body"), Some(&Value::String(fits)));
    assert!(row.get("Body__GZip").is_none());

    let body = format!("{}\"quoted\" ä 😀", "x".repeat(32_768));
    let e = texts(body.clone());
    let row = e.to_row(&defaults()).expect("storable");
    assert!(row.get("Body").is_none(), "no raw cell beside the gzip cell");
    let cell = row.get("Body__GZip").expect("gzip cell");
    assert_eq!(
        String::from_utf8(gunzip_base64(cell)).expect("UTF-8"),
        serde_json::to_string(&body).expect("a JSON string literal")
    );
    let (_, back) = over_the_wire(&row);
    assert_eq!(Texts::from_row(back).expect("decodes"), e);
}

#[test]
fn a_gzip_cell_from_a_reference_gzip_reads() {
    let body = "héllo \"wörld\" 😀\n".repeat(3);
    let row = Row::new("p", "r")
        .with("Body__GZip", reference_gzip(&serde_json::to_string(&body).unwrap()))
        .with("Maybe__GZip", reference_gzip(r#""short""#));
    let back = Texts::from_row(row).expect("reference gzip reads");
    assert_eq!(back.body, body);
    assert_eq!(back.maybe.as_deref(), Some("short"));

    let row = Row::new("p", "r")
        .with("Tags__GZip", reference_gzip(r#"["a","b"]"#))
        .with("Steps__GZip", reference_gzip(r#"[{"stepName":"x","done":true}]"#));
    let back = Plan::from_row(row).expect("reference gzip reads");
    assert_eq!(back.tags, ["a", "b"]);
    assert_eq!(back.steps[0].step_name, "x");

    let bad = Row::new("p", "r").with("Body__GZip", string("not base64!"));
    let (column, expected, _) = expect_decode_error(Texts::from_row(bad));
    assert_eq!(
        (column.as_str(), expected.as_str()),
        ("Body__GZip", "base64 of gzip data")
    );
}

// ---------------------------------------------------------------------------
// Oversized cells
// ---------------------------------------------------------------------------

#[test]
fn an_oversized_string_is_refused_by_default_naming_the_gzip_column() {
    let body = incompressible(60_000, 7);
    match texts(body).to_row(&defaults()) {
        Err(e @ Error::OversizedValue { .. }) => {
            let message = e.to_string();
            let Error::OversizedValue {
                column, limit, reason, ..
            } = e
            else {
                unreachable!()
            };
            assert_eq!(column, "Body__GZip");
            assert_eq!(limit, 65_535);
            assert!(
                reason.contains("TrimWithMarker") && reason.contains("split"),
                "{reason}"
            );
            assert!(message.contains("Body__GZip"), "{message}");
        }
        other => panic!("expected Error::OversizedValue, got {other:?}"),
    }
}

#[test]
fn trim_with_marker_keeps_30000_units_and_says_so() {
    let body = incompressible(60_000, 11);
    let row = texts(body.clone())
        .to_row(&policy(OversizedCellPolicy::TrimWithMarker))
        .expect("trimmed");
    assert!(row.get("Body__GZip").is_none(), "a trimmed string is a raw cell");
    let kept: String = body.chars().take(30_000).collect();
    let expected = format!("{kept}\n\u{2026}[truncated 30000 chars to fit table storage]");
    assert_eq!(row.get("Body"), Some(&Value::String(expected.clone())));
    assert_eq!(row.get("Body__Truncated"), Some(&string("kept 30000 of 60000 chars")));
    // The marker column is not a field: the entity reads the trimmed text.
    assert_eq!(Texts::from_row(row).expect("decodes").body, expected);

    let silent = texts(body)
        .to_row(&policy(OversizedCellPolicy::TrimSilently))
        .expect("trimmed");
    assert_eq!(
        silent.get("Body"),
        Some(&Value::String(format!(
            "{kept}\n\u{2026}[truncated 30000 chars to fit table storage]"
        )))
    );
    assert!(silent.get("Body__Truncated").is_none());
}

#[test]
fn trimming_does_not_split_a_surrogate_pair() {
    // Units 29,999 and 30,000 are one character: it is dropped whole.
    let body = format!("{}😀{}", "a".repeat(29_999), incompressible(50_000, 3));
    let total = utf16_units(&body);
    let row = texts(body)
        .to_row(&policy(OversizedCellPolicy::TrimWithMarker))
        .expect("trimmed");
    let expected = format!(
        "{}\n\u{2026}[truncated {} chars to fit table storage]",
        "a".repeat(29_999),
        total - 29_999
    );
    assert_eq!(row.get("Body"), Some(&Value::String(expected)));
    assert_eq!(
        row.get("Body__Truncated"),
        Some(&Value::String(format!("kept 29999 of {total} chars")))
    );

    // A pair ending exactly at unit 30,000 is kept.
    let body = format!("{}😀{}", "a".repeat(29_998), incompressible(50_000, 5));
    let row = texts(body)
        .to_row(&policy(OversizedCellPolicy::TrimWithMarker))
        .expect("trimmed");
    let text = row.get("Body").and_then(Value::as_str).expect("raw cell");
    assert!(text.starts_with(&format!("{}😀\n\u{2026}[truncated ", "a".repeat(29_998))));
    assert_eq!(
        row.get("Body__Truncated")
            .and_then(Value::as_str)
            .map(|m| m.starts_with("kept 30000 of ")),
        Some(true)
    );
}

#[test]
fn an_oversized_list_is_trimmed_by_halving_with_a_marker() {
    let total = 4_000;
    let tags: Vec<String> = (0..total).map(|i| incompressible(30, i as u64 + 1)).collect();
    let e = Plan {
        pk: "p".into(),
        rk: "r".into(),
        tags: tags.clone(),
        steps: Vec::new(),
    };
    let row = e.to_row(&policy(OversizedCellPolicy::TrimWithMarker)).expect("trimmed");
    assert!(row.get("Tags__Json").is_none());
    let kept: Vec<String> =
        serde_json::from_slice(&gunzip_base64(row.get("Tags__GZip").expect("gzip cell"))).expect("a JSON list");
    let n = kept.len();
    assert_eq!(kept, tags[..n]);
    // n is the first of Count/2, Count/4, ... whose gzip fits.
    let halvings: Vec<usize> = std::iter::successors(Some(total / 2), |k| Some(k / 2))
        .take_while(|k| *k > 0)
        .collect();
    assert!(halvings.contains(&n) && n < total, "kept {n}");
    assert!(n > 0);
    let twice = reference_gzip(&serde_json::to_string(&tags[..(2 * n).min(total)]).unwrap());
    assert!(
        twice.as_str().unwrap().len() * 2 > 65_535 || 2 * n >= total,
        "a longer prefix would have fit"
    );
    assert_eq!(
        row.get("Tags__Truncated"),
        Some(&Value::String(format!("kept {n} of {total} items")))
    );
    assert_eq!(Plan::from_row(row).expect("decodes").tags, kept);

    // Refused by default, naming the gzip column.
    match e.to_row(&defaults()) {
        Err(Error::OversizedValue { column, .. }) => assert_eq!(column, "Tags__GZip"),
        other => panic!("expected Error::OversizedValue, got {other:?}"),
    }
}

/// A JSON value that is not a list and does not fit even compressed is
/// dropped under the trimming policies, with .NET's marker text under
/// `TrimWithMarker`.
#[test]
fn an_oversized_json_value_that_is_not_a_list_is_dropped_with_a_marker() {
    #[derive(TableEntity, Debug)]
    struct Bag {
        #[table(partition_key)]
        pk: String,
        #[table(row_key)]
        rk: String,
        names: std::collections::BTreeMap<String, String>,
    }
    let names = (0..100u64)
        .map(|i| (i.to_string(), incompressible(1_000, i + 7)))
        .collect();
    let bag = Bag {
        pk: "p".into(),
        rk: "r".into(),
        names,
    };
    let row = bag
        .to_row(&policy(OversizedCellPolicy::TrimWithMarker))
        .expect("dropped");
    assert!(row.get("Names__Json").is_none() && row.get("Names__GZip").is_none());
    assert_eq!(
        row.get("Names__Truncated"),
        Some(&Value::String(
            "property dropped: compressed payload exceeds the 64 KB cell cap".into()
        ))
    );
    let silent = bag.to_row(&policy(OversizedCellPolicy::TrimSilently)).expect("dropped");
    assert!(silent.get("Names__Truncated").is_none() && silent.get("Names__GZip").is_none());
}

// ---------------------------------------------------------------------------
// Nested records: names spelled at compile time, aliases, records in records
// ---------------------------------------------------------------------------

#[derive(unified_tables::TableRecord, Debug, Clone, PartialEq, Default)]
struct Point {
    lat: f64,
    #[alias("Longitude")]
    lon: f64,
}

#[derive(unified_tables::TableRecord, Debug, Clone, PartialEq, Default)]
struct Place {
    #[alias("Town")]
    city: String,
    tags: Vec<String>,
    #[table(flatten)]
    at: Point,
    #[table(flatten)]
    backup: Option<Point>,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Trip {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    title: String,
    #[table(flatten)]
    from: Place,
    labels: Vec<String>,
    #[table(flatten)]
    to: Option<Place>,
}

fn trip() -> Trip {
    Trip {
        pk: "p".into(),
        rk: "r".into(),
        title: "North".into(),
        from: Place {
            city: "Oslo".into(),
            tags: vec!["home".into()],
            at: Point { lat: 59.9, lon: 10.7 },
            backup: None,
        },
        labels: vec!["a".into(), "b".into()],
        to: Some(Place {
            city: "Tromsø".into(),
            tags: vec![],
            at: Point { lat: 69.6, lon: 18.9 },
            backup: Some(Point { lat: 1.0, lon: 2.0 }),
        }),
    }
}

#[test]
fn nested_records_write_their_columns_under_each_prefix() {
    let row = trip().to_row(&EncodeOptions::default()).unwrap();
    let mut names: Vec<&str> = row.properties.keys().map(|k| k.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "From_At_Lat",
            "From_At_Lon",
            "From_City",
            "From_Tags__Json",
            "Labels__Json",
            "Title",
            "To_At_Lat",
            "To_At_Lon",
            "To_Backup_Lat",
            "To_Backup_Lon",
            "To_City",
            "To_Tags__Json",
        ]
    );
    assert_eq!(row.get("To_Backup_Lon"), Some(&Value::Double(2.0)));
    assert_eq!(row.get("From_Tags__Json"), Some(&Value::String(r#"["home"]"#.into())));
    assert_eq!(Trip::from_row(row).unwrap(), trip());
}

#[test]
fn nested_records_read_their_aliases_under_each_prefix() {
    let row = Row::new("p", "r")
        .with("Title", Value::String("North".into()))
        .with("From_Town", Value::String("Oslo".into()))
        .with("From_At_Lat", Value::Double(59.9))
        .with("From_At_Longitude", Value::Double(10.7))
        .with("To_Backup_Longitude", Value::Double(2.0));
    let trip = Trip::from_row(row).unwrap();
    assert_eq!(trip.from.city, "Oslo");
    assert_eq!(trip.from.at, Point { lat: 59.9, lon: 10.7 });
    let to = trip.to.expect("a column under To_ makes the record present");
    assert_eq!(to.backup, Some(Point { lat: 0.0, lon: 2.0 }));
    assert_eq!(to.city, "");
}
