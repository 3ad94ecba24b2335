//! Property test: any entity survives `to_row` -> `from_row`, and its row
//! survives the service's JSON wire form unchanged.

use proptest::prelude::*;
use unified_tables::wire::{row_from_json, row_to_json};
use unified_tables::{DateTime, EncodeOptions, Guid, Row, TableEntity, TableEnum, TableRecord, Value};

#[derive(TableEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Mood {
    Calm,
    Busy,
    #[table(rename = "OnFire")]
    Burning,
}

#[derive(TableRecord, Debug, Clone, PartialEq)]
struct Inner {
    label: String,
    count: i32,
    ratio: f64,
    maybe: Option<i64>,
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Arb {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    text: String,
    empty: String,
    letter: char,
    flag: bool,
    tiny: i8,
    short: i16,
    small: i32,
    big: i64,
    byte: u8,
    word: u16,
    unsigned: u32,
    ubig: u64,
    size: usize,
    single: f32,
    double: f64,
    when: DateTime,
    uuid: uuid::Uuid,
    guid: Guid,
    bytes: Vec<u8>,
    mood: Mood,
    maybe_mood: Option<Mood>,
    maybe_text: Option<String>,
    maybe_int: Option<i32>,
    maybe_double: Option<f64>,
    maybe_when: Option<DateTime>,
    tags: Vec<String>,
    finite: Vec<f64>,
    #[table(flatten)]
    inner: Inner,
    #[table(flatten)]
    maybe_inner: Option<Inner>,
}

/// Text of any Unicode scalar values, with a good share of characters
/// beyond the BMP, controls, quotes and the empty string.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => any::<String>(),
        2 => "\\PC{0,24}",
        2 => proptest::collection::vec(
            prop_oneof![
                any::<char>(),
                (0x1_0000u32..=0x10_FFFF).prop_filter_map("a scalar value", char::from_u32),
                Just('"'),
                Just('\\'),
                Just('\u{0}'),
                Just('\u{FFFF}'),
                Just('\u{2028}'),
            ],
            0..24
        )
        .prop_map(|chars| chars.into_iter().collect()),
        1 => Just(String::new()),
    ]
}

/// Every class of f64: normal, subnormal, zeros, infinities, NaN, extremes.
fn double() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any::<f64>(),
        1 => proptest::num::f64::SUBNORMAL | proptest::num::f64::POSITIVE | proptest::num::f64::NEGATIVE,
        1 => prop::sample::select(vec![
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            5e-324,
            -5e-324,
            0.1,
            1e21,
            1e-7,
        ]),
    ]
}

fn finite_double() -> impl Strategy<Value = f64> {
    proptest::num::f64::NORMAL
        | proptest::num::f64::SUBNORMAL
        | proptest::num::f64::ZERO
        | proptest::num::f64::POSITIVE
        | proptest::num::f64::NEGATIVE
}

/// Any instant the service stores, at 100 ns precision, bounds included.
fn instant() -> impl Strategy<Value = DateTime> {
    let (lo, hi) = (DateTime::MIN_STORABLE.ticks(), DateTime::MAX.ticks());
    prop_oneof![
        4 => (lo..=hi).prop_map(|t| DateTime::from_ticks(t).expect("in range")),
        1 => prop::sample::select(vec![DateTime::MIN_STORABLE, DateTime::MAX, DateTime::UNIX_EPOCH]),
    ]
}

fn mood() -> impl Strategy<Value = Mood> {
    prop::sample::select(vec![Mood::Calm, Mood::Busy, Mood::Burning])
}

fn inner() -> impl Strategy<Value = Inner> {
    (text(), any::<i32>(), double(), proptest::option::of(any::<i64>())).prop_map(|(label, count, ratio, maybe)| {
        Inner {
            label,
            count,
            ratio,
            maybe,
        }
    })
}

prop_compose! {
    fn ints()(
        tiny in any::<i8>(),
        short in any::<i16>(),
        small in any::<i32>(),
        big in prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0i64), any::<i64>()],
        byte in any::<u8>(),
        word in any::<u16>(),
        unsigned in any::<u32>(),
        ubig in prop_oneof![Just(0u64), Just(i64::MAX as u64), 0..=i64::MAX as u64],
        size in 0..=i64::MAX as usize,
    ) -> (i8, i16, i32, i64, u8, u16, u32, u64, usize) {
        (tiny, short, small, big, byte, word, unsigned, ubig, size)
    }
}

