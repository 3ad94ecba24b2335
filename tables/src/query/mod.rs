//! Filters and the query shapes built on them.

mod filter;
mod refused;
mod select;
mod typed;

pub use filter::{CmpOp, Filter, MAX_COMPARISONS};
pub use refused::{reason, JsonCol, LargeCol, SkippedCol};
pub use select::Selected;
pub use typed::{Col, Filterable, IntoFilter, Nested, NotOnOptional, OptCol, Ordered, Where, WherePartial};
