//! Lookups through indexes of every value type: `find` returns exactly the
//! entities holding a value, `range` the ones in a range in value order,
//! `prefix` the strings that start with it, pages and `take` bound them.

use std::cmp::Ordering;
use std::ops::Bound;

use futures::TryStreamExt;
use unified_tables::{DateTime, Guid, TableEntity, TableEnum};

use crate::index_model::assert_indexes_match;
use crate::Env;

#[derive(TableEnum, Debug, Clone, Copy, PartialEq)]
pub enum Shade {
    Dark,
    Light,
}

/// One field of every indexable type.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Sample {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    #[index]
    pub text: String,
    #[index]
    pub int: i64,
    #[index]
    pub small: i32,
    #[index]
    pub big: u64,
    #[index]
    pub real: f64,
    #[index]
    pub at: DateTime,
    #[index]
    pub id: Guid,
    #[index]
    pub flag: bool,
    #[index]
    pub bytes: Vec<u8>,
    #[index]
    pub shade: Shade,
    #[index]
    pub maybe: Option<String>,
}

const TEXTS: &[&str] = &[
    "",
    "a",
    "a b",
    "a/b",
    "a.b",
    "a?b",
    "a\\b",
    "a#b",
    "A",
    "ab",
    "a!",
    "é",
    "日本",
    "😀",
    "\u{E000}x",
    "~",
    "a\u{7f}",
    "zz",
];
const INTS: &[i64] = &[i64::MIN, -100, -1, 0, 1, 99, i64::MAX];
const SMALLS: &[i32] = &[i32::MIN, -5, 0, 5, i32::MAX];
const BIGS: &[u64] = &[0, 1, 4_294_967_296, i64::MAX as u64];
const REALS: &[f64] = &[f64::NEG_INFINITY, -1e300, -2.5, 0.0, 1e-300, 3.25, f64::INFINITY];

fn dates() -> Vec<DateTime> {
    [
        "1601-01-01T00:00:00Z",
        "1970-01-01T00:00:00Z",
        "2024-02-29T12:00:00.1234567Z",
        "2024-03-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
    ]
    .iter()
    .map(|s| DateTime::parse(s).unwrap())
    .collect()
}

fn guids() -> Vec<Guid> {
    [[0u8; 16], [0x0f; 16], [0x10; 16], [0xa0; 16], [0xff; 16]]
        .into_iter()
        .map(Guid)
        .collect()
}

fn bytes() -> Vec<Vec<u8>> {
    vec![vec![], vec![0], vec![0, 0], vec![1], vec![255]]
}

fn samples() -> Vec<Sample> {
    (0..TEXTS.len())
        .map(|i| Sample {
            pk: "p".into(),
            rk: format!("e{i:03}"),
            text: TEXTS[i].into(),
            int: INTS[i % INTS.len()],
            small: SMALLS[i % SMALLS.len()],
            big: BIGS[i % BIGS.len()],
            real: REALS[i % REALS.len()],
            at: dates()[i % 5],
            id: guids()[i % 5],
            flag: i % 3 == 0,
            bytes: bytes()[i % 5].clone(),
            shade: if i % 2 == 0 { Shade::Dark } else { Shade::Light },
            maybe: (i % 4 != 0).then(|| format!("m{}", i % 3)),
        })
        .collect()
}

fn text_arg(v: &String) -> &str {
    v
}

fn bytes_arg(v: &Vec<u8>) -> &[u8] {
    v
}

fn rks(found: &[Sample]) -> Vec<String> {
    found.iter().map(|s| s.rk.clone()).collect()
}

/// The entities whose value is within the bounds, in value order (then key order).
fn model<V: Clone>(
    all: &[Sample],
    get: impl Fn(&Sample) -> V,
    cmp: impl Fn(&V, &V) -> Ordering,
    low: Bound<V>,
    high: Bound<V>,
) -> Vec<String> {
    let inside = |v: &V| {
        let above = match &low {
            Bound::Included(l) => cmp(v, l) != Ordering::Less,
            Bound::Excluded(l) => cmp(v, l) == Ordering::Greater,
            Bound::Unbounded => true,
        };
        let below = match &high {
            Bound::Included(h) => cmp(v, h) != Ordering::Greater,
            Bound::Excluded(h) => cmp(v, h) == Ordering::Less,
            Bound::Unbounded => true,
        };
        above && below
    };
    let mut hits: Vec<&Sample> = all.iter().filter(|s| inside(&get(s))).collect();
    hits.sort_by(|a, b| cmp(&get(a), &get(b)).then(a.rk.cmp(&b.rk)));
    hits.iter().map(|s| s.rk.clone()).collect()
}

