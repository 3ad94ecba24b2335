//! Whether the next entity read of a type is likely to have continuation
//! rows: the last one of that type written or read in the table had them.
//! A read that expects them sends the range query of its continuation rows
//! together with the point read of its main row, instead of after it.
//!
//! A hint only decides when rows are fetched, never what is accepted: the
//! main row's part count, each row's owner and the manifest's SHA-256 are
//! checked as on every read. A wrong hint costs one range query that finds
//! nothing, or the wait the hint would have saved.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Mutex;

/// The hints of one [`Tables`](crate::Tables) handle, by table and entity type.
#[derive(Debug, Default)]
pub(crate) struct ContinuationHints {
    by_type: Mutex<HashMap<(String, TypeId), bool>>,
}

impl ContinuationHints {
    /// Whether the last entity of `T` written or read in `table` had continuation rows.
    pub(crate) fn expects<T: 'static>(&self, table: &str) -> bool {
        let hints = self.by_type.lock().unwrap_or_else(|e| e.into_inner());
        hints
            .get(&(table.to_owned(), TypeId::of::<T>()))
            .copied()
            .unwrap_or(false)
    }

    /// Records whether an entity of `T` just written or read in `table` had continuation rows.
    pub(crate) fn note<T: 'static>(&self, table: &str, had: bool) {
        let mut hints = self.by_type.lock().unwrap_or_else(|e| e.into_inner());
        match hints.get_mut(&(table.to_owned(), TypeId::of::<T>())) {
            Some(hint) => *hint = had,
            None if had => {
                hints.insert((table.to_owned(), TypeId::of::<T>()), true);
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_entity_of_a_type_in_a_table_decides() {
        let hints = ContinuationHints::default();
        assert!(!hints.expects::<u8>("T"));
        hints.note::<u8>("T", true);
        assert!(hints.expects::<u8>("T"));
        assert!(!hints.expects::<u16>("T"), "another type");
        assert!(!hints.expects::<u8>("U"), "another table");
        hints.note::<u8>("T", false);
        assert!(!hints.expects::<u8>("T"));
    }
}
