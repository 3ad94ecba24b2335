use std::time::Duration;

use super::*;

const SLIDING: CachePolicy = CachePolicy::Sliding(Duration::from_secs(60));

fn at(rk: &str) -> Address<'_> {
    Address::entity("scope", "Table", "p", rk)
}

fn entry(at: &Address<'_>, value: u32) -> Entry {
    Entry::new(at, value, Some(ETag::new(format!("v{value}"))), 8, SLIDING)
}

fn cached(cache: &ReadCache, a: &Address<'_>) -> Option<u32> {
    cache.get(a).and_then(|e| e.value::<u32>().copied())
}

#[test]
fn a_read_keeps_what_it_fetched_when_nothing_wrote_meanwhile() {
    let cache = ReadCache::default();
    let ticket = cache.ticket(&at("a")).expect("no write in flight");
    cache.keep(ticket, entry(&at("a"), 1));
    assert_eq!(cached(&cache, &at("a")), Some(1));
    assert_eq!(
        cache.get(&at("a")).and_then(|e| e.etag().cloned()),
        Some(ETag::new("v1"))
    );
}

#[test]
fn a_read_that_overlapped_a_write_keeps_nothing() {
    let cache = ReadCache::default();
    let ticket = cache.ticket(&at("a")).expect("no write in flight");
    let writing = cache.begin_write([at("a")]);
    assert!(cache.ticket(&at("a")).is_none(), "no ticket while the write runs");
    let settled = writing.succeed();
    cache.keep(ticket, entry(&at("a"), 1));
    assert_eq!(
        cached(&cache, &at("a")),
        None,
        "the read started before the write ended"
    );
    settled.keep(&at("a"), entry(&at("a"), 2));
    assert_eq!(cached(&cache, &at("a")), Some(2), "the write alone keeps its version");
}

#[test]
fn overlapping_writes_keep_nothing() {
    let cache = ReadCache::default();
    let first = cache.begin_write([at("a")]);
    let second = cache.begin_write([at("a")]);
    let first = first.succeed();
    first.keep(&at("a"), entry(&at("a"), 1));
    let second = second.succeed();
    second.keep(&at("a"), entry(&at("a"), 2));
    assert_eq!(cached(&cache, &at("a")), None);
}

#[test]
fn a_write_evicts_at_once_and_a_dropped_write_keeps_it_evicted() {
    let cache = ReadCache::default();
    cache.keep(cache.ticket(&at("a")).unwrap(), entry(&at("a"), 1));
    let writing = cache.begin_write([at("a")]);
    assert_eq!(cached(&cache, &at("a")), None);
    drop(writing);
    let ticket = cache.ticket(&at("a")).expect("the dropped write is over");
    cache.keep(ticket, entry(&at("a"), 3));
    assert_eq!(cached(&cache, &at("a")), Some(3));
}

#[test]
fn a_settled_write_keeps_nothing_once_another_write_started() {
    let cache = ReadCache::default();
    let settled = cache.begin_write([at("a")]).succeed();
    let _later = cache.begin_write([at("a")]);
    settled.keep(&at("a"), entry(&at("a"), 1));
    assert_eq!(cached(&cache, &at("a")), None);
}

#[test]
fn addresses_of_other_tables_scopes_and_types_never_answer() {
    let cache = ReadCache::default();
    cache.keep(cache.ticket(&at("a")).unwrap(), entry(&at("a"), 1));
    assert_eq!(cached(&cache, &Address::entity("scope", "Other", "p", "a")), None);
    assert_eq!(cached(&cache, &Address::entity("other", "Table", "p", "a")), None);
    assert_eq!(cached(&cache, &Address::partition("scope", "Table", "p")), None);
    let e = cache.get(&at("a")).expect("cached");
    assert!(e.value::<u64>().is_none(), "another type reads nothing");
}

#[test]
fn evicting_stops_reads_in_flight_from_keeping() {
    let cache = ReadCache::default();
    let ticket = cache.ticket(&at("a")).unwrap();
    cache.evict(&at("a"));
    cache.keep(ticket, entry(&at("a"), 1));
    assert_eq!(cached(&cache, &at("a")), None);
}

#[test]
fn absolute_entries_expire_and_sliding_ones_live_while_read() {
    let cache = ReadCache::default();
    let short = Duration::from_millis(300);
    let abs = Entry::new(&at("abs"), 1u32, None, 8, CachePolicy::Absolute(short));
    let sliding = Entry::new(&at("sl"), 2u32, None, 8, CachePolicy::Sliding(short));
    cache.keep(cache.ticket(&at("abs")).unwrap(), abs);
    cache.keep(cache.ticket(&at("sl")).unwrap(), sliding);
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(cached(&cache, &at("sl")), Some(2), "read within its sliding window");
        let _ = cached(&cache, &at("abs"));
    }
    assert_eq!(
        cached(&cache, &at("abs")),
        None,
        "read all along, but older than its ttl"
    );
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(cached(&cache, &at("sl")), None, "not read for longer than its ttl");
}

#[test]
fn the_memory_bound_evicts_by_weight() {
    let cache = ReadCache::builder().max_bytes(10_000).build().unwrap();
    for i in 0..100u32 {
        let name = format!("{i}");
        let a = Address::entity("s", "T", "p", &name);
        cache.keep(cache.ticket(&a).unwrap(), Entry::new(&a, i, None, 1_000, SLIDING));
    }
    cache.inner.entries.run_pending_tasks();
    assert!(cache.inner.entries.weighted_size() <= 10_000);
    assert!(cache.entry_count() < 100);
}

#[test]
fn bad_policies_are_refused_when_the_cache_is_built() {
    let zero = ReadCache::builder()
        .policy(CachePolicy::Sliding(Duration::ZERO))
        .build();
    assert!(matches!(zero, Err(crate::Error::Config { message: ref m, .. }) if m.contains("ReadCacheBuilder::policy")));
    let long = ReadCache::builder()
        .policy_for::<u32>(CachePolicy::Absolute(Duration::from_secs(400 * 24 * 3600)))
        .build();
    assert!(matches!(long, Err(crate::Error::Config { message: ref m, .. }) if m.contains("policy_for::<u32>")));
    let none = ReadCache::builder().max_bytes(0).build();
    assert!(matches!(none, Err(crate::Error::Config { message: ref m, .. }) if m.contains("max_bytes")));
    assert!(ReadCache::builder().policy(CachePolicy::Disabled).build().is_ok());
}
