//! Secondary indexes in the store: the index step of the write pipeline
//! (`maintain`), lookups (`lookup`) and the
//! queries they build (`query`). See
//! [`guide::secondary_indexes`](crate::guide::secondary_indexes).

mod applier;
mod background;
mod build;
mod check;
mod compensate;
mod lookup;
pub(crate) mod maintain;
mod query;
mod reserve;
pub(crate) mod verbs;

pub use applier::{AppliedIntents, FailedIntent};
pub(crate) use background::Applying;
pub use build::{BuildIndexOptions, BuildStep, BuildSteps};
pub use check::{IndexCheckOptions, IndexFinding, IndexReport};
pub use lookup::{find_global, find_local, get_global, get_local, IndexLookup};
pub(crate) use maintain::{reserved_ops, IndexPlan};
pub use query::{IndexCursor, IndexPage, IndexQuery, IndexStream};
pub(crate) use verbs::{partition_columns, patch_touches, without_intents};
