//! The read cache: entities and whole-partition lists kept in memory,
//! coherent with every write made through the stores that share it.
//!
//! Coherence rests on stripes: every address (an entity's keys, or a
//! partition for its lists) hashes to one of `STRIPES` stripes, each with an
//! epoch and a count of writes in flight. A write raises the epochs of its
//! stripes when it starts and when it ends and evicts its addresses; a read
//! keeps what it fetched only if its stripe's epoch did not move since the
//! read started and no write is in flight there; a write keeps the entity it
//! wrote only if no other write touched its stripe while it ran. Addresses
//! that share a stripe only cost each other a miss, never coherence.

pub(crate) mod hooks;
mod policy;

pub use policy::{CachePolicy, ReadCacheBuilder};

use std::any::{Any, TypeId};

use crate::telemetry;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::value::{ETag, Row, Value};

/// Number of coherence stripes.
const STRIPES: usize = 1024;

/// Memory taken by an entry beyond its cells, for the weigher.
const ENTRY_OVERHEAD: usize = 96;

/// A read cache shared by the stores of one or more [`Tables`](crate::Tables)
/// handles. Cheap to clone: clones share entries.
///
/// Entries are keyed by the account endpoint, the table and the keys, so
/// stores of the same table share them and different tables never collide.
/// Built with [`ReadCache::builder`] or [`ReadCache::default`] (five-minute
/// sliding entries, 64 MiB). [`Tables`](crate::Tables) handles start without
/// a cache: a handle caches only when given one with
/// [`Tables::with_cache`](crate::Tables::with_cache).
#[derive(Clone)]
#[doc = include_str!("../../../docs/read_cache.md")]
pub struct ReadCache {
    inner: Arc<Inner>,
}

struct Inner {
    entries: moka::sync::Cache<u64, Arc<Entry>>,
    stripes: Box<[Mutex<Stripe>]>,
    clock: AtomicU64,
    hasher: std::collections::hash_map::RandomState,
    settings: ReadCacheBuilder,
}

#[derive(Debug, Default)]
struct Stripe {
    epoch: u64,
    writing: u32,
}

/// What one cache entry addresses: an entity (`row_key` set) or the list of
/// a whole partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Address<'a> {
    pub(crate) scope: &'a str,
    pub(crate) table: &'a str,
    pub(crate) partition_key: &'a str,
    pub(crate) row_key: Option<&'a str>,
}

impl<'a> Address<'a> {
    /// The entity at these keys.
    pub(crate) fn entity(scope: &'a str, table: &'a str, partition_key: &'a str, row_key: &'a str) -> Self {
        Address {
            scope,
            table,
            partition_key,
            row_key: Some(row_key),
        }
    }

    /// The whole-partition list.
    pub(crate) fn partition(scope: &'a str, table: &'a str, partition_key: &'a str) -> Self {
        Address {
            scope,
            table,
            partition_key,
            row_key: None,
        }
    }
}

/// One cached value with the address it was cached under.
pub(crate) struct Entry {
    scope: Box<str>,
    table: Box<str>,
    partition_key: Box<str>,
    row_key: Option<Box<str>>,
    type_id: TypeId,
    value: Box<dyn Any + Send + Sync>,
    etag: Option<ETag>,
    weight: u32,
    policy: CachePolicy,
}

impl Entry {
    /// An entry for `value` (an entity, or a partition's `Vec` of them).
    pub(crate) fn new<V: Any + Send + Sync>(
        at: &Address<'_>,
        value: V,
        etag: Option<ETag>,
        bytes: usize,
        policy: CachePolicy,
    ) -> Entry {
        let weight = ENTRY_OVERHEAD + at.partition_key.len() + at.row_key.map_or(0, str::len) + bytes;
        Entry {
            scope: at.scope.into(),
            table: at.table.into(),
            partition_key: at.partition_key.into(),
            row_key: at.row_key.map(Into::into),
            type_id: TypeId::of::<V>(),
            value: Box::new(value),
            etag,
            weight: u32::try_from(weight).unwrap_or(u32::MAX),
            policy,
        }
    }

    fn is_at(&self, at: &Address<'_>) -> bool {
        *self.partition_key == *at.partition_key
            && self.row_key.as_deref() == at.row_key
            && *self.table == *at.table
            && *self.scope == *at.scope
    }

    /// The value, if it is a `V`.
    pub(crate) fn value<V: Any>(&self) -> Option<&V> {
        if self.type_id != TypeId::of::<V>() {
            return None;
        }
        self.value.downcast_ref::<V>()
    }

    /// The version the entity was cached with.
    pub(crate) fn etag(&self) -> Option<&ETag> {
        self.etag.as_ref()
    }
}