prop_compose! {
    fn arb()(
        (pk, rk, text_v, letter, flag) in (text(), text(), text(), any::<char>(), any::<bool>()),
        (tiny, short, small, big, byte, word, unsigned, ubig, size) in ints(),
        (single, double_v, when, uuid, guid) in (
            prop_oneof![any::<f32>(), Just(f32::NAN), Just(f32::MIN_POSITIVE / 2.0)],
            double(),
            instant(),
            any::<u128>().prop_map(uuid::Uuid::from_u128),
            any::<[u8; 16]>().prop_map(Guid),
        ),
        (bytes, mood_v, maybe_mood) in (
            proptest::collection::vec(any::<u8>(), 0..40),
            mood(),
            proptest::option::of(mood()),
        ),
        (maybe_text, maybe_int, maybe_double, maybe_when) in (
            proptest::option::of(text()),
            proptest::option::of(any::<i32>()),
            proptest::option::of(double()),
            proptest::option::of(instant()),
        ),
        (tags, finite) in (
            proptest::collection::vec(text(), 0..6),
            proptest::collection::vec(finite_double(), 0..6),
        ),
        (inner_v, maybe_inner) in (inner(), proptest::option::of(inner())),
    ) -> Arb {
        Arb {
            pk,
            rk,
            text: text_v,
            empty: String::new(),
            letter,
            flag,
            tiny,
            short,
            small,
            big,
            byte,
            word,
            unsigned,
            ubig,
            size,
            single,
            double: double_v,
            when,
            uuid,
            guid,
            bytes,
            mood: mood_v,
            maybe_mood,
            maybe_text,
            maybe_int,
            maybe_double,
            maybe_when,
            tags,
            finite,
            inner: inner_v,
            maybe_inner,
        }
    }
}

/// NaN-aware float equality that also tells 0.0 from -0.0.
fn same_f64(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn same_opt_f64(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_f64(a, b),
        (a, b) => a.is_none() && b.is_none(),
    }
}

fn same_inner(a: &Inner, b: &Inner) -> bool {
    same_f64(a.ratio, b.ratio)
        && Inner {
            ratio: 0.0,
            ..a.clone()
        } == Inner {
            ratio: 0.0,
            ..b.clone()
        }
}

/// Entity equality where NaN equals NaN (float fields compared bitwise otherwise).
fn same_entity(a: &Arb, b: &Arb) -> bool {
    let floats = same_f64(f64::from(a.single), f64::from(b.single))
        && same_f64(a.double, b.double)
        && same_opt_f64(a.maybe_double, b.maybe_double)
        && a.finite.len() == b.finite.len()
        && a.finite.iter().zip(&b.finite).all(|(x, y)| same_f64(*x, *y))
        && same_inner(&a.inner, &b.inner)
        && match (&a.maybe_inner, &b.maybe_inner) {
            (Some(x), Some(y)) => same_inner(x, y),
            (x, y) => x.is_none() && y.is_none(),
        };
    let strip = |e: &Arb| Arb {
        single: 0.0,
        double: 0.0,
        maybe_double: e.maybe_double.map(|_| 0.0),
        finite: Vec::new(),
        inner: Inner {
            ratio: 0.0,
            ..e.inner.clone()
        },
        maybe_inner: e.maybe_inner.clone().map(|i| Inner { ratio: 0.0, ..i }),
        ..e.clone()
    };
    floats && strip(a) == strip(b)
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => same_f64(*x, *y),
        _ => a == b,
    }
}

/// Row equality where NaN cells equal NaN cells.
fn same_row(a: &Row, b: &Row) -> bool {
    a.partition_key == b.partition_key
        && a.row_key == b.row_key
        && a.etag == b.etag
        && a.timestamp == b.timestamp
        && a.properties.len() == b.properties.len()
        && a.properties
            .iter()
            .all(|(k, va)| b.properties.get(k).is_some_and(|vb| same_value(va, vb)))
}

