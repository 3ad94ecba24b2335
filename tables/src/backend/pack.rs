//! Packing write operations into entity-group transactions: one weight
//! function and one packer, used by every batch and by the planner that
//! checks that one entity's rows fit a single transaction.

use std::ops::Range;

use super::WriteOp;
#[cfg(doc)]
use crate::service::ServiceProfile;
use crate::service::MAX_TRANSACTION_OPS;
use crate::value::{wire, Row};

/// The request-body budget of one transaction on Table Storage: the
/// service's 4 MiB, less a margin for the multipart envelope's fixed parts
/// ([`ServiceProfile::transaction_body_budget`] gives each profile's). Rows
/// count as [`wire::wire_size`] counts them, on the body as sent: six bytes
/// per non-ASCII UTF-16 unit (twelve for an emoji), as the .NET library's
/// estimate counts them, so 4 MiB holds about 690,000 Cyrillic characters
/// (1.4 MB of UTF-8).
#[cfg(test)]
pub(crate) const TRANSACTION_BODY_BUDGET: usize = crate::service::MAX_TRANSACTION_BYTES - 64 * 1024;

/// Bytes of multipart envelope per operation (part headers, request line), besides its keys.
const PER_OPERATION_ENVELOPE: usize = 400;

/// Request-body bytes an operation on these keys adds besides its row's JSON
/// (the keys appear escaped in the request line, up to three bytes a byte).
pub(crate) fn key_weight(partition_key: &str, row_key: &str) -> usize {
    PER_OPERATION_ENVELOPE + 3 * (partition_key.len() + row_key.len())
}

/// Request-body bytes writing `row` adds to a transaction (its JSON with
/// non-ASCII escaped, its keys and the envelope).
pub(crate) fn row_weight(row: &Row) -> usize {
    wire::wire_size(row) + key_weight(&row.partition_key, &row.row_key)
}

/// Request-body bytes `op` adds to a transaction.
pub(crate) fn op_weight(op: &WriteOp) -> usize {
    let (pk, rk) = op.keys();
    op.row().map_or(0, wire::wire_size) + key_weight(pk, rk)
}

/// Splits units (each a number of operations and their weight, all on one
/// partition) into consecutive transactions of at most
/// [`MAX_TRANSACTION_OPS`] operations and `budget` bytes (the profile's
/// [`ServiceProfile::transaction_body_budget`]).
/// A unit is never split; one larger than a transaction gets one of its own.
/// Returns index ranges into the units.
pub(crate) fn pack(units: impl IntoIterator<Item = (usize, usize)>, budget: usize) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let (mut start, mut ops, mut bytes, mut count) = (0, 0, 0, 0);
    for (i, (unit_ops, unit_bytes)) in units.into_iter().enumerate() {
        count = i + 1;
        let fits = ops + unit_ops <= MAX_TRANSACTION_OPS && bytes + unit_bytes <= budget;
        if i > start && !fits {
            ranges.push(start..i);
            start = i;
            ops = 0;
            bytes = 0;
        }
        ops += unit_ops;
        bytes += unit_bytes;
    }
    if start < count {
        ranges.push(start..count);
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_by_count_and_bytes_without_splitting_units() {
        assert_eq!(
            pack((0..250).map(|_| (1, 10)), TRANSACTION_BODY_BUDGET),
            vec![0..100, 100..200, 200..250]
        );
        assert_eq!(
            pack((0..3).map(|_| (40, 10)), TRANSACTION_BODY_BUDGET),
            vec![0..2, 2..3]
        );
        let big = TRANSACTION_BODY_BUDGET / 2 + 1;
        assert_eq!(
            pack([(1, big), (1, big), (1, 5)], TRANSACTION_BODY_BUDGET),
            vec![0..1, 1..3]
        );
        assert_eq!(
            pack([(1, TRANSACTION_BODY_BUDGET * 2)], TRANSACTION_BODY_BUDGET),
            vec![0..1]
        );
        assert!(pack(std::iter::empty(), TRANSACTION_BODY_BUDGET).is_empty());
    }

    #[test]
    fn non_ascii_weighs_six_bytes_a_utf16_unit() {
        let weight = |text: &str| row_weight(&Row::new("p", "r").with("S", crate::Value::String(text.into())));
        let ascii = weight(&"a".repeat(1000));
        assert_eq!(weight(&"Ж".repeat(1000)), ascii + 5000);
        assert_eq!(weight(&"€".repeat(1000)), ascii + 5000);
        assert_eq!(weight(&"😀".repeat(1000)), ascii + 11_000);
    }
}
