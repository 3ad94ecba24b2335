//! The representations a row's properties could have, measured on what the
//! derive's generated code does with them: build 14 cells in field order,
//! then take each back by name in field order.
//!
//! - `BTreeMap<String, Value>` (what `Row` holds);
//! - a `Vec` sorted by name, binary-searched;
//! - a `Vec` in insertion order, searched from the front;
//! - a `Vec` of interned `&'static str` names (the schema's), searched from the front;
//! - [`Properties`] (what `Row` holds now), told the schema's names, as the
//!   derive's generated code uses it.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use unified_tables::{Properties, Value};

/// The 14 columns of the codec bench's entity, in field order.
pub const NAMES: [&str; 14] = [
    "Title",
    "Note",
    "TotalCents",
    "Quantity",
    "WeightKg",
    "Paid",
    "PlacedAt",
    "Status",
    "Tracking",
    "Coupon",
    "ShipTo_Street",
    "ShipTo_City",
    "ShipTo_Zip",
    "Tags__Json",
];

/// The layouts, in the order of [`time_layouts`]'s figures.
pub const LAYOUTS: [&str; 5] = [
    "BTreeMap",
    "sorted Vec",
    "Vec, insertion order",
    "Vec, interned names",
    "Properties",
];

fn cell(i: usize) -> Value {
    match i % 3 {
        0 => Value::String("Standing desk, oak".into()),
        1 => Value::Int64(i as i64),
        _ => Value::Bool(true),
    }
}

/// Builds and drains a `BTreeMap`; returns a checksum.
pub fn btree() -> usize {
    let mut m = BTreeMap::new();
    for (i, n) in NAMES.iter().enumerate() {
        m.insert((*n).to_owned(), cell(i));
    }
    NAMES.iter().filter(|n| m.remove(**n).is_some()).count()
}

/// Builds and drains a sorted `Vec`.
pub fn sorted_vec() -> usize {
    let mut v: Vec<(String, Value)> = Vec::new();
    for (i, n) in NAMES.iter().enumerate() {
        match v.binary_search_by(|(k, _)| k.as_str().cmp(n)) {
            Ok(at) => v[at].1 = cell(i),
            Err(at) => v.insert(at, ((*n).to_owned(), cell(i))),
        }
    }
    NAMES
        .iter()
        .filter(|n| match v.binary_search_by(|(k, _)| k.as_str().cmp(n)) {
            Ok(at) => {
                v.remove(at);
                true
            }
            Err(_) => false,
        })
        .count()
}

/// Builds and drains a `Vec` in insertion order, its names made by `name`.
fn linear_vec<K: AsRef<str>>(name: fn(&'static str) -> K) -> usize {
    let mut v: Vec<(K, Value)> = Vec::new();
    for (i, n) in NAMES.iter().enumerate() {
        match v.iter().position(|(k, _)| k.as_ref() == *n) {
            Some(at) => v[at].1 = cell(i),
            None => v.push((name(n), cell(i))),
        }
    }
    NAMES
        .iter()
        .filter(|n| match v.iter().position(|(k, _)| k.as_ref() == **n) {
            Some(at) => {
                v.remove(at);
                true
            }
            None => false,
        })
        .count()
}

/// Builds and drains a `Vec` in insertion order.
pub fn insertion_vec() -> usize {
    linear_vec(str::to_owned)
}

/// Builds and drains a `Vec` of interned names.
pub fn interned_vec() -> usize {
    linear_vec(|n| n)
}

/// Builds and drains [`Properties`] as generated code does.
pub fn properties() -> usize {
    let mut p = Properties::with_capacity(NAMES.len()).expecting(&NAMES);
    for (i, n) in NAMES.iter().enumerate() {
        p.insert(*n, cell(i));
    }
    NAMES.iter().filter(|n| p.remove(n).is_some()).count()
}

/// Nanoseconds per build-and-drain of each layout: best of 5 rounds of 200,000.
pub fn time_layouts() -> [f64; 5] {
    let routes: [fn() -> usize; 5] = [btree, sorted_vec, insertion_vec, interned_vec, properties];
    for f in routes {
        assert_eq!(f(), NAMES.len());
    }
    let mut best = [Duration::MAX; 5];
    for _ in 0..5 {
        for (i, f) in routes.iter().enumerate() {
            let started = Instant::now();
            for _ in 0..200_000 {
                black_box(f());
            }
            best[i] = best[i].min(started.elapsed());
        }
    }
    best.map(|d| d.as_secs_f64() * 1e9 / 200_000.0)
}
