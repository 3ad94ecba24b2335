//! The rows of one logical entity as the layout stores them: which rows are
//! an entity's continuation rows and how to ask for them, and how many
//! times a read looks again before it calls a changing entity damaged.
//! The store's reads and writes and the operator's tools read the layout
//! through this module.

use crate::layout::{continuation_key, SPLIT_OF};
use crate::query::{CmpOp, Filter};
use crate::value::{Row, Value};

/// The index of a continuation row of `main_key` from its RowKey
/// (`{main_key}~0001` is 1), if the key is one.
pub(crate) fn continuation_index(main_key: &str, row_key: &str) -> Option<usize> {
    let digits = row_key.strip_prefix(main_key)?.strip_prefix('~')?;
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|i| *i > 0)
}

/// The rows `{row_key}~0001` ..= `{row_key}~{last}` of a partition.
pub(crate) fn continuation_range(partition_key: &str, row_key: &str, last: usize) -> Filter {
    Filter::eq("PartitionKey", Value::String(partition_key.to_owned()))
        .and(Filter::cmp(
            "RowKey",
            CmpOp::Ge,
            Value::String(continuation_key(row_key, 1)),
        ))
        .and(Filter::cmp(
            "RowKey",
            CmpOp::Le,
            Value::String(continuation_key(row_key, last)),
        ))
}

/// The main RowKey a continuation row names, if the row is one.
pub(crate) fn continuation_owner(row: &Row) -> Option<&str> {
    row.get(SPLIT_OF).and_then(Value::as_str)
}

/// How many more times a read whose row failed its check, and is still at
/// the same version, is read again before the failure is reported as damage.
/// The service applies a transaction at once, so for it the first re-read
/// settles the question; an emulator that shows a transaction's rows one by
/// one needs the writer's transaction to finish, which the backoff between
/// these reads (about half a second in all) waits for.
pub(crate) const DAMAGE_CONFIRMATIONS: u32 = 6;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_indexes_are_read_from_their_keys() {
        assert_eq!(continuation_index("r", "r~0001"), Some(1));
        assert_eq!(continuation_index("r", "r~0099"), Some(99));
        assert_eq!(continuation_index("r", "r~9999"), Some(9999));
        for other in [
            "r", "r~0000", "r~001", "r~00012", "r~00a1", "s~0001", "rr~0001", "r~~0001",
        ] {
            assert_eq!(continuation_index("r", other), None, "{other}");
        }
    }
}
