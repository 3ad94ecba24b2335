//! The keys a query's filter confines it to, as the service reads them: a
//! filter whose top-level conjunction names one partition (`PartitionKey eq`)
//! is a range scan of that partition, narrowed further by `RowKey` bounds.
//! The in-memory backend starts and stops its scan there instead of walking
//! the whole table; every row inside the span is still checked against the
//! whole filter, so what a query answers does not change.

use std::cmp::Ordering;

use crate::query::{CmpOp, Filter};
use crate::value::{cmp_utf16, Value};

/// The partition and row-key bounds a filter implies.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Span<'a> {
    /// The one partition every matching row is in.
    pub(super) partition: Option<&'a str>,
    /// The smallest row key a matching row may have (a key of that value matches).
    pub(super) from: Option<&'a str>,
    /// The largest row key a matching row may have, and whether it matches itself.
    pub(super) to: Option<(&'a str, bool)>,
}

impl<'a> Span<'a> {
    /// The span of `filter`: only the conjuncts at its top (an `or` widens
    /// the span to the whole table, and is then left to the row checks).
    pub(super) fn of(filter: Option<&'a Filter>) -> Span<'a> {
        let mut span = Span::default();
        if let Some(f) = filter {
            span.narrow(f);
        }
        span
    }

    fn narrow(&mut self, filter: &'a Filter) {
        match filter {
            Filter::And(a, b) => {
                self.narrow(a);
                self.narrow(b);
            }
            Filter::Compare {
                column,
                op,
                value: Value::String(v),
            } => match (column.as_str(), op) {
                ("PartitionKey", CmpOp::Eq) if self.partition.is_none() => self.partition = Some(v),
                ("RowKey", CmpOp::Eq) => {
                    self.raise(v);
                    self.lower(v, true);
                }
                ("RowKey", CmpOp::Ge | CmpOp::Gt) => self.raise(v),
                ("RowKey", CmpOp::Le) => self.lower(v, true),
                ("RowKey", CmpOp::Lt) => self.lower(v, false),
                _ => {}
            },
            _ => {}
        }
    }

    /// `RowKey >= v` (a `gt` starts at the same key: that one row is checked).
    fn raise(&mut self, v: &'a str) {
        if self.from.is_none_or(|f| cmp_utf16(v, f) == Ordering::Greater) {
            self.from = Some(v);
        }
    }

    fn lower(&mut self, v: &'a str, inclusive: bool) {
        let tighter = match self.to {
            None => true,
            Some((t, t_inclusive)) => match cmp_utf16(v, t) {
                Ordering::Less => true,
                Ordering::Equal => t_inclusive && !inclusive,
                Ordering::Greater => false,
            },
        };
        if tighter {
            self.to = Some((v, inclusive));
        }
    }

    /// Whether the scan, walking keys upwards, has passed every row of the span.
    pub(super) fn passed(&self, partition_key: &str, row_key: &str) -> bool {
        let Some(p) = self.partition else {
            return false;
        };
        match cmp_utf16(partition_key, p) {
            Ordering::Less => false,
            Ordering::Greater => true,
            Ordering::Equal => match self.to {
                None => false,
                Some((to, inclusive)) => match cmp_utf16(row_key, to) {
                    Ordering::Less => false,
                    Ordering::Equal => !inclusive,
                    Ordering::Greater => true,
                },
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Value {
        Value::String(s.to_owned())
    }

    #[test]
    fn a_partition_and_row_key_bounds_make_a_span() {
        let f = Filter::eq("PartitionKey", text("p"))
            .and(Filter::cmp("RowKey", CmpOp::Gt, text("b")))
            .and(Filter::cmp("RowKey", CmpOp::Ge, text("a")))
            .and(Filter::cmp("RowKey", CmpOp::Lt, text("m")))
            .and(Filter::cmp("RowKey", CmpOp::Le, text("m")));
        let span = Span::of(Some(&f));
        assert_eq!(span.partition, Some("p"));
        assert_eq!(span.from, Some("b"));
        assert_eq!(span.to, Some(("m", false)));
        assert!(!span.passed("a", "z"));
        assert!(!span.passed("p", "l"));
        assert!(span.passed("p", "m"));
        assert!(span.passed("q", ""));
    }

    #[test]
    fn an_or_or_another_column_leaves_the_whole_table() {
        let either = Filter::eq("PartitionKey", text("p")).or(Filter::eq("PartitionKey", text("q")));
        assert_eq!(Span::of(Some(&either)), Span::default());
        let other = Filter::eq("Name", text("p")).and(Filter::cmp("RowKey", CmpOp::Ne, text("a")));
        assert_eq!(Span::of(Some(&other)), Span::default());
        assert_eq!(Span::of(None), Span::default());
        assert!(!Span::default().passed("zzz", "zzz"));
    }
}
