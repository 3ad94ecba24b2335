//! The operations of a differential sequence and their generators.

use proptest::prelude::*;

use super::{Fill, Spec, K, PARTITIONS, ROWS};

/// A typed partial update: the fields to set (at least one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchSpec {
    /// Sets `name`.
    pub name: Option<String>,
    /// Sets `n`.
    pub n: Option<i64>,
    /// Sets `flag`.
    pub flag: Option<bool>,
    /// Sets `place.city`.
    pub city: Option<String>,
}

/// Which ETag a conditional call carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// None (unconditional where allowed).
    Without,
    /// The ETag of the stored version.
    Fresh,
    /// An ETag of an earlier version of the key.
    Stale,
}

/// A typed filter, evaluated by the model on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterSpec {
    /// `n ge x`.
    NAtLeast(i64),
    /// `Place_City eq city`.
    City(&'static str),
    /// `flag` is true.
    Flagged,
    /// `Place_Level eq x` (rows without a level never match).
    LevelIs(i64),
    /// `n lt x or not flag`.
    NBelowOrUnflagged(i64),
}

/// One operation on the store and the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// `create`.
    Create(K, Spec),
    /// `get`.
    Get(K),
    /// `exists`.
    Exists(K),
    /// `upsert`.
    Upsert(K, Spec),
    /// `update` with the ETag of the stored version.
    Update(K, Spec),
    /// `update` with an ETag of an earlier version (skipped when none is known).
    UpdateStale(K, Spec),
    /// `update` of an entity without an ETag.
    UpdateWithoutETag(K, Spec),
    /// `update_with(.., Concurrency::LastWriterWins)`.
    UpdateLastWriterWins(K, Spec),
    /// `delete`.
    Delete(K),
    /// `delete_entity` with a fresh or stale ETag.
    DeleteEntity(K, Tag),
    /// `patch` with a typed builder, with or without an ETag.
    Patch(K, PatchSpec, Tag),
    /// `mutate`: `n += delta` and a tag appended.
    Mutate(K, i64),
    /// `try_transition`: set the flag once.
    Transition(K),
    /// `get_or_create`.
    GetOrCreate(K, Spec),
    /// `mutate_or_create`.
    MutateOrCreate(K, Spec, i64),
    /// `create_batch` in one partition (row indexes may repeat).
    CreateBatch(&'static str, Vec<(&'static str, Spec)>),
    /// `upsert_batch` in one partition (row indexes may repeat).
    UpsertBatch(&'static str, Vec<(&'static str, Spec)>),
    /// `delete_partition`.
    DeletePartition(&'static str),
    /// `query` of a partition with an optional typed filter.
    Query(&'static str, Option<FilterSpec>),
    /// `page` through a partition with a page size and cursors.
    Page(&'static str, usize, Option<FilterSpec>),
    /// `count` of a partition with an optional typed filter.
    Count(&'static str, Option<FilterSpec>),
}

/// A partition of the key space, the first one more often (so operations
/// meet each other's rows).
pub fn partition() -> impl Strategy<Value = &'static str> {
    prop_oneof![3 => Just(PARTITIONS[0]), 1 => Just(PARTITIONS[1])]
}

/// A key of the key space, skewed towards the first keys.
pub fn key() -> impl Strategy<Value = K> {
    let row = prop_oneof![3 => Just(ROWS[0]), 2 => Just(ROWS[1]), 1 => Just(ROWS[2])];
    (partition(), row).prop_map(|(p, r)| K(p, r))
}

fn seed() -> impl Strategy<Value = u64> {
    0u64..1000
}

fn fill(len: impl Strategy<Value = usize>, astral: impl Strategy<Value = bool>) -> impl Strategy<Value = Fill> {
    fill_of(len, astral, Just(false))
}

/// A fill whose text is printable ASCII or, as `mixed` says, of mixed 1- to 4-byte characters.
fn fill_of(
    len: impl Strategy<Value = usize>,
    astral: impl Strategy<Value = bool>,
    mixed: impl Strategy<Value = bool>,
) -> impl Strategy<Value = Fill> {
    (len, seed(), astral, mixed).prop_map(|(len, seed, astral, mixed)| Fill {
        len,
        seed,
        astral,
        mixed,
    })
}

/// The blob offload threshold the differential stores use (encoded bytes).
pub const BLOB_THRESHOLD: usize = 100_000;

/// Text sizes: mostly small, then around one cell (32,767 UTF-16 units), the
/// 32,000-unit chunk size (with a surrogate pair across it) and the offload
/// threshold; ASCII or mixed 1- to 4-byte characters (escaped in request
/// bodies, so up to six times their UTF-16 size on the wire).
pub fn text_fill() -> impl Strategy<Value = Fill> {
    prop_oneof![
        24 => fill_of(0usize..=24, any::<bool>(), any::<bool>()),
        1 => fill_of(32_766usize..=32_768, any::<bool>(), any::<bool>()),
        1 => fill_of(31_999usize..=32_002, Just(true), any::<bool>()),
        1 => fill(BLOB_THRESHOLD - 1..=BLOB_THRESHOLD + 1, Just(false)),
        1 => fill_of(60_000usize..=90_000, any::<bool>(), Just(true)),
    ]
}

/// Gzip-encoded text: absent, small, around one cell, and large enough that
/// the compressed value crosses the offload threshold.
pub fn zipped_fill() -> impl Strategy<Value = Option<Fill>> {
    prop_oneof![
        8 => Just(None),
        16 => fill_of(0usize..=24, any::<bool>(), any::<bool>()).prop_map(Some),
        1 => fill_of(32_766usize..=32_768, Just(false), any::<bool>()).prop_map(Some),
        1 => fill(110_000usize..=140_000, Just(false)).prop_map(Some),
    ]
}

/// Binary sizes: small, around one cell (65,535 / 65,536 bytes), the
/// 64,000-byte chunk size and the offload threshold.
pub fn bytes_fill() -> impl Strategy<Value = Fill> {
    prop_oneof![
        24 => fill(0usize..=24, Just(false)),
        1 => fill(65_535usize..=65_536, Just(false)),
        1 => fill(63_999usize..=64_001, Just(false)),
        1 => fill(BLOB_THRESHOLD - 1..=BLOB_THRESHOLD + 1, Just(false)),
    ]
}

/// Lines of a JSON list stored gzip-split: a few, or enough to leave one cell.
pub fn lines_fill() -> impl Strategy<Value = Fill> {
    prop_oneof![
        24 => fill(0usize..=3, Just(false)),
        1 => fill(3_000usize..=3_200, Just(false)),
    ]
}

/// Never-offloaded text: small, or over one entity (continuation rows): 1.05
/// million ASCII units, or 400,000 of mixed text (1.5 MB escaped).
pub fn local_fill() -> impl Strategy<Value = Fill> {
    prop_oneof![
        30 => fill_of(0usize..=24, Just(false), any::<bool>()),
        1 => fill(1_050_000usize..=1_050_001, any::<bool>()),
        1 => fill_of(400_000usize..=400_001, any::<bool>(), Just(true)),
    ]
}

fn small_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z]{1,6}",
        Just("o'hare \u{e9}\u{1F600}".to_owned()),
    ]
}

