//! Where a store meets its read cache: the lookups of `get`, `exists` and
//! whole-partition queries, and the hooks every write passes through.

use super::{row_bytes, Address, CachePolicy, Entry, ReadCache, Settled, Ticket, Writing};
use crate::backend::WriteOp;
use crate::entity::{Key, KeyMode, TableEntity};
use crate::store::{QueryOptions, Store};
use crate::value::{DateTime, ETag, Row};

/// A store's view of its cache: the shared cache, and this type's policy.
#[derive(Debug, Clone)]
pub(crate) struct StoreCache {
    pub(crate) cache: ReadCache,
    pub(crate) policy: CachePolicy,
}

/// A read that may be kept: its ticket and the size of what it read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keeping {
    ticket: Ticket,
    policy: CachePolicy,
}

// What a write needs, whatever it stores (a union store's rows too).
impl<T> Store<T> {
    fn scope(&self) -> &str {
        &self.shared.scope
    }

    /// Starts a write of `ops` in the cache: their entities and their
    /// partitions' lists are evicted, whatever the type's policy.
    pub(crate) fn begin_write(&self, ops: &[WriteOp]) -> Option<Writing> {
        let c = self.cache.as_ref()?;
        let scope = self.scope();
        let table = self.table.as_str();
        Some(c.cache.begin_write(ops.iter().flat_map(|op| {
            let (pk, rk) = op.keys();
            [
                Address::entity(scope, table, pk, rk),
                Address::partition(scope, table, pk),
            ]
        })))
    }
}

impl<T: TableEntity> Store<T> {
    /// The cache, when this type is served from it. A soft-delete view
    /// other than the live one always reads the table: entries hold live rows.
    fn serving(&self) -> Option<&StoreCache> {
        self.cache
            .as_ref()
            .filter(|c| c.policy.is_enabled() && self.visibility == crate::store::Visibility::Live)
    }

    /// The cached entity at `key` with its version.
    pub(crate) fn cached_entity(&self, key: &Key) -> Option<(T, ETag)> {
        let c = self.serving()?;
        let entry = c.cache.get(&Address::entity(
            self.scope(),
            &self.table,
            &key.partition_key,
            &key.row_key,
        ))?;
        let entity = entry.value::<T>()?.cache_clone()?;
        Some((entity, entry.etag().cloned().unwrap_or_else(|| ETag::new(""))))
    }

    /// The cached entity at these keys, without its version.
    pub(crate) fn cached_at(&self, partition_key: &str, row_key: &str) -> Option<T> {
        let c = self.serving()?;
        let entry = c
            .cache
            .get(&Address::entity(self.scope(), &self.table, partition_key, row_key))?;
        entry.value::<T>()?.cache_clone()
    }

    /// Whether the cache holds the entity at `key` (of any type).
    pub(crate) fn cached_presence(&self, key: &Key) -> bool {
        self.serving().is_some_and(|c| {
            c.cache
                .get(&Address::entity(
                    self.scope(),
                    &self.table,
                    &key.partition_key,
                    &key.row_key,
                ))
                .is_some()
        })
    }

    /// A ticket for a read of `key` that may keep what it fetches.
    pub(crate) fn read_ticket(&self, key: &Key) -> Option<Keeping> {
        let c = self.serving()?;
        let ticket = c.cache.ticket(&Address::entity(
            self.scope(),
            &self.table,
            &key.partition_key,
            &key.row_key,
        ))?;
        Some(Keeping {
            ticket,
            policy: c.policy,
        })
    }

    /// Keeps an entity a read fetched, if nothing wrote it meanwhile.
    pub(crate) fn keep_read(&self, keeping: Keeping, key: &Key, entity: &T, etag: &ETag, bytes: usize) {
        let (Some(c), Some(copy)) = (self.cache.as_ref(), entity.cache_clone()) else {
            return;
        };
        let at = Address::entity(self.scope(), &self.table, &key.partition_key, &key.row_key);
        let entry = Entry::new(&at, copy, Some(etag.clone()), bytes, keeping.policy);
        c.cache.keep(keeping.ticket, entry);
    }

