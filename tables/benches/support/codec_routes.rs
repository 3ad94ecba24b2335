//! One entity encoded to a `Row` and decoded back three ways: the
//! derive-generated `to_row` + `from_row`, hand-written code producing the
//! very same `Row`, and the generic route (serde_json::Value, flattened into
//! columns and back). Used by the `codec` bench and by the `figures` example.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use unified_tables::{
    ColumnName, DateTime, EncodeOptions, Error, Properties, Row, TableEntity, TableEnum, TableRecord, Value,
};
use uuid::Uuid;

// ---------------------------------------------------------------------------
// The entity
// ---------------------------------------------------------------------------

/// An order's state, stored as its variant name.
#[derive(TableEnum, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    Paid,
    Shipped,
    Cancelled,
}

/// A postal address, flattened into `ShipTo_*` columns.
#[derive(TableRecord, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct Address {
    street: String,
    city: String,
    zip: String,
}

/// The benchmarked entity: 14 columns of every common kind.
#[derive(TableEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "PascalCase")]
pub struct Order {
    #[table(partition_key)]
    customer: String,
    #[table(row_key)]
    order_no: String,
    title: String,
    note: String,
    total_cents: i64,
    quantity: i32,
    weight_kg: f64,
    paid: bool,
    #[serde(with = "datetime_text")]
    placed_at: DateTime,
    status: Status,
    #[serde(with = "uuid_text")]
    tracking: Uuid,
    coupon: Option<String>,
    #[table(flatten)]
    ship_to: Address,
    tags: Vec<String>,
}

