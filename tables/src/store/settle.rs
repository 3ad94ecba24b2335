//! Exactly once under ambiguous answers: the write token, the store's
//! retries of a write, and the read-back that settles a write whose answer
//! was lost.
//!
//! Every main row the store writes carries a fresh token in its
//! [`WRITE_TOKEN`] cell, put there when the row is built (an entity's, a
//! union store's, a `patch`'s), or by [`Store::send`](super::Store::send)
//! into the first row of a request that has none (a merge built elsewhere).
//! One request is tried as the store's
//! [`RetryPolicy`](crate::RetryPolicy) allows, on every backend:
//!
//! - an answer that says "not processed" (503 `ServerBusy`, 429) is tried
//!   again after the policy's backoff;
//! - an answer that leaves the outcome open (no answer, a timeout, an answer
//!   that cannot be read, another 5xx such as 500 `OperationTimedOut`) is
//!   settled by reading the token's row back: holding this request's token,
//!   the request was applied and the call succeeds with the row's ETag;
//!   otherwise it was not, and it is sent again while the policy allows;
//! - a refusal of an attempt sent after one left in doubt (409 to an insert,
//!   412 to a conditional write, 404 to a delete) may be the echo of that
//!   earlier attempt: the row is read back the same way;
//! - a read-back that fails is followed by a new attempt (an insert or a
//!   conditional write applied before is refused, an upsert lands the same
//!   row again, a delete finds the row gone), settled the same way;
//! - when the policy's attempts or retry budget run out before a read-back
//!   could be made, the write is [`Error::OutcomeUnknown`]; so is a write on
//!   condition of a version whose row now holds another writer's version
//!   without its token (it may have landed first and been replaced, or lost
//!   the race: nobody can tell, and `mutate` must not apply its intent again).
//!
//! A transaction is atomic, so the row of its first token settles all of it.
//! A request of deletes only is settled by its first row being gone (as the
//! caller wanted, whoever removed it).

use std::time::Instant;

use base64::Engine as _;
use rand::RngCore as _;

use super::Store;
use crate::backend::WriteOutcome;
use crate::backend::{IfMatch, WriteOp};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::WRITE_TOKEN;
use crate::value::{ColumnName, Row, Value};

/// A fresh write token: 16 random bytes, URL-safe base64 without padding.
pub(crate) fn new_token() -> String {
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Gives `row` a fresh token, before the checks of the service's limits so
/// they count it. Every send of the row is settled before the next one, so
/// the sends of one write may share it.
pub(crate) fn reserve_token(row: &mut Row) {
    row.insert(ColumnName::from_static(WRITE_TOKEN), Value::String(new_token()));
}

/// Gives the first row of `ops` a fresh token when no row has one. Returns
/// whether a row carries one.
fn stamp(ops: &mut [WriteOp]) -> bool {
    if ops.iter().any(|op| op.row().is_some_and(|r| token_of(r).is_some())) {
        return true;
    }
    match ops.iter_mut().find_map(row_mut) {
        Some(row) => {
            reserve_token(row);
            true
        }
        None => false,
    }
}

fn row_mut(op: &mut WriteOp) -> Option<&mut Row> {
    match op {
        WriteOp::Insert(row) | WriteOp::Update { row, .. } | WriteOp::Upsert { row, .. } => Some(row),
        WriteOp::Delete { .. } => None,
    }
}

/// The token a row carries.
fn token_of(row: &Row) -> Option<&str> {
    match row.get(WRITE_TOKEN) {
        Some(Value::String(t)) => Some(t),
        _ => None,
    }
}

/// Whether the stored row `stored` holds the token the row `sent` carried.
fn holds(stored: &Row, sent: &Row) -> bool {
    token_of(sent).is_some_and(|t| token_of(stored) == Some(t))
}

/// What an error answer says about the attempt that got it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Not processed (503 `ServerBusy`, 429): safe to send again.
    NotProcessed,
    /// Applied or not, nobody knows: no answer, a timeout, another 5xx, an
    /// answer that cannot be read.
    InDoubt,
    /// A refusal about the row (404, 409, 412): the answer to this attempt,
    /// or the echo of an earlier one that was applied.
    Refused,
    /// Any other failure.
    Failed,
}

fn answer(error: &Error) -> Answer {
    match error.kind() {
        ErrorKind::Throttled => Answer::NotProcessed,
        ErrorKind::Unavailable | ErrorKind::MalformedResponse | ErrorKind::OutcomeUnknown => Answer::InDoubt,
        ErrorKind::NotFound if error.service_code().is_some_and(|(_, code)| code == "TableNotFound") => Answer::Failed,
        ErrorKind::NotFound | ErrorKind::AlreadyExists | ErrorKind::PreconditionFailed => Answer::Refused,
        _ => Answer::Failed,
    }
}