    /// Drops the cached entity at `key` (and stops reads in flight from keeping theirs).
    pub(crate) fn evict(&self, partition_key: &str, row_key: &str) {
        if let Some(c) = &self.cache {
            c.cache
                .evict(&Address::entity(self.scope(), &self.table, partition_key, row_key));
            c.cache
                .evict(&Address::partition(self.scope(), &self.table, partition_key));
        }
    }

    /// Caches the entity a write stored, decoded from the row it wrote (so
    /// it is what a read returns), with the version the service returned,
    /// when no other write of it overlapped.
    pub(crate) fn keep_written(&self, settled: &Settled, row: Row, etag: &ETag, timestamp: Option<DateTime>) {
        let Some(c) = self.serving() else { return };
        // A soft-deleted entity is not one the live view reads.
        if !self.admits(&row) {
            return;
        }
        let bytes = row_bytes(&row);
        // A row that does not read back caches nothing.
        let Ok(mut copy) = T::from_row(row) else { return };
        copy.set_etag(Some(etag.clone()));
        copy.set_timestamp(timestamp);
        if const { T::SCHEMA.has_large_values() } {
            self.bind_read_files(&mut copy);
        }
        let key = copy.key();
        let at = Address::entity(self.scope(), &self.table, &key.partition_key, &key.row_key);
        settled.keep(&at, Entry::new(&at, copy, Some(etag.clone()), bytes, c.policy));
    }

    /// A copy of a write's row for the cache, when the type is cached.
    pub(crate) fn row_for_cache(&self, row: &Row) -> Option<Row> {
        self.serving().map(|_| row.clone())
    }

    /// The partition a query reads whole (no filter, prefix, limit or
    /// projection), normalized as the type's ids are: the queries whose
    /// lists are cached.
    pub(crate) fn whole_partition<S>(&self, options: &QueryOptions<T, S>) -> Option<String> {
        self.serving()?;
        let whole = options.prefix.is_none()
            && options.take.is_none()
            && options.filter.is_none()
            && options.select.is_none()
            && options.cursor.is_none()
            && options.filter_error.is_none();
        let partition = options.partition.as_deref().filter(|_| whole)?;
        Some(match T::SCHEMA.keys {
            KeyMode::CompositeId { normalize: true } => crate::entity::normalize_id(partition),
            _ => partition.to_owned(),
        })
    }

    /// The cached list of a whole partition.
    pub(crate) fn cached_list(&self, partition_key: &str) -> Option<Vec<T>> {
        let c = self.serving()?;
        let entry = c
            .cache
            .get(&Address::partition(self.scope(), &self.table, partition_key))?;
        entry.value::<Vec<T>>()?.iter().map(T::cache_clone).collect()
    }

    /// A ticket for a whole-partition read.
    pub(crate) fn list_ticket(&self, partition_key: &str) -> Option<Keeping> {
        let c = self.serving()?;
        let ticket = c
            .cache
            .ticket(&Address::partition(self.scope(), &self.table, partition_key))?;
        Some(Keeping {
            ticket,
            policy: c.policy,
        })
    }

    /// Keeps a whole partition's list, if nothing wrote the partition meanwhile.
    pub(crate) fn keep_list(&self, keeping: Keeping, partition_key: &str, list: &[T], bytes: usize) {
        let Some(c) = &self.cache else { return };
        let Some(copy) = list.iter().map(T::cache_clone).collect::<Option<Vec<T>>>() else {
            return;
        };
        let at = Address::partition(self.scope(), &self.table, partition_key);
        c.cache
            .keep(keeping.ticket, Entry::new(&at, copy, None, bytes, keeping.policy));
    }
}