proptest! {
    // Failures are reported with their shrunk input; no regression file is written beside the test.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn entity_survives_its_row(e in arb()) {
        let row = e.to_row(&EncodeOptions::default()).expect("every generated value is storable");
        let back = Arb::from_row(row.clone()).expect("a written row reads back");
        prop_assert!(same_entity(&e, &back), "entity changed\n before: {e:?}\n after:  {back:?}\n row: {row:?}");
    }

    #[test]
    fn row_survives_the_wire_json(e in arb()) {
        let row = e.to_row(&EncodeOptions::default()).expect("every generated value is storable");
        let text = serde_json::to_string(&row_to_json(&row)).expect("a row serializes");
        let parsed: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).expect("valid JSON");
        let back = row_from_json(&parsed).expect("the wire form reads back");
        prop_assert!(same_row(&row, &back), "row changed\n before: {row:?}\n after:  {back:?}\n wire: {text}");
        let entity = Arb::from_row(back).expect("the row read from the wire decodes");
        prop_assert!(same_entity(&e, &entity), "entity changed over the wire\n before: {e:?}\n after:  {entity:?}");
    }
}

#[test]
fn a_fixed_entity_with_every_edge_survives_both_routes() {
    let e = Arb {
        pk: "p\u{1F600}".into(),
        rk: String::new(),
        text: "𝄞 \u{10FFFF} \"q\" \\ \u{0} \u{2028}".into(),
        empty: String::new(),
        letter: '\u{1F980}',
        flag: true,
        tiny: i8::MIN,
        short: i16::MIN,
        small: i32::MIN,
        big: i64::MIN,
        byte: u8::MAX,
        word: u16::MAX,
        unsigned: u32::MAX,
        ubig: i64::MAX as u64,
        size: i64::MAX as usize,
        single: f32::NAN,
        double: 5e-324,
        when: DateTime::MAX,
        uuid: uuid::Uuid::max(),
        guid: Guid([0; 16]),
        bytes: vec![0, 255],
        mood: Mood::Burning,
        maybe_mood: None,
        maybe_text: Some(String::new()),
        maybe_int: Some(i32::MAX),
        maybe_double: Some(f64::NEG_INFINITY),
        maybe_when: Some(DateTime::MIN_STORABLE),
        tags: vec![String::new(), "\u{1F600}".into()],
        finite: vec![-0.0, f64::MAX, f64::MIN_POSITIVE / 4.0],
        inner: Inner {
            label: String::new(),
            count: 0,
            ratio: f64::NAN,
            maybe: None,
        },
        maybe_inner: Some(Inner {
            label: String::new(),
            count: 0,
            ratio: -0.0,
            maybe: Some(i64::MAX),
        }),
    };
    let row = e.to_row(&EncodeOptions::default()).expect("storable");
    assert!(same_entity(&e, &Arb::from_row(row.clone()).expect("decodes")));
    let text = serde_json::to_string(&row_to_json(&row)).expect("serializes");
    let back = row_from_json(&serde_json::from_str(&text).expect("valid JSON")).expect("reads back");
    assert!(same_row(&row, &back), "{row:?}\n{back:?}");
}

/// Doubles found by the property test that serde_json's default float parser
/// reads back one ULP off (it is exact only with its `float_roundtrip`
/// feature). They must survive a JSON list cell and a Double cell on the wire.
#[test]
fn doubles_survive_json_cells_and_the_wire_exactly() {
    for x in [-6.441768026197089e-111, 1.949431133830148e-308] {
        let mut e = Arb::from_row(Row::new("p", "r").with("Mood", Value::String("Calm".into()))).expect("defaults");
        e.finite = vec![x];
        e.double = x;
        let row = e.to_row(&EncodeOptions::default()).expect("storable");
        let back = Arb::from_row(row.clone()).expect("decodes");
        assert_eq!(back.finite[0].to_bits(), x.to_bits(), "{x:e} in a __Json cell");
        let text = serde_json::to_string(&row_to_json(&row)).expect("serializes");
        let wire = row_from_json(&serde_json::from_str(&text).expect("valid JSON")).expect("reads back");
        assert_eq!(
            wire.get("Double"),
            Some(&Value::Double(x)),
            "{x:e} in a Double cell on the wire"
        );
    }
}
