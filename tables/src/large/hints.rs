//! Which entities are known to have continuation rows: those whose last
//! version written or read through one [`Tables`](crate::Tables) handle had
//! them. A read of such an entity sends the range query of its continuation
//! rows together with the point read of its main row, instead of after it.
//!
//! A hint only decides when rows are fetched, never what is accepted: the
//! main row's part count, each row's owner and the manifest's SHA-256 are
//! checked as on every read. A hint goes wrong only when another writer
//! changed the entity; that costs one range query that finds nothing, or the
//! wait the hint would have saved.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The most entities remembered; past it the hints start over (a hint is an optimisation only).
const MAX_HINTS: usize = 100_000;

/// The hints of one handle: (table, PartitionKey, RowKey) of entities with continuation rows.
#[derive(Debug, Default)]
pub(crate) struct ContinuationHints {
    keys: Mutex<HashSet<(String, String, String)>>,
    /// Whether any entity was ever noted (until then every call returns at once).
    any: AtomicBool,
}

impl ContinuationHints {
    fn key(table: &str, partition_key: &str, row_key: &str) -> (String, String, String) {
        (table.to_owned(), partition_key.to_owned(), row_key.to_owned())
    }

    /// Whether the entity's last version seen had continuation rows.
    pub(crate) fn expects(&self, table: &str, partition_key: &str, row_key: &str) -> bool {
        if !self.any.load(Ordering::Relaxed) {
            return false;
        }
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        !keys.is_empty() && keys.contains(&Self::key(table, partition_key, row_key))
    }

    /// Records whether the entity's version just written or read has continuation rows
    /// (`false` also for an entity deleted or found missing).
    pub(crate) fn note(&self, table: &str, partition_key: &str, row_key: &str, has: bool) {
        if !has && !self.any.load(Ordering::Relaxed) {
            return;
        }
        self.any.store(true, Ordering::Relaxed);
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if has {
            if keys.len() >= MAX_HINTS {
                keys.clear();
            }
            keys.insert(Self::key(table, partition_key, row_key));
        } else if !keys.is_empty() {
            keys.remove(&Self::key(table, partition_key, row_key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_version_of_each_entity_decides() {
        let hints = ContinuationHints::default();
        assert!(!hints.expects("T", "p", "r"));
        hints.note("T", "p", "r", true);
        assert!(hints.expects("T", "p", "r"));
        assert!(!hints.expects("T", "p", "s"), "another key");
        assert!(!hints.expects("U", "p", "r"), "another table");
        hints.note("T", "p", "r", false);
        assert!(!hints.expects("T", "p", "r"));
    }

    #[test]
    fn past_the_bound_the_hints_start_over() {
        let hints = ContinuationHints::default();
        for i in 0..MAX_HINTS {
            hints.note("T", "p", &i.to_string(), true);
        }
        assert!(hints.expects("T", "p", "0"));
        hints.note("T", "p", "last", true);
        assert!(hints.expects("T", "p", "last"));
        assert!(!hints.expects("T", "p", "0"));
    }
}