/// Per-entry expiry: sliding entries live on when read, absolute ones do not.
struct PerEntry;

impl moka::Expiry<u64, Arc<Entry>> for PerEntry {
    fn expire_after_create(&self, _: &u64, entry: &Arc<Entry>, _: Instant) -> Option<Duration> {
        entry.policy.ttl()
    }

    fn expire_after_read(
        &self,
        _: &u64,
        entry: &Arc<Entry>,
        _: Instant,
        remaining: Option<Duration>,
        _: Instant,
    ) -> Option<Duration> {
        match entry.policy {
            CachePolicy::Sliding(ttl) => Some(ttl),
            _ => remaining,
        }
    }

    fn expire_after_update(&self, _: &u64, entry: &Arc<Entry>, _: Instant, _: Option<Duration>) -> Option<Duration> {
        entry.policy.ttl()
    }
}

/// Taken when a read misses: lets the read keep what it fetched only if
/// no write touched its stripe since.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    hash: u64,
    stripe: usize,
    epoch: u64,
}

impl Default for ReadCache {
    /// [`CachePolicy::default`] for every type, 64 MiB.
    fn default() -> Self {
        ReadCache::from_builder(ReadCacheBuilder::default())
    }
}

impl fmt::Debug for ReadCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReadCache")
            .field("policy", &self.inner.settings.policy)
            .field("max_bytes", &self.inner.settings.max_bytes)
            .field("entries", &self.inner.entries.entry_count())
            .finish()
    }
}

impl ReadCache {
    /// Settings for a new cache.
    pub fn builder() -> ReadCacheBuilder {
        ReadCacheBuilder::default()
    }

    pub(crate) fn from_builder(settings: ReadCacheBuilder) -> ReadCache {
        let entries = moka::sync::Cache::builder()
            .max_capacity(settings.max_bytes)
            .weigher(|_: &u64, e: &Arc<Entry>| e.weight)
            .expire_after(PerEntry)
            .build();
        ReadCache {
            inner: Arc::new(Inner {
                entries,
                stripes: (0..STRIPES).map(|_| Mutex::new(Stripe::default())).collect(),
                clock: AtomicU64::new(1),
                hasher: std::collections::hash_map::RandomState::new(),
                settings,
            }),
        }
    }

    /// The policy of entity type `T`.
    pub fn policy_of<T: 'static>(&self) -> CachePolicy {
        self.inner.settings.policy_of(TypeId::of::<T>())
    }

    /// How many entries the cache holds (approximately, while writes run).
    pub fn entry_count(&self) -> u64 {
        self.inner.entries.run_pending_tasks();
        self.inner.entries.entry_count()
    }

    /// Drops every entry.
    pub fn clear(&self) {
        for stripe in self.inner.stripes.iter() {
            let mut s = lock(stripe);
            s.epoch = self.tick();
        }
        self.inner.entries.invalidate_all();
    }

    fn tick(&self) -> u64 {
        self.inner.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn hash(&self, at: &Address<'_>) -> u64 {
        let mut h = self.inner.hasher.build_hasher();
        at.scope.hash(&mut h);
        at.table.hash(&mut h);
        at.partition_key.hash(&mut h);
        at.row_key.hash(&mut h);
        h.finish()
    }

    fn stripe_of(hash: u64) -> usize {
        (hash as usize) % STRIPES
    }

    /// The entry at `at`, if one is cached. Every lookup of a read passes here: its hit or miss is told (see
    /// [`telemetry`](crate::telemetry)).
    pub(crate) fn get(&self, at: &Address<'_>) -> Option<Arc<Entry>> {
        let found = self.inner.entries.get(&self.hash(at)).filter(|e| e.is_at(at));
        let cache = if at.row_key.is_some() { "entity" } else { "partition" };
        match found.is_some() {
            true => {
                tracing::debug!(name: telemetry::CACHE_HIT, target: telemetry::DECISION_TARGET, cache, "served from the read cache")
            }
            false => {
                tracing::trace!(name: telemetry::CACHE_MISS, target: telemetry::DECISION_TARGET, cache, "not in the read cache")
            }
        }
        telemetry::cache(found.is_some(), cache);
        found
    }

    /// A ticket for a read of `at`, or `None` while a write there is in flight
    /// (whatever such a read fetches is not kept).
    pub(crate) fn ticket(&self, at: &Address<'_>) -> Option<Ticket> {
        let hash = self.hash(at);
        let stripe = Self::stripe_of(hash);
        let s = lock(&self.inner.stripes[stripe]);
        (s.writing == 0).then_some(Ticket {
            hash,
            stripe,
            epoch: s.epoch,
        })
    }

    /// Keeps what a read fetched, unless a write touched its stripe since the ticket.
    pub(crate) fn keep(&self, ticket: Ticket, entry: Entry) {
        let s = lock(&self.inner.stripes[ticket.stripe]);
        if s.epoch == ticket.epoch && s.writing == 0 {
            self.inner.entries.insert(ticket.hash, Arc::new(entry));
        }
    }

    /// Drops the entry at `at`; reads in flight there keep nothing.
    pub(crate) fn evict(&self, at: &Address<'_>) {
        let hash = self.hash(at);
        {
            let mut s = lock(&self.inner.stripes[Self::stripe_of(hash)]);
            s.epoch = self.tick();
        }
        self.inner.entries.invalidate(&hash);
    }

    /// Starts a write of `addresses`: evicts them and holds their stripes
    /// until the returned guard settles (or is dropped, as a failure).
    pub(crate) fn begin_write<'a>(&self, addresses: impl IntoIterator<Item = Address<'a>>) -> Writing {
        let mut hashes: Vec<u64> = addresses.into_iter().map(|a| self.hash(&a)).collect();
        hashes.sort_unstable();
        hashes.dedup();
        let mut stripes: Vec<usize> = hashes.iter().map(|h| Self::stripe_of(*h)).collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut held = Vec::with_capacity(stripes.len());
        for stripe in stripes {
            let mut s = lock(&self.inner.stripes[stripe]);
            s.writing += 1;
            s.epoch = self.tick();
            held.push((stripe, s.epoch));
        }
        for hash in &hashes {
            self.inner.entries.invalidate(hash);
        }
        Writing {
            cache: self.clone(),
            hashes,
            held,
            open: true,
        }
    }
}

