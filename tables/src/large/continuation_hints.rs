//! Which entities are known to have continuation rows, and how many: those
//! whose last version written or read through one [`Tables`](crate::Tables)
//! handle had them. A read of such an entity sends the reads of its
//! continuation rows together with the point read of its main row, instead
//! of after it.
//!
//! A hint only decides when rows are fetched, never what is accepted: the
//! main row's part count, each row's owner and the manifest's SHA-256 are
//! checked as on every read. A hint goes wrong only when another writer
//! changed the entity; that costs reads that find nothing, or the wait the
//! hint would have saved.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The most entities remembered; past it the hints start over (a hint is an optimisation only).
const MAX_HINTS: usize = 100_000;

/// The hints of one handle: (table, PartitionKey, RowKey) of entities with
/// continuation rows, and how many they had.
#[derive(Debug, Default)]
pub(crate) struct ContinuationHints {
    keys: Mutex<HashMap<(String, String, String), usize>>,
    /// Whether any entity was ever noted (until then every call returns at once).
    any: AtomicBool,
}

impl ContinuationHints {
    fn key(table: &str, partition_key: &str, row_key: &str) -> (String, String, String) {
        (table.to_owned(), partition_key.to_owned(), row_key.to_owned())
    }

    /// How many continuation rows the entity's last version seen had (0 when
    /// none, or when it was not seen).
    pub(crate) fn expects(&self, table: &str, partition_key: &str, row_key: &str) -> usize {
        if !self.any.load(Ordering::Relaxed) {
            return 0;
        }
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if keys.is_empty() {
            return 0;
        }
        keys.get(&Self::key(table, partition_key, row_key))
            .copied()
            .unwrap_or(0)
    }

    /// Records how many continuation rows the entity's version just written
    /// or read has (0 also for an entity deleted or found missing).
    pub(crate) fn note(&self, table: &str, partition_key: &str, row_key: &str, parts: usize) {
        if parts == 0 && !self.any.load(Ordering::Relaxed) {
            return;
        }
        self.any.store(true, Ordering::Relaxed);
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if parts > 0 {
            if keys.len() >= MAX_HINTS {
                keys.clear();
            }
            keys.insert(Self::key(table, partition_key, row_key), parts);
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
        assert_eq!(hints.expects("T", "p", "r"), 0);
        hints.note("T", "p", "r", 2);
        assert_eq!(hints.expects("T", "p", "r"), 2);
        assert_eq!(hints.expects("T", "p", "s"), 0, "another key");
        assert_eq!(hints.expects("U", "p", "r"), 0, "another table");
        hints.note("T", "p", "r", 5);
        assert_eq!(hints.expects("T", "p", "r"), 5, "a version with more rows");
        hints.note("T", "p", "r", 0);
        assert_eq!(hints.expects("T", "p", "r"), 0);
    }

    #[test]
    fn past_the_bound_the_hints_start_over() {
        let hints = ContinuationHints::default();
        for i in 0..MAX_HINTS {
            hints.note("T", "p", &i.to_string(), 1);
        }
        assert_eq!(hints.expects("T", "p", "0"), 1);
        hints.note("T", "p", "last", 3);
        assert_eq!(hints.expects("T", "p", "last"), 3);
        assert_eq!(hints.expects("T", "p", "0"), 0);
    }
}
