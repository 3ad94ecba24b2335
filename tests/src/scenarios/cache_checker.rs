//! A randomized concurrent checker of the read cache's promise: many tasks
//! read and write a few entities through one caching handle, and every read
//! that starts after a write has returned sees that write or a later one,
//! except a version whose write overlapped that write (the documented
//! window while an earlier, overlapping write is still running).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use unified_tables::{Concurrency, QueryOptions, ReadCache, Tables};

use crate::gate::JitterBackend;
use crate::model::Customer;
use crate::Env;

const KEYS: [&str; 3] = ["a", "b", "c"];

/// Rounds of concurrent operations, each followed by a check against the table.
const ROUNDS: u64 = 6;

/// One write: the value it stored and when it started and returned (logical clock).
#[derive(Debug, Clone, Copy)]
struct Write {
    value: u32,
    start: u64,
    end: u64,
}

/// One read: the value it saw for a key and when it started.
#[derive(Debug, Clone, Copy)]
struct Read {
    key: usize,
    value: u32,
    start: u64,
    list: bool,
}

pub async fn concurrent_readers_never_see_a_version_older_than_a_returned_write(env: &Env) {
    let (tasks, ops) = if env.is_azure() { (6u64, 24u64) } else { (8, 60) };
    let jitter = JitterBackend::new(env.backend().clone(), Duration::from_micros(500));
    let tables = Tables::with_backend(jitter).with_cache(ReadCache::default());
    let store = tables.store_in::<Customer>(&env.table);
    for rk in KEYS {
        store.upsert(&mut Customer::new("p", rk, "v0")).await.unwrap();
    }
    let clock = Arc::new(AtomicU64::new(1));
    let writes: Arc<Mutex<HashMap<(usize, u32), Write>>> = Arc::default();
    for key in 0..KEYS.len() {
        let initial = Write {
            value: 0,
            start: 0,
            end: 0,
        };
        writes.lock().unwrap().insert((key, 0), initial);
    }
    let next_value = Arc::new(AtomicU64::new(1));
    let seed: u64 = rand::random();
    let table = env.tables.store_in::<Customer>(&env.table);
    let mut reads = Vec::new();
    for round in 0..ROUNDS {
        let mut handles = Vec::new();
        for t in 0..tasks {
            let (store, clock, writes, next_value) = (store.clone(), clock.clone(), writes.clone(), next_value.clone());
            handles.push(tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed.wrapping_add(t + round * 1000));
                let mut reads = Vec::new();
                for _ in 0..ops / ROUNDS {
                    let key = rng.gen_range(0..KEYS.len());
                    let rk = KEYS[key];
                    match rng.gen_range(0..10) {
                        0..=3 => {
                            let start = clock.fetch_add(1, Ordering::SeqCst);
                            let got = store.get(("p", rk)).await.unwrap().expect("never deleted");
                            reads.push(Read {
                                key,
                                value: got.visits,
                                start,
                                list: false,
                            });
                        }
                        4 => {
                            let start = clock.fetch_add(1, Ordering::SeqCst);
                            let list = store.query(QueryOptions::partition("p")).await.unwrap();
                            for c in list {
                                let key = KEYS.iter().position(|k| *k == c.email).unwrap();
                                reads.push(Read {
                                    key,
                                    value: c.visits,
                                    start,
                                    list: true,
                                });
                            }
                        }
                        kind => {
                            let value = next_value.fetch_add(1, Ordering::SeqCst) as u32;
                            let start = clock.fetch_add(1, Ordering::SeqCst);
                            let mut c = Customer::new("p", rk, "w");
                            c.visits = value;
                            match kind {
                                5..=6 => {
                                    store.upsert(&mut c).await.unwrap();
                                }
                                7 => {
                                    store.update_with(&mut c, Concurrency::LastWriterWins).await.unwrap();
                                }
                                8 => {
                                    store.patch(("p", rk), Customer::update().visits(value)).await.unwrap();
                                }
                                _ => match store.mutate(("p", rk), |c| c.visits = value).await {
                                    Ok(_) => {}
                                    // Lost every race: nothing was written.
                                    Err(unified_tables::Error::Conflict { .. }) => continue,
                                    Err(e) => panic!("{e}"),
                                },
                            }
                            let end = clock.fetch_add(1, Ordering::SeqCst);
                            writes.lock().unwrap().insert((key, value), Write { value, start, end });
                        }
                    }
                }
                reads
            }));
        }
        for h in handles {
            reads.extend(h.await.unwrap());
        }
        // Once every call has returned, the cache answers what the table holds.
        for rk in KEYS {
            let cached = store.get(("p", rk)).await.unwrap().unwrap();
            let stored = table.get(("p", rk)).await.unwrap().unwrap();
            assert_eq!(
                (cached.visits, &cached.etag),
                (stored.visits, &stored.etag),
                "{rk}: after round {round} the cache answers another version than the table holds (seed {seed})"
            );
        }
    }
    let writes = writes.lock().unwrap();
    let mut checked = 0;
    for read in &reads {
        let seen = writes
            .get(&(read.key, read.value))
            .unwrap_or_else(|| panic!("{read:?} saw a value no write stored"));
        let later_returned = writes
            .iter()
            .filter(|((k, _), _)| *k == read.key)
            .map(|(_, w)| w)
            .find(|w| w.end < read.start && seen.end < w.start);
        assert!(
            later_returned.is_none(),
            "a {} read of {} started at {} saw value {} (written {}..{}), but value {} (written {}..{}) had returned before the read started (seed {seed})",
            if read.list { "list" } else { "point" },
            KEYS[read.key],
            read.start,
            seen.value,
            seen.start,
            seen.end,
            later_returned.unwrap().value,
            later_returned.unwrap().start,
            later_returned.unwrap().end,
        );
        checked += 1;
    }
    assert!(checked > tasks as usize * ops as usize / 3, "{checked} reads checked");
}
