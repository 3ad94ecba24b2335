//! Every value type's round trip through a real backend.

use unified_tables::backend::{Backend, WriteOp};
use unified_tables::{EdmType, Row, Value};

use crate::model::Everything;
use crate::Env;

pub async fn every_value_type_round_trips(env: &Env) {
    let store = env.tables.store_in::<Everything>(&env.table);
    let mut e = Everything::sample("p", "r");
    store.create(&mut e).await.unwrap();
    let got = store.get(("p", "r")).await.unwrap().unwrap();
    assert!(got.same_values(&e), "\nstored: {e:#?}\nread:   {got:#?}");

    let mut other = Everything::sample("p", "s");
    other.billing = Some(other.address.clone());
    other.address.geo = None;
    other.address.zip = None;
    other.maybe_extra = Some(other.extra.clone());
    other.no_bytes = Some(Vec::new());
    other.maybe_text = Some(String::new());
    other.text = String::new();
    other.tags.clear();
    store.create(&mut other).await.unwrap();
    let got = store.get(("p", "s")).await.unwrap().unwrap();
    assert!(got.same_values(&other), "\nstored: {other:#?}\nread:   {got:#?}");

    // Absent options are absent columns, never nulls.
    let raw = env.backend().get(&env.table, "p", "r").await.unwrap().unwrap();
    for absent in ["NoBytes", "MaybeText", "MaybeExtra__Json", "Billing_City", "Scratch"] {
        assert!(raw.get(absent).is_none(), "{absent} should be absent");
    }
    let types: Vec<(&str, EdmType)> = vec![
        ("Big", EdmType::Int64),
        ("Small", EdmType::Int32),
        ("Unsigned", EdmType::Int64),
        ("Double", EdmType::Double),
        ("Money", EdmType::Double),
        ("When", EdmType::DateTime),
        ("Uuid", EdmType::Guid),
        ("Bytes", EdmType::Binary),
        ("Status", EdmType::String),
        ("Address_Geo_Lat", EdmType::Double),
    ];
    for (col, t) in types {
        assert_eq!(raw.get(col).map(Value::edm_type), Some(t), "{col}");
    }
    assert_eq!(raw.get("Status"), Some(&Value::String("OnHold".into())));
    assert!(raw.get("Tags__Json").is_some() && raw.get("Extra__Json").is_some());
}

pub async fn int64_and_double_keep_their_type(env: &Env) {
    let b = env.backend();
    b.create_table(&env.table).await.unwrap();
    let row = Row::new("p", "r")
        .with("SmallLong", Value::Int64(5))
        .with("WholeDouble", Value::Double(10.0))
        .with("Int", Value::Int32(10))
        .with("Nan", Value::Double(f64::NAN))
        .with("Inf", Value::Double(f64::INFINITY))
        .with("Max", Value::Double(f64::MAX))
        .with("Tiny", Value::Double(5e-324))
        .with("MinLong", Value::Int64(i64::MIN))
        .with("Old", Value::DateTime(unified_tables::DateTime::MIN_STORABLE))
        .with(
            "Precise",
            Value::DateTime(unified_tables::DateTime::parse("2024-01-01T00:00:00.0000001Z").unwrap()),
        );
    b.execute(&env.table, WriteOp::Insert(row.clone())).await.unwrap();
    for got in [
        b.get(&env.table, "p", "r").await.unwrap().unwrap(),
        crate::rows::all_rows(env, &env.table, &Default::default())
            .await
            .remove(0),
    ] {
        for (name, want) in &row.properties {
            let have = got.get(name).unwrap_or_else(|| panic!("{name} missing"));
            match (want, have) {
                (Value::Double(a), Value::Double(b)) if a.is_nan() => assert!(b.is_nan(), "{name}"),
                _ => assert_eq!(have, want, "{name}"),
            }
        }
    }
}

pub async fn large_json_goes_to_a_gzip_cell_and_back(env: &Env) {
    let store = env.tables.store_in::<Everything>(&env.table);
    let mut e = Everything::sample("p", "big");
    e.tags = (0..5_000).map(|i| format!("tag-{i}")).collect();
    store.create(&mut e).await.unwrap();
    let raw = env.backend().get(&env.table, "p", "big").await.unwrap().unwrap();
    assert!(raw.get("Tags__Json").is_none() && raw.get("Tags__GZip").is_some());
    let got = store.get(("p", "big")).await.unwrap().unwrap();
    assert_eq!(got.tags, e.tags);
}

/// A missing enum column reads as .NET reads it: the variant whose value is
/// 0 (here the first), not an error, and the other columns are untouched.
pub async fn a_missing_enum_column_reads_as_the_zero_variant(env: &Env) {
    use unified_tables::backend::Backend;
    let store = env.tables.store_in::<crate::model::Ticket>(&env.table);
    let mut t = crate::model::Ticket::new("q", 4);
    t.status = crate::model::Status::Paused;
    store.create(&mut t).await.unwrap();
    let mut row = env.backend().get(&env.table, "q", "0004").await.unwrap().unwrap();
    assert!(row.take("Status").is_some());
    env.put_raw(row).await;
    let got = store.get(("q", "0004")).await.unwrap().unwrap();
    assert_eq!(got.status, crate::model::Status::Open);
    assert_eq!(got.title, t.title);
}