/// serde for `DateTime` (which has no serde impl): its ISO text.
mod datetime_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use unified_tables::DateTime;

    pub(super) fn serialize<S: Serializer>(t: &DateTime, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(t)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime, D::Error> {
        let text = String::deserialize(d)?;
        DateTime::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// serde for `Uuid` without relying on uuid's `serde` feature: hyphenated text.
mod uuid_text {
    use serde::{Deserialize, Deserializer, Serializer};
    use uuid::Uuid;

    pub(super) fn serialize<S: Serializer>(u: &Uuid, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&u.hyphenated())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Uuid, D::Error> {
        let text = String::deserialize(d)?;
        Uuid::try_parse(&text).map_err(serde::de::Error::custom)
    }
}

/// One realistic order.
pub fn sample() -> Order {
    Order {
        customer: "contoso-eu".into(),
        order_no: "2024-000123".into(),
        title: "Standing desk, oak, 160 x 80".into(),
        note: "Leave at the reception; call +33 1 23 45 67 89 on arrival.".into(),
        total_cents: 74_990,
        quantity: 2,
        weight_kg: 38.75,
        paid: true,
        placed_at: DateTime::parse("2024-03-14T09:26:53.5897932Z").expect("valid date"),
        status: Status::Shipped,
        tracking: Uuid::from_u128(0x6f96_19ff_8b86_d011_b42d_00c0_4fc9_64ff),
        coupon: Some("SPRING24".into()),
        ship_to: Address {
            street: "12 rue de la Paix".into(),
            city: "Paris".into(),
            zip: "75002".into(),
        },
        tags: vec!["furniture".into(), "bulky".into(), "gift".into(), "priority".into()],
    }
}

// ---------------------------------------------------------------------------
// (b) Hand-written: the same Row as the derive, with the same checks.
// ---------------------------------------------------------------------------

const MAX_CELL_BYTES: usize = 65_535;

fn hand_string(row: &mut Row, column: &'static str, s: &str) -> Result<(), Error> {
    // UTF-16 units never exceed UTF-8 bytes: a short string needs no count.
    if s.len() * 2 > MAX_CELL_BYTES && s.encode_utf16().count() * 2 > MAX_CELL_BYTES {
        return Err(Error::InvalidValue {
            column: column.to_owned(),
            reason: "too large for one cell".into(),
        });
    }
    row.properties
        .insert(ColumnName::from_static(column), Value::String(s.to_owned()));
    Ok(())
}

/// The hand-written encoder: the same `Row` as the derive, with the same checks.
pub fn hand_to_row(o: &Order) -> Result<Row, Error> {
    // Literal names are borrowed, not copied; the cells fit without growing.
    let mut row = Row::new(o.customer.clone(), o.order_no.clone());
    row.properties = Properties::with_capacity(14);
    hand_string(&mut row, "Title", &o.title)?;
    hand_string(&mut row, "Note", &o.note)?;
    let p = &mut row.properties;
    p.insert(ColumnName::from_static("TotalCents"), Value::Int64(o.total_cents));
    p.insert(ColumnName::from_static("Quantity"), Value::Int32(o.quantity));
    p.insert(ColumnName::from_static("WeightKg"), Value::Double(o.weight_kg));
    p.insert(ColumnName::from_static("Paid"), Value::Bool(o.paid));
    if !o.placed_at.is_storable() {
        return Err(Error::InvalidValue {
            column: "PlacedAt".into(),
            reason: "outside the storable range".into(),
        });
    }
    p.insert(ColumnName::from_static("PlacedAt"), Value::DateTime(o.placed_at));
    let status = match o.status {
        Status::Pending => "Pending",
        Status::Paid => "Paid",
        Status::Shipped => "Shipped",
        Status::Cancelled => "Cancelled",
    };
    p.insert(ColumnName::from_static("Status"), Value::String(status.to_owned()));
    p.insert(ColumnName::from_static("Tracking"), Value::Guid(o.tracking.into()));
    if let Some(c) = &o.coupon {
        hand_string(&mut row, "Coupon", c)?;
    }
    hand_string(&mut row, "ShipTo_Street", &o.ship_to.street)?;
    hand_string(&mut row, "ShipTo_City", &o.ship_to.city)?;
    hand_string(&mut row, "ShipTo_Zip", &o.ship_to.zip)?;
    let tags = serde_json::to_string(&o.tags).map_err(|e| Error::InvalidValue {
        column: "Tags".into(),
        reason: e.to_string(),
    })?;
    if tags.len() * 2 > MAX_CELL_BYTES {
        return Err(Error::InvalidValue {
            column: "Tags__Json".into(),
            reason: "too large for one cell".into(),
        });
    }
    row.properties
        .insert(ColumnName::from_static("Tags__Json"), Value::String(tags));
    Ok(row)
}

#[cold]
fn mismatch(column: &str, expected: &str, found: &Value) -> Error {
    Error::Decode {
        column: column.to_owned(),
        expected: expected.to_owned(),
        found: format!("{found:?}"),
    }
}

fn take_string(row: &mut Row, column: &str) -> Result<String, Error> {
    match row.properties.remove(column) {
        Some(Value::String(s)) => Ok(s),
        None => Ok(String::new()),
        Some(other) => Err(mismatch(column, "a string", &other)),
    }
}

/// The hand-written decoder.
pub fn hand_from_row(mut row: Row) -> Result<Order, Error> {
    let p = &mut row.properties;
    let total_cents = match p.remove("TotalCents") {
        Some(Value::Int64(v)) => v,
        Some(Value::Int32(v)) => v as i64,
        None => 0,
        Some(other) => return Err(mismatch("TotalCents", "i64", &other)),
    };
    let quantity = match p.remove("Quantity") {
        Some(Value::Int32(v)) => v,
        Some(Value::Int64(v)) => i32::try_from(v).map_err(|_| mismatch("Quantity", "i32", &Value::Int64(v)))?,
        None => 0,
        Some(other) => return Err(mismatch("Quantity", "i32", &other)),
    };
    let weight_kg = match p.remove("WeightKg") {
        Some(Value::Double(v)) => v,
        Some(Value::Int32(v)) => v as f64,
        Some(Value::Int64(v)) => v as f64,
        None => 0.0,
        Some(other) => return Err(mismatch("WeightKg", "a Double", &other)),
    };
    let paid = match p.remove("Paid") {
        Some(Value::Bool(b)) => b,
        None => false,
        Some(other) => return Err(mismatch("Paid", "a Boolean", &other)),
    };
    let placed_at = match p.remove("PlacedAt") {
        Some(Value::DateTime(t)) => t,
        Some(Value::String(s)) => DateTime::parse(&s)?,
        None => DateTime::MIN_STORABLE,
        Some(other) => return Err(mismatch("PlacedAt", "a DateTime", &other)),
    };
    let status = match p.remove("Status") {
        Some(Value::String(s)) => match s.as_str() {
            "Pending" => Status::Pending,
            "Paid" => Status::Paid,
            "Shipped" => Status::Shipped,
            "Cancelled" => Status::Cancelled,
            _ => return Err(mismatch("Status", "a Status variant", &Value::String(s))),
        },
        Some(other) => return Err(mismatch("Status", "a Status variant", &other)),
        None => return Err(mismatch("Status", "a Status variant", &Value::String(String::new()))),
    };
    let tracking = match p.remove("Tracking") {
        Some(Value::Guid(g)) => Uuid::from(g),
        Some(Value::String(s)) => Uuid::try_parse(&s).map_err(|_| mismatch("Tracking", "a Guid", &Value::String(s)))?,
        None => Uuid::nil(),
        Some(other) => return Err(mismatch("Tracking", "a Guid", &other)),
    };
    let tags = match p.remove("Tags__Json") {
        Some(Value::String(s)) => serde_json::from_str(&s).map_err(|e| Error::Decode {
            column: "Tags__Json".into(),
            expected: "JSON for Vec<String>".into(),
            found: e.to_string(),
        })?,
        None => Vec::new(),
        Some(other) => return Err(mismatch("Tags__Json", "a JSON string", &other)),
    };
    let coupon = match row.properties.remove("Coupon") {
        Some(Value::String(s)) => Some(s),
        None => None,
        Some(other) => return Err(mismatch("Coupon", "a string", &other)),
    };
    Ok(Order {
        customer: std::mem::take(&mut row.partition_key),
        order_no: std::mem::take(&mut row.row_key),
        title: take_string(&mut row, "Title")?,
        note: take_string(&mut row, "Note")?,
        total_cents,
        quantity,
        weight_kg,
        paid,
        placed_at,
        status,
        tracking,
        coupon,
        ship_to: Address {
            street: take_string(&mut row, "ShipTo_Street")?,
            city: take_string(&mut row, "ShipTo_City")?,
            zip: take_string(&mut row, "ShipTo_Zip")?,
        },
        tags,
    })
}

// ---------------------------------------------------------------------------
// (c) Generic: serde_json::Value flattened into columns and back.
// ---------------------------------------------------------------------------

type Json = serde_json::Value;
type JsonMap = serde_json::Map<String, Json>;

fn flatten_into(row: &mut Row, prefix: &str, map: JsonMap) {
    for (key, value) in map {
        let name = if prefix.is_empty() {
            key
        } else {
            format!("{prefix}_{key}")
        };
        match value {
            Json::Null => {}
            Json::Bool(b) => row.insert(name, Value::Bool(b)),
            Json::Number(n) => match n.as_i64() {
                Some(i) => row.insert(name, Value::Int64(i)),
                None => row.insert(name, Value::Double(n.as_f64().unwrap_or(f64::NAN))),
            },
            Json::String(s) => row.insert(name, Value::String(s)),
            Json::Array(_) => row.insert(format!("{name}__Json"), Value::String(value.to_string())),
            Json::Object(m) => flatten_into(row, &name, m),
        }
    }
}

/// The generic encoder: `serde_json::to_value`, flattened into columns.
pub fn generic_to_row(o: &Order) -> Row {
    let Json::Object(mut map) = serde_json::to_value(o).expect("serializable") else {
        unreachable!("a struct serializes to an object")
    };
    let mut key = |name: &str| match map.remove(name) {
        Some(Json::String(s)) => s,
        _ => String::new(),
    };
    let mut row = Row::new(key("Customer"), key("OrderNo"));
    flatten_into(&mut row, "", map);
    row
}

fn insert_path(root: &mut JsonMap, path: &str, value: Json) {
    let mut parts = path.split('_').filter(|p| !p.is_empty()).peekable();
    let mut obj = root;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            obj.insert(part.to_owned(), value);
            return;
        }
        let slot = obj
            .entry(part.to_owned())
            .or_insert_with(|| Json::Object(JsonMap::new()));
        match slot {
            Json::Object(m) => obj = m,
            _ => return,
        }
    }
}