/// A city the filters ask for.
pub fn city() -> impl Strategy<Value = &'static str> {
    prop::sample::select(&["Lviv", "Kyiv", "O'Hare"][..])
}

/// A value.
pub fn spec() -> impl Strategy<Value = Spec> {
    let plain = (
        small_text(),
        -3i64..=3,
        any::<bool>(),
        prop::option::of(small_text()),
        city(),
        prop::option::of(-2i64..=2),
        prop::collection::vec("[a-z]{0,3}", 0..=2),
        small_text(),
    );
    let large = (
        text_fill(),
        zipped_fill(),
        bytes_fill(),
        lines_fill(),
        local_fill(),
        prop::option::of(fill(0usize..=40, Just(false))),
    );
    (plain, large).prop_map(
        |((name, n, flag, note, city, level, tags, remark), (text, zipped, bytes, lines, local, file))| Spec {
            name,
            n,
            flag,
            note,
            city: city.to_owned(),
            level,
            tags,
            remark,
            text,
            zipped,
            bytes,
            lines,
            local,
            file,
        },
    )
}

fn patch_spec() -> impl Strategy<Value = PatchSpec> {
    (
        prop::option::of(small_text()),
        prop::option::of(-3i64..=3),
        prop::option::of(any::<bool>()),
        prop::option::of(city().prop_map(str::to_owned)),
    )
        .prop_map(|(name, n, flag, city)| PatchSpec { name, n, flag, city })
        .prop_filter("a patch sets at least one field", |p| {
            p.name.is_some() || p.n.is_some() || p.flag.is_some() || p.city.is_some()
        })
}

