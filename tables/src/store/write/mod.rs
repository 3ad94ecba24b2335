//! Writing: every table write, whatever the verb, enters through one
//! function, [`Store::commit`], which takes a [`Write`] (the operations,
//! which of them may be dropped, which rows carry a write token) and owns
//! the steps every write takes:
//!
//! 1. **conditions**: a caller's ETag is a version, never the wildcard
//!    (`conditions.rs`), and the keys and names of every row keep to the
//!    limits of the service profile written to (`profile_limits.rs`);
//! 2. **write tokens**: each row the write names gets its token here, with
//!    the service's limits checked with its cell counted (`settle.rs`; an
//!    entity's planning path reserves it earlier, by the same helper, so
//!    its plan counts the cell);
//! 3. **the read cache**: what the operations touch is evicted before they
//!    are sent, and stays evicted when the write fails or is dropped;
//! 4. **routing**: one request (one operation) or one transaction, with the
//!    retries and read-backs that settle it exactly once (`settle.rs`),
//!    and operations that may be dropped dropped when their row is gone.
//!
//! The rest of the folder builds writes for it: `entity.rs` (encode, plan
//! and guard an entity), `batch.rs`, `delete.rs`, `patch.rs`,
//! `concurrency.rs` (read-modify-write), `protect.rs` (protected fields).
//! Nothing outside this folder sends a table write another way.

pub(super) mod batch;
pub(super) mod concurrency;
pub(crate) mod conditions;
pub(super) mod delete;
pub(crate) mod entity;
pub(super) mod patch;
pub(crate) mod profile_limits;
pub(super) mod protect;
pub(crate) mod settle;
#[cfg(test)]
mod tests;

use super::cache::{Settled, Writing};
use super::Store;
use crate::backend::{WriteOp, WriteOutcome};
use crate::error::{Error, ErrorKind, Result};
use crate::large::plan::{plan, LargeColumn, Limits, Plan};
use crate::service::check_row_limits;
use crate::store::write::conditions::check_conditions;
use crate::store::write::profile_limits::check_profile_limits;
use crate::value::Row;

pub(crate) use entity::{reads_first, Encoded, Stamps, Unit, Verb};

/// One table write, as [`Store::commit`] takes it.
#[derive(Debug)]
pub(crate) struct Write {
    /// Sent as one request (one operation) or one transaction.
    ops: Vec<WriteOp>,
    /// Operations at `droppable..` may be dropped when they find their row
    /// gone (stale rows of a damaged or concurrently changed entity), the
    /// rest sent again.
    droppable: usize,
    /// The operations whose rows carry a write token: each gets one here
    /// unless it has one already.
    tokens: Vec<usize>,
    /// No attempt is sent after this instant (a write that holds unique
    /// reservations is sent only while they are young).
    deadline: Option<std::time::Instant>,
}

impl Write {
    /// `ops`, none of which may be dropped, no row of which is named to
    /// carry a token (the first row with room gets one when it is sent).
    pub(crate) fn new(ops: Vec<WriteOp>) -> Write {
        Write {
            ops,
            droppable: usize::MAX,
            tokens: Vec::new(),
            deadline: None,
        }
    }

    /// One operation.
    pub(crate) fn one(op: WriteOp) -> Write {
        Write::new(vec![op])
    }

    /// Lets the operations at `index..` be dropped when they find their row gone.
    pub(crate) fn droppable_from(mut self, index: usize) -> Write {
        self.droppable = index;
        self
    }

    /// Sends no attempt after `deadline`: one due later is refused with
    /// [`Error::Conflict`] when no earlier attempt is in doubt, and is
    /// [`Error::OutcomeUnknown`] when one is.
    pub(crate) fn send_before(mut self, deadline: Option<std::time::Instant>) -> Write {
        self.deadline = deadline;
        self
    }

    /// Names the rows (by operation index) that carry a write token: rows
    /// a verb built, which the service's limits are checked on with the
    /// token counted.
    pub(crate) fn tokens_on(mut self, indexes: impl IntoIterator<Item = usize>) -> Write {
        self.tokens.extend(indexes);
        self
    }
}

/// What a committed write reports.
#[derive(Debug)]
pub(crate) struct Committed {
    /// The outcomes of the operations sent, in order.
    pub(crate) outcomes: Vec<WriteOutcome>,
    /// The indexes (into the write's operations) of the operations sent in
    /// the end (all but those dropped).
    pub(crate) kept: Vec<usize>,
    /// What lets the caller cache the entity written (with a read cache).
    pub(crate) settled: Option<Settled>,
}

impl Committed {
    /// The outcome of the first operation.
    pub(crate) fn first(mut self) -> WriteOutcome {
        self.outcomes.swap_remove(0)
    }
}

// Committing does not depend on the entity type (a union store commits through it too).
impl<T> Store<T> {
    /// The one entry of every table write: checks the conditions, gives the
    /// rows `write` names their write tokens (and checks the service's
    /// limits on them), evicts what the operations touch from the read
    /// cache, and sends them as one request or one transaction, settled
    /// exactly once (see `settle.rs`).
    ///
    /// The cache evicts before anything is sent, and a write that fails, or
    /// whose future is dropped, leaves it evicted.
    pub(crate) async fn commit(&self, write: Write) -> Result<Committed> {
        let Write {
            mut ops,
            droppable,
            tokens,
            deadline,
        } = write;
        check_conditions(&ops)?;
        check_profile_limits(self.profile(), &ops)?;
        for index in tokens {
            if let Some(row) = ops.get_mut(index).and_then(settle::row_mut) {
                if self.reserve_token(row) {
                    check_row_limits(row)?;
                }
            }
        }
        let writing = self.begin_write(&ops);
        let noted = self.note_written(&ops);
        let (outcomes, kept) = self
            .send_ops(ops, droppable, deadline)
            .await
            .inspect_err(|_| self.forget_written(&noted))?;
        Ok(Committed {
            outcomes,
            kept,
            settled: writing.map(Writing::succeed),
        })
    }

    /// Sends operations as one request (one operation) or one transaction,
    /// dropping operations at index `droppable..` that found their row gone
    /// and sending the rest again. Returns every outcome and the indexes
    /// (into `ops`) of the operations sent in the end.
    async fn send_ops(
        &self,
        mut ops: Vec<WriteOp>,
        droppable: usize,
        deadline: Option<std::time::Instant>,
    ) -> Result<(Vec<WriteOutcome>, Vec<usize>)> {
        let mut kept: Vec<usize> = (0..ops.len()).collect();
        loop {
            if ops.len() == 1 || droppable >= ops.len() {
                // Nothing can be dropped: the operations are moved, not copied.
                return self.exchange_ops(ops, deadline).await.map(|outcomes| (outcomes, kept));
            }
            match self.exchange_ops(ops.clone(), deadline).await {
                Ok(outcomes) => return Ok((outcomes, kept)),
                Err(Error::Transaction { index, source })
                    if index >= droppable && index < ops.len() && source.kind() == ErrorKind::NotFound =>
                {
                    ops.remove(index);
                    kept.remove(index);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Plans the rows of `row` (large values to continuation rows and
    /// blobs) with its write token reserved first, so the plan counts its
    /// cell: the planning path of a write built outside an entity's
    /// encoding (the toolbox's import).
    pub(crate) fn plan_row(&self, mut row: Row, columns: &[LargeColumn], limits: Limits) -> Result<Plan> {
        self.reserve_token(&mut row);
        plan(&self.table, std::borrow::Cow::Owned(row), columns, limits)
    }
}