macro_rules! check_field {
    ($store:expr, $all:expr, $handle:expr, $field:ident, $values:expr, $arg:expr, $cmp:expr) => {{
        let all: &[Sample] = $all;
        let values = $values;
        let arg = $arg;
        let cmp = $cmp;
        for v in values.iter() {
            let found = $store.index($handle).find("p", arg(v)).await.unwrap();
            let want = model(
                all,
                |s| s.$field.clone(),
                cmp,
                Bound::Included(v.clone()),
                Bound::Included(v.clone()),
            );
            assert_eq!(rks(&found), want, "{} = {:?}", stringify!($field), v);
        }
        for (i, lo) in values.iter().enumerate() {
            for hi in values.iter().skip(i) {
                let found = $store.index($handle).range("p", arg(lo)..arg(hi)).await.unwrap();
                let want = model(
                    all,
                    |s| s.$field.clone(),
                    cmp,
                    Bound::Included(lo.clone()),
                    Bound::Excluded(hi.clone()),
                );
                assert_eq!(rks(&found), want, "{} in {:?}..{:?}", stringify!($field), lo, hi);
                let found = $store
                    .index($handle)
                    .range("p", (Bound::Excluded(arg(lo)), Bound::Included(arg(hi))))
                    .await
                    .unwrap();
                let want = model(
                    all,
                    |s| s.$field.clone(),
                    cmp,
                    Bound::Excluded(lo.clone()),
                    Bound::Included(hi.clone()),
                );
                assert_eq!(rks(&found), want, "{} in ({:?}, {:?}]", stringify!($field), lo, hi);
            }
        }
        let found = $store.index($handle).range("p", ..).await.unwrap();
        let want = model(all, |s| s.$field.clone(), cmp, Bound::Unbounded, Bound::Unbounded);
        assert_eq!(rks(&found), want, "{} in ..", stringify!($field));
    }};
}

pub async fn index_lookups_of_every_value_type_sort_and_range(env: &Env) {
    let store = env.tables.store_in::<Sample>(&env.table);
    let all = samples();
    store.create_batch(&all).await.unwrap();
    assert_indexes_match(env.backend(), &env.table, Sample::INDEXES, "after the batch").await;

    check_field!(
        store,
        &all,
        Sample::BY_TEXT,
        text,
        TEXTS.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        text_arg,
        |a: &String, b: &String| a.cmp(b)
    );
    check_field!(
        store,
        &all,
        Sample::BY_INT,
        int,
        INTS.to_vec(),
        |v: &i64| *v,
        |a: &i64, b: &i64| a.cmp(b)
    );
    check_field!(
        store,
        &all,
        Sample::BY_SMALL,
        small,
        SMALLS.to_vec(),
        |v: &i32| *v,
        |a: &i32, b: &i32| a.cmp(b)
    );
    check_field!(
        store,
        &all,
        Sample::BY_BIG,
        big,
        BIGS.to_vec(),
        |v: &u64| *v,
        |a: &u64, b: &u64| a.cmp(b)
    );
    check_field!(
        store,
        &all,
        Sample::BY_REAL,
        real,
        REALS.to_vec(),
        |v: &f64| *v,
        |a: &f64, b: &f64| a.partial_cmp(b).unwrap()
    );
    check_field!(
        store,
        &all,
        Sample::BY_AT,
        at,
        dates(),
        |v: &DateTime| *v,
        |a: &DateTime, b: &DateTime| a.cmp(b)
    );
    check_field!(
        store,
        &all,
        Sample::BY_ID,
        id,
        guids(),
        |v: &Guid| *v,
        |a: &Guid, b: &Guid| a.cmp(b)
    );
    check_field!(
        store,
        &all,
        Sample::BY_FLAG,
        flag,
        [false, true],
        |v: &bool| *v,
        |a: &bool, b: &bool| a.cmp(b)
    );
    let byte_values = bytes();
    check_field!(
        store,
        &all,
        Sample::BY_BYTES,
        bytes,
        byte_values,
        bytes_arg,
        |a: &Vec<u8>, b: &Vec<u8>| a.cmp(b)
    );

    // An enum: each value by name.
    for shade in [Shade::Dark, Shade::Light] {
        let found = Sample::find_by_shade(&store, "p", shade).await.unwrap();
        let want: Vec<String> = all.iter().filter(|s| s.shade == shade).map(|s| s.rk.clone()).collect();
        assert_eq!(rks(&found), want);
    }
    // An optional value: `None` has no index row.
    let found = Sample::find_by_maybe(&store, "p", "m1").await.unwrap();
    let want: Vec<String> = all
        .iter()
        .filter(|s| s.maybe.as_deref() == Some("m1"))
        .map(|s| s.rk.clone())
        .collect();
    assert_eq!(rks(&found), want);
    let every = store.index(Sample::BY_MAYBE).range("p", ..).await.unwrap();
    assert_eq!(every.len(), all.iter().filter(|s| s.maybe.is_some()).count());

    // Prefixes of strings, the escaped characters among them.
    for prefix in ["a", "a/", "a.", "a?", "a\\", "", "日", "~", "zz"] {
        let found = store.index(Sample::BY_TEXT).prefix("p", prefix).await.unwrap();
        let mut want: Vec<&Sample> = all.iter().filter(|s| s.text.starts_with(prefix)).collect();
        want.sort_by(|a, b| a.text.cmp(&b.text).then(a.rk.cmp(&b.rk)));
        assert_eq!(
            rks(&found),
            want.iter().map(|s| s.rk.clone()).collect::<Vec<_>>(),
            "prefix {prefix:?}"
        );
    }

    // take, pages and streams follow the index order.
    let sorted = model(
        &all,
        |s| s.int,
        |a: &i64, b: &i64| a.cmp(b),
        Bound::Unbounded,
        Bound::Unbounded,
    );
    let first = store.index(Sample::BY_INT).range("p", ..).take(5).await.unwrap();
    assert_eq!(rks(&first), sorted[..5]);
    let mut cursor = None;
    let mut paged = Vec::new();
    loop {
        let page = store
            .index(Sample::BY_INT)
            .range("p", ..)
            .take(4)
            .page(cursor)
            .await
            .unwrap();
        assert!(page.items.len() <= 4);
        paged.extend(rks(&page.items));
        match page.cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(paged, sorted);
    let streamed: Vec<Sample> = store
        .index(Sample::BY_INT)
        .range("p", ..)
        .stream()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(rks(&streamed), sorted);
}