fn tag() -> impl Strategy<Value = Tag> {
    prop_oneof![Just(Tag::Without), Just(Tag::Fresh), Just(Tag::Stale)]
}

fn filter() -> impl Strategy<Value = Option<FilterSpec>> {
    prop::option::of(prop_oneof![
        (-3i64..=3).prop_map(FilterSpec::NAtLeast),
        city().prop_map(FilterSpec::City),
        Just(FilterSpec::Flagged),
        (-2i64..=2).prop_map(FilterSpec::LevelIs),
        (-3i64..=3).prop_map(FilterSpec::NBelowOrUnflagged),
    ])
}

fn batch_rows() -> impl Strategy<Value = Vec<(&'static str, Spec)>> {
    prop::collection::vec((prop::sample::select(&ROWS[..]), spec()), 1..=3)
}

/// One operation, writes weighted over reads.
pub fn op() -> impl Strategy<Value = Op> {
    let delta = -2i64..=2;
    prop_oneof![
        6 => (key(), spec()).prop_map(|(k, s)| Op::Create(k, s)),
        2 => key().prop_map(Op::Get),
        1 => key().prop_map(Op::Exists),
        4 => (key(), spec()).prop_map(|(k, s)| Op::Upsert(k, s)),
        4 => (key(), spec()).prop_map(|(k, s)| Op::Update(k, s)),
        2 => (key(), spec()).prop_map(|(k, s)| Op::UpdateStale(k, s)),
        1 => (key(), spec()).prop_map(|(k, s)| Op::UpdateWithoutETag(k, s)),
        2 => (key(), spec()).prop_map(|(k, s)| Op::UpdateLastWriterWins(k, s)),
        2 => key().prop_map(Op::Delete),
        2 => (key(), prop_oneof![Just(Tag::Fresh), Just(Tag::Stale)]).prop_map(|(k, t)| Op::DeleteEntity(k, t)),
        3 => (key(), patch_spec(), tag()).prop_map(|(k, p, t)| Op::Patch(k, p, t)),
        3 => (key(), delta.clone()).prop_map(|(k, d)| Op::Mutate(k, d)),
        2 => key().prop_map(Op::Transition),
        1 => (key(), spec()).prop_map(|(k, s)| Op::GetOrCreate(k, s)),
        2 => (key(), spec(), delta).prop_map(|(k, s, d)| Op::MutateOrCreate(k, s, d)),
        2 => (partition(), batch_rows()).prop_map(|(p, r)| Op::CreateBatch(p, r)),
        2 => (partition(), batch_rows()).prop_map(|(p, r)| Op::UpsertBatch(p, r)),
        1 => partition().prop_map(Op::DeletePartition),
        2 => (partition(), filter()).prop_map(|(p, f)| Op::Query(p, f)),
        2 => (partition(), 1usize..=3, filter()).prop_map(|(p, n, f)| Op::Page(p, n, f)),
        2 => (partition(), filter()).prop_map(|(p, f)| Op::Count(p, f)),
    ]
}

/// A sequence of up to `max` operations.
pub fn sequence(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..=max)
}
