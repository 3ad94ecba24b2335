//! Filters and the query shapes built on them.

mod filter;

pub use filter::{CmpOp, Filter, MAX_COMPARISONS};