/// A write in flight. Dropped without [`Writing::succeed`] (an error, a
/// cancelled future) it counts as a failure: its addresses stay evicted.
pub(crate) struct Writing {
    cache: ReadCache,
    hashes: Vec<u64>,
    /// Each stripe held, with the epoch the write set when it started.
    held: Vec<(usize, u64)>,
    open: bool,
}

impl fmt::Debug for Writing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writing")
            .field("addresses", &self.hashes.len())
            .finish()
    }
}

impl Writing {
    fn end(&mut self) -> Vec<(usize, u64, bool)> {
        self.open = false;
        let mut ended = Vec::with_capacity(self.held.len());
        for &(stripe, started) in &self.held {
            let mut s = lock(&self.cache.inner.stripes[stripe]);
            s.writing = s.writing.saturating_sub(1);
            // Alone: no other write started or ended on the stripe while this one ran.
            let alone = s.epoch == started && s.writing == 0;
            s.epoch = self.cache.tick();
            ended.push((stripe, s.epoch, alone));
        }
        // Nothing can have been kept here while the write ran (`keep` needs
        // no write in flight), so what `begin_write` evicted stays evicted.
        ended
    }

    /// The write succeeded: returns what lets the caller cache the entity
    /// it wrote, if no other write overlapped it.
    pub(crate) fn succeed(mut self) -> Settled {
        let ended = self.end();
        Settled {
            cache: self.cache.clone(),
            ended,
        }
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        if self.open {
            self.end();
        }
    }
}

/// A write that succeeded, for caching the entity it wrote.
pub(crate) struct Settled {
    cache: ReadCache,
    ended: Vec<(usize, u64, bool)>,
}

impl fmt::Debug for Settled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settled").finish_non_exhaustive()
    }
}

impl Settled {
    /// Caches `entry` at `at` if the write was alone on its stripe and
    /// nothing touched the stripe since it ended.
    pub(crate) fn keep(&self, at: &Address<'_>, entry: Entry) {
        let hash = self.cache.hash(at);
        let stripe = ReadCache::stripe_of(hash);
        let Some(&(_, epoch, true)) = self.ended.iter().find(|(s, _, _)| *s == stripe) else {
            return;
        };
        self.cache.keep(Ticket { hash, stripe, epoch }, entry);
    }
}

fn lock(stripe: &Mutex<Stripe>) -> MutexGuard<'_, Stripe> {
    // A stripe holds two counters and no invariant a panic could break.
    stripe.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The bytes a row's cells take, for the memory bound.
pub(crate) fn row_bytes(row: &Row) -> usize {
    row.properties
        .iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    Value::String(s) => s.len(),
                    Value::Binary(b) => b.len(),
                    _ => 8,
                }
        })
        .sum::<usize>()
        + row.partition_key.len()
        + row.row_key.len()
}

#[cfg(test)]
mod tests;
