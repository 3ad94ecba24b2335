//! Filters and the query shapes built on them.

mod filter;
pub mod typed;

pub use filter::{CmpOp, Filter, MAX_COMPARISONS};
pub use typed::{Col, Filterable, IntoFilter, OptCol, Ordered, Where, WherePartial};