// Sending does not depend on the entity type (a union store commits through it too).
impl<T> Store<T> {
    /// One request (one operation, or one transaction of several) with its
    /// token, its retries and its read-backs; see the module docs.
    pub(crate) async fn exchange(&self, mut ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        let policy = self.tables.retry;
        // Whether the write can be settled by a read-back: a row carries a
        // token, or there are deletes only (settled by the row being gone).
        let settles = match self.tables.write_tokens {
            true => stamp(&mut ops) || ops.iter().all(|op| op.row().is_none()),
            false => ops.iter().all(|op| op.row().is_none()),
        };
        let started = Instant::now();
        let mut failures = 0u32;
        // The first answer that left an attempt in doubt, until it is settled.
        let mut doubt: Option<Error> = None;
        loop {
            let error = match self.request(&ops).await {
                Ok(outcomes) => return Ok(outcomes),
                Err(e) => e,
            };
            let said = answer(&error);
            if matches!(said, Answer::NotProcessed | Answer::InDoubt) {
                failures += 1;
            }
            // `last` is the answer to settle beside the doubt, if it is not the doubt itself.
            let last = match (said, doubt.is_some()) {
                (Answer::InDoubt, false) => {
                    doubt = Some(error);
                    None
                }
                (Answer::NotProcessed, false) => match policy.next_delay(failures, started.elapsed()) {
                    Some(pause) => {
                        tracing::debug!(table = %self.table, ?pause, error = %error, "the service did not process a write; sending it again");
                        tokio::time::sleep(pause).await;
                        continue;
                    }
                    None => return Err(error),
                },
                (_, false) => return Err(error),
                (_, true) => Some(error),
            };
            if !settles {
                // Without a token (only when measuring its cost) nothing can settle a row written.
                let earlier = doubt.take().unwrap_or_else(|| unreachable!("a write in doubt"));
                return Err(self.outcome_unknown(&ops, earlier));
            }
            match self.read_back(&ops).await {
                Ok(Settlement::Undecided) => {
                    tracing::warn!(table = %self.table, "a conditional write whose answer was lost finds another writer's version: whether it landed first cannot be told");
                    let earlier = doubt.take().unwrap_or_else(|| unreachable!("a write in doubt"));
                    return Err(self.outcome_unknown(&ops, earlier));
                }
                Ok(Settlement::Applied(outcomes)) => {
                    tracing::debug!(table = %self.table, "a write whose answer was lost was applied (its token was read back)");
                    return Ok(outcomes);
                }
                Ok(Settlement::NotApplied) => {
                    let earlier = doubt.take().unwrap_or_else(|| unreachable!("a write in doubt"));
                    // Not applied: a refusal is this attempt's own answer.
                    if matches!(said, Answer::Refused | Answer::Failed) {
                        return Err(last.unwrap_or(earlier));
                    }
                    match policy.next_delay(failures, started.elapsed()) {
                        Some(pause) => {
                            tracing::debug!(table = %self.table, ?pause, error = %earlier, "a write whose answer was lost was not applied; sending it again");
                            tokio::time::sleep(pause).await;
                        }
                        None => return Err(last.unwrap_or(earlier)),
                    }
                }
                Err(read_error) => {
                    failures += 1;
                    tracing::debug!(table = %self.table, error = %read_error, "cannot read back a write whose answer was lost");
                    match policy.next_delay(failures, started.elapsed()) {
                        // Sent again: an applied attempt answers as the service would answer its echo.
                        Some(pause) => tokio::time::sleep(pause).await,
                        None => {
                            tracing::warn!(
                                table = %self.table,
                                read_error = %read_error,
                                "a write whose answer was lost could not be read back within the retry policy"
                            );
                            let earlier = doubt.take().unwrap_or_else(|| unreachable!("a write in doubt"));
                            return Err(self.outcome_unknown(&ops, earlier));
                        }
                    }
                }
            }
        }
    }

    /// Sends `ops` once: one operation alone, several as a transaction.
    async fn request(&self, ops: &[WriteOp]) -> Result<Vec<WriteOutcome>> {
        match ops {
            [op] => self
                .tables
                .backend
                .execute(&self.table, op.clone())
                .await
                .map(|o| vec![o]),
            _ => self.tables.backend.transaction(&self.table, ops.to_vec()).await,
        }
    }

    /// Reads back the row that settles `ops`: applied when the first row
    /// sent with a token holds it (for deletes only, when the first row is
    /// gone); undecided when that row was written on condition of a version
    /// and now holds another writer's version (this write may have landed
    /// first and been replaced, or lost to it); otherwise not applied.
    async fn read_back(&self, ops: &[WriteOp]) -> Result<Settlement> {
        let witness = ops
            .iter()
            .position(|op| op.row().is_some_and(|r| token_of(r).is_some()))
            .unwrap_or(0);
        let (pk, rk) = ops[witness].keys();
        let stored = self.tables.backend.get(&self.table, pk, rk).await?;
        let applied = match ops[witness].row() {
            Some(sent) => stored.as_ref().is_some_and(|r| holds(r, sent)),
            None => stored.is_none(),
        };
        if !applied {
            let moved = match (&ops[witness], &stored) {
                (
                    WriteOp::Update {
                        condition: IfMatch::ETag(version),
                        ..
                    },
                    Some(row),
                ) => row.etag.as_ref() != Some(version),
                _ => false,
            };
            return Ok(if moved {
                Settlement::Undecided
            } else {
                Settlement::NotApplied
            });
        }
        let mut outcomes = vec![
            WriteOutcome {
                etag: None,
                timestamp: None
            };
            ops.len()
        ];
        outcomes[witness] = outcome_of(stored.as_ref());
        // The other rows of a transaction that carry the token: their versions, if still ours.
        for (i, op) in ops.iter().enumerate() {
            if let Some(sent) = op.row().filter(|r| i != witness && token_of(r).is_some()) {
                let (pk, rk) = op.keys();
                let row = self.tables.backend.get(&self.table, pk, rk).await?;
                outcomes[i] = outcome_of(row.as_ref().filter(|r| holds(r, sent)));
            }
        }
        Ok(Settlement::Applied(outcomes))
    }