/// The generic decoder: columns back into a JSON object, then `serde_json::from_value`.
pub fn generic_from_row(row: Row) -> Order {
    let mut root = JsonMap::new();
    root.insert("Customer".into(), Json::String(row.partition_key));
    root.insert("OrderNo".into(), Json::String(row.row_key));
    for (name, value) in row.properties {
        if let Some(base) = name.strip_suffix(unified_tables::layout::JSON_SUFFIX) {
            let parsed = match &value {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Json::Null),
                _ => Json::Null,
            };
            insert_path(&mut root, base, parsed);
            continue;
        }
        let json = match value {
            Value::String(s) => Json::String(s),
            Value::Bool(b) => Json::Bool(b),
            Value::Int32(v) => Json::from(v),
            Value::Int64(v) => Json::from(v),
            Value::Double(v) => Json::from(v),
            Value::DateTime(t) => Json::String(t.to_string()),
            Value::Guid(g) => Json::String(g.to_string()),
            Value::Binary(b) => Json::from(b),
        };
        insert_path(&mut root, &name, json);
    }
    serde_json::from_value(Json::Object(root)).expect("deserializable")
}

// ---------------------------------------------------------------------------
// The three routes, one round trip each.
// ---------------------------------------------------------------------------

/// `to_row` + `from_row` generated by the derive.
pub fn derive_round_trip(o: &Order, opts: &EncodeOptions) -> Order {
    let row = o.to_row(opts).expect("encodes");
    Order::from_row(row).expect("decodes")
}