    /// The unknown outcome of `ops`, named by the row that would settle it.
    fn outcome_unknown(&self, ops: &[WriteOp], source: Error) -> Error {
        let source = match source {
            Error::Transaction { source, .. } => *source,
            other => other,
        };
        let (pk, rk) = ops.first().map_or(("", ""), WriteOp::keys);
        Error::OutcomeUnknown {
            table: self.table.clone(),
            partition_key: pk.to_owned(),
            row_key: rk.to_owned(),
            source: Box::new(source),
        }
    }
}

/// What a read-back says about a write in doubt.
enum Settlement {
    /// Applied: the outcome of each operation (the ETag of each row that
    /// still holds its token).
    Applied(Vec<WriteOutcome>),
    /// Not applied: safe to send again.
    NotApplied,
    /// Nobody can tell.
    Undecided,
}

fn outcome_of(row: Option<&Row>) -> WriteOutcome {
    WriteOutcome {
        etag: row.and_then(|r| r.etag.clone()),
        timestamp: row.and_then(|r| r.timestamp),
    }
}

/// Tables whose writes carry no token: only to measure what the token costs
/// (a write whose answer is lost cannot be settled without it).
#[doc(hidden)]
pub fn without_write_tokens(mut tables: crate::Tables) -> crate::Tables {
    tables.write_tokens = false;
    tables
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::UpdateMode;
    use crate::layout::WRITE_TOKEN_CHARS;

    #[test]
    fn a_token_is_fresh_and_of_the_documented_size() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), WRITE_TOKEN_CHARS);
        let mut row = Row::new("p", "r");
        reserve_token(&mut row);
        assert_eq!(token_of(&row).map(str::len), Some(WRITE_TOKEN_CHARS));
        let sent = row.clone();
        assert!(holds(&row, &sent));
        reserve_token(&mut row);
        assert!(!holds(&row, &sent), "another write's token");
    }

    #[test]
    fn a_request_without_a_token_gets_one_on_its_first_row() {
        let mut with = Row::new("p", "a");
        reserve_token(&mut with);
        let mut ops = vec![
            WriteOp::Insert(with),
            WriteOp::Upsert {
                row: Row::new("p", "a~0001"),
                mode: UpdateMode::Replace,
            },
        ];
        let before = token_of(ops[0].row().unwrap()).map(str::to_owned);
        assert!(stamp(&mut ops));
        assert_eq!(token_of(ops[0].row().unwrap()).map(str::to_owned), before, "kept");
        assert!(
            ops[1].row().unwrap().get(WRITE_TOKEN).is_none(),
            "a continuation row carries none"
        );

        let mut merge = vec![WriteOp::Update {
            row: Row::new("p", "a"),
            mode: UpdateMode::Merge,
            condition: IfMatch::Any,
        }];
        assert!(stamp(&mut merge));
        assert!(token_of(merge[0].row().unwrap()).is_some());
        let mut deletes = vec![WriteOp::Delete {
            partition_key: "p".into(),
            row_key: "a".into(),
            condition: IfMatch::Any,
        }];
        assert!(!stamp(&mut deletes));
    }

    #[test]
    fn answers_are_classified_by_what_they_say_about_the_attempt() {
        let busy = Error::service(503, "ServerBusy", "busy");
        let timed_out = Error::service(500, "OperationTimedOut", "timed out");
        assert_eq!(answer(&busy), Answer::NotProcessed);
        assert_eq!(
            answer(&Error::service(429, "TooManyRequests", "slow down")),
            Answer::NotProcessed
        );
        assert_eq!(answer(&timed_out), Answer::InDoubt);
        assert_eq!(answer(&Error::transport("reset")), Answer::InDoubt);
        assert_eq!(answer(&Error::service(409, "EntityAlreadyExists", "")), Answer::Refused);
        assert_eq!(
            answer(&Error::service(412, "UpdateConditionNotSatisfied", "")),
            Answer::Refused
        );
        assert_eq!(answer(&Error::service(404, "ResourceNotFound", "")), Answer::Refused);
        assert_eq!(answer(&Error::service(404, "TableNotFound", "")), Answer::Failed);
        assert_eq!(answer(&Error::service(400, "InvalidInput", "")), Answer::Failed);
        let in_tx = Error::Transaction {
            index: 1,
            source: Box::new(Error::service(409, "EntityAlreadyExists", "")),
        };
        assert_eq!(answer(&in_tx), Answer::Refused);
    }
}