/// The hand-written round trip.
pub fn hand_round_trip(o: &Order) -> Order {
    let row = hand_to_row(o).expect("encodes");
    hand_from_row(row).expect("decodes")
}

/// The generic serde round trip.
pub fn generic_round_trip(o: &Order) -> Order {
    generic_from_row(generic_to_row(o))
}

/// Asserts that the three routes store and restore the same order.
pub fn check_routes_agree(o: &Order) {
    let opts = EncodeOptions::default();
    let derived = o.to_row(&opts).expect("derive encodes");
    let hand = hand_to_row(o).expect("hand-written encodes");
    assert_eq!(derived, hand, "derive and hand-written rows differ");
    assert_eq!(derived.properties.len(), 14, "unexpected column set: {derived:?}");
    assert_eq!(&Order::from_row(derived).expect("derive decodes"), o);
    assert_eq!(&hand_from_row(hand).expect("hand-written decodes"), o);
    let generic = generic_to_row(o);
    assert!(generic.get("ShipTo_City").is_some() && generic.get("Tags__Json").is_some());
    assert_eq!(&generic_from_row(generic), o);
}

// ---------------------------------------------------------------------------
// The plain timing loop.
// ---------------------------------------------------------------------------

/// Round trips timed per route in each round.
pub const ITERATIONS: u32 = 100_000;
/// Untimed round trips per route before the first round.
pub const WARM_UP: u32 = 20_000;
/// Interleaved rounds; the best round of each route is its figure (many
/// short rounds, so that a neighbour's burst of work spoils few of them).
pub const ROUNDS: usize = 11;
/// The routes' names, in the order of [`RoundTrips::ns`].
pub const ROUTES: [&str; 3] = ["derive", "hand-written", "generic serde"];

/// Nanoseconds per `to_row` + `from_row` of each route.
#[derive(Debug, Clone, Copy)]
pub struct RoundTrips {
    /// Derive, hand-written, generic serde, as in [`ROUTES`].
    pub ns: [f64; 3],
}

impl RoundTrips {
    /// The derive route.
    pub fn derive(&self) -> f64 {
        self.ns[0]
    }

    /// The hand-written route.
    pub fn hand_written(&self) -> f64 {
        self.ns[1]
    }

    /// The generic serde route.
    pub fn generic(&self) -> f64 {
        self.ns[2]
    }
}

fn time_loop(iterations: u32, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    start.elapsed()
}

/// One route's round trip, timed in a loop.
type Route<'a> = Box<dyn FnMut() + 'a>;

/// Times the three round trips: a warm-up, then [`ROUNDS`] interleaved rounds
/// of [`ITERATIONS`] each; the best round of each route is its figure.
pub fn time_round_trips(o: &Order) -> RoundTrips {
    let opts = EncodeOptions::default();
    let mut routes: [Route<'_>; 3] = [
        Box::new(|| drop(black_box(derive_round_trip(black_box(o), &opts)))),
        Box::new(|| drop(black_box(hand_round_trip(black_box(o))))),
        Box::new(|| drop(black_box(generic_round_trip(black_box(o))))),
    ];
    for f in routes.iter_mut() {
        time_loop(WARM_UP, f);
    }
    let mut best = [Duration::MAX; 3];
    for _ in 0..ROUNDS {
        for (i, f) in routes.iter_mut().enumerate() {
            best[i] = best[i].min(time_loop(ITERATIONS, f));
        }
    }
    RoundTrips {
        ns: best.map(|d| d.as_secs_f64() * 1e9 / f64::from(ITERATIONS)),
    }
}
