//! Exactly once under ambiguous answers: the write token, the store's
//! retries of a write, and the read-back that settles a write whose answer
//! was lost.
//!
//! The rule: **a resend never undoes another writer's acknowledged write,
//! and a version reported to the caller is one this call wrote.** When the
//! stored rows cannot prove which way a write went, the answer is
//! [`Error::OutcomeUnknown`], never a resend and never a guess.
//!
//! Every main row the store writes carries a fresh token in its
//! [`WRITE_TOKEN`] cell ([`Store::reserve_token`], called by [`Store::commit`]
//! for the rows a write names, or earlier by an entity's planning path), unless the row has no
//! room left for it (the service's 252 properties), or by
//! [`Store::exchange_ops`] into the first row of a request that has none. One
//! request is tried as the store's [`RetryPolicy`](crate::RetryPolicy)
//! allows, on every backend:
//!
//! - an answer that says "not processed" (503 `ServerBusy`, 429, or a
//!   connection that could not be made) is tried again after the policy's
//!   backoff;
//! - an answer that leaves the outcome open (no answer, a timeout, an answer
//!   that cannot be read, another 5xx such as 500 `OperationTimedOut`) is
//!   settled by reading back the rows the request wrote ([`Evidence`]);
//! - a refusal of an attempt sent after one left in doubt (409, 412, 404)
//!   may be the echo of that earlier attempt: it is settled the same way;
//! - a failure of an attempt after one left in doubt is settled the same
//!   way too: when the rows prove nothing applied yet, a refusal of the
//!   service (400) is the answer the earlier attempt got as well, and is
//!   returned; a refusal made before the attempt was sent (the fence of a
//!   pool, see [`Error::was_sent`]) says nothing of the earlier attempt,
//!   which may still land: [`Error::OutcomeUnknown`].
//!
//! What the read-back proves:
//!
//! - **applied** when a row holds a token this request carried (a
//!   transaction is atomic: one such row settles all of it), or when a
//!   request of deletes only finds every row gone (as the caller wanted,
//!   whoever removed them). The ETag of a row is reported only when the row
//!   is exactly what the request wrote: a merge by another client keeps the
//!   token but makes the row someone else's version, and a merge of ours
//!   cannot tell the columns it did not send from another writer's, so a
//!   merge settled by a read-back reports no ETag;
//! - **not applied yet** when a row written on condition of a version still
//!   has that version: sending the request again is safe, since at most one
//!   attempt can match that version, however late an earlier one lands;
//! - **nothing** otherwise: the row is absent (an insert that landed may
//!   have been deleted by another writer since), or holds another writer's
//!   version (a write that landed may have been replaced since), or holds a
//!   row we deleted anew. Sending again could undo that writer's
//!   acknowledged write, so the write is [`Error::OutcomeUnknown`].
//!
//! A write that was sent and is not proven applied when the policy's
//! attempts or retry budget run out is [`Error::OutcomeUnknown`] too: an
//! earlier attempt may still land (Azure documents 500
//! `OperationTimedOut` as "may still complete"). A read-back that fails is
//! tried again, never the write.

use std::time::Instant;

use base64::Engine as _;
use rand::RngCore as _;

use crate::backend::{IfMatch, UpdateMode, WriteOp, WriteOutcome};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::WRITE_TOKEN;
use crate::service::{check_row_limits, MAX_PROPERTIES};
use crate::store::Store;
use crate::telemetry;
use crate::value::{ColumnName, Row, Value};

/// A fresh write token: 16 random bytes, URL-safe base64 without padding.
pub(crate) fn new_token() -> String {
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Gives `row` a fresh token when it has room for one (fewer than the
/// service's 252 properties), before the checks of the service's limits so
/// they count it. Every send of the row is settled before the next one, so
/// the sends of one write may share it.
fn put_token(row: &mut Row) -> bool {
    let room = row.properties.len() < MAX_PROPERTIES;
    if room {
        row.insert(ColumnName::from_static(WRITE_TOKEN), Value::String(new_token()));
    }
    room
}

/// Gives the first row of `ops` with room for one a fresh token, when no
/// row has one.
fn stamp(ops: &mut [WriteOp]) {
    if ops.iter().any(|op| token_in(op).is_some()) {
        return;
    }
    if let Some(row) = ops
        .iter_mut()
        .filter_map(row_mut)
        .find(|r| r.properties.len() < MAX_PROPERTIES)
    {
        put_token(row);
    }
}

/// The row an operation writes (none for a delete).
pub(super) fn row_mut(op: &mut WriteOp) -> Option<&mut Row> {
    match op {
        WriteOp::Insert(row) | WriteOp::Update { row, .. } | WriteOp::Upsert { row, .. } => Some(row),
        WriteOp::Delete { .. } => None,
    }
}

/// Removes the tokens the store put in `ops`: for a row the service found
/// over its property limit only because of one.
fn strip_tokens(ops: &mut [WriteOp]) -> bool {
    let mut stripped = false;
    for row in ops.iter_mut().filter_map(row_mut) {
        stripped |= row.properties.remove(WRITE_TOKEN).is_some();
    }
    stripped
}

/// The token a row carries.
fn token_of(row: &Row) -> Option<&str> {
    match row.get(WRITE_TOKEN) {
        Some(Value::String(t)) => Some(t),
        _ => None,
    }
}

/// The token the row of `op` carries.
fn token_in(op: &WriteOp) -> Option<&str> {
    op.row().and_then(token_of)
}

/// The version `op` is written on condition of.
fn pinned_version(op: &WriteOp) -> Option<&crate::value::ETag> {
    match op {
        WriteOp::Update {
            condition: IfMatch::ETag(v),
            ..
        }
        | WriteOp::Delete {
            condition: IfMatch::ETag(v),
            ..
        } => Some(v),
        _ => None,
    }
}

/// Whether `stored` is exactly the row `op` wrote: a replace's cells, all
/// of them and nothing else. A merge's row also holds cells it did not
/// send, which another writer's merge may have changed: never exactly ours.
fn is_exactly(op: &WriteOp, stored: &Row) -> bool {
    let sent = match op {
        WriteOp::Insert(row)
        | WriteOp::Update {
            row,
            mode: UpdateMode::Replace,
            ..
        }
        | WriteOp::Upsert {
            row,
            mode: UpdateMode::Replace,
        } => row,
        _ => return false,
    };
    sent.properties.len() == stored.properties.len()
        && sent
            .properties
            .iter()
            .all(|(name, value)| stored.properties.get(name).is_some_and(|s| same_value(s, value)))
}

/// Cell equality, with any NaN equal to any NaN (the service stores NaN as `"NaN"`).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Double(x), Value::Double(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

/// What an error answer says about the attempt that got it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Not processed (503 `ServerBusy`, 429, a connection never made): safe to send again.
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
        ErrorKind::Unavailable if !error.was_sent() => Answer::NotProcessed,
        ErrorKind::Unavailable | ErrorKind::MalformedResponse | ErrorKind::OutcomeUnknown => Answer::InDoubt,
        ErrorKind::NotFound if error.service_code().is_some_and(|(_, code)| code == "TableNotFound") => Answer::Failed,
        ErrorKind::NotFound | ErrorKind::AlreadyExists | ErrorKind::UniqueViolation | ErrorKind::PreconditionFailed => {
            Answer::Refused
        }
        _ => Answer::Failed,
    }
}

/// Whether the service refused a row for its property count.
fn too_many_properties(error: &Error) -> bool {
    error
        .service_code()
        .is_some_and(|(status, code)| status == 400 && code == "TooManyProperties")
}

/// What the stored rows prove about a request in doubt.
#[derive(Debug)]
enum Evidence {
    /// Applied: the outcome of each operation (an ETag only for a row that
    /// is exactly what it wrote).
    Applied(Vec<WriteOutcome>),
    /// Not applied so far: a row written on condition of a version still has it.
    NotYet,
    /// Nothing: another writer's version, or no row, where ours may have been.
    Nothing,
}

impl Evidence {
    fn name(&self) -> &'static str {
        match self {
            Evidence::Applied(_) => "applied",
            Evidence::NotYet => "not_applied_yet",
            Evidence::Nothing => "undecided",
        }
    }
}

impl<T> Store<T> {
    /// Gives `row` a fresh write token, unless it has one, the store writes
    /// none (the type says `#[table(no_write_token)]`, or the handle
    /// measures what a token costs) or the row has no room for it. Returns
    /// whether it gave one. The one reservation of a token: called by
    /// [`Store::commit`] for the rows a write names, and by the planning
    /// paths of the write module before they plan a row.
    pub(super) fn reserve_token(&self, row: &mut Row) -> bool {
        self.write_tokens && token_of(row).is_none() && put_token(row)
    }

    /// Checks the service's limits on a row a verb built, counting the cell
    /// of the write token [`Store::commit`] will give it, so that a row
    /// refused for its size is refused before anything is sent. The row is
    /// left as it was.
    pub(crate) fn check_limits_with_token(&self, row: &mut Row) -> Result<()> {
        let added = self.reserve_token(row);
        let checked = check_row_limits(row);
        if added {
            row.properties.remove(WRITE_TOKEN);
        }
        checked
    }

    /// One request (one operation, or one transaction of several) with its
    /// token, its retries and its read-backs; see the module docs.
    pub(super) async fn exchange_ops(
        &self,
        mut ops: Vec<WriteOp>,
        deadline: Option<Instant>,
    ) -> Result<Vec<WriteOutcome>> {
        let policy = self.shared.retry;
        if self.write_tokens {
            stamp(&mut ops);
        }
        let started = Instant::now();
        let mut failures = 0u32;
        // The first answer that left an attempt in doubt: from then on the
        // request may be stored, whatever later answers say.
        let mut doubt: Option<Error> = None;
        loop {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                tracing::debug!(table = %self.table, "a write is due past its deadline; not sent");
                return Err(match doubt {
                    Some(earlier) => self.outcome_unknown(&ops, earlier),
                    None => {
                        let (pk, rk) = ops.first().map_or(("", ""), WriteOp::keys);
                        Error::conflict(&self.table, &crate::value::Key::new(pk, rk))
                    }
                });
            }
            let error = match self.request(&ops).await {
                Ok(outcomes) => return Ok(outcomes),
                Err(e) => e,
            };
            let said = answer(&error);
            // A failure of this attempt for what the request is (not for the row).
            let mut failed = None;
            match (said, doubt.is_some()) {
                (Answer::NotProcessed, _) => {
                    failures += 1;
                    if let Some(pause) = policy.pause_after(&error, failures, started.elapsed()) {
                        tracing::debug!(name: telemetry::NOT_PROCESSED, target: telemetry::DECISION_TARGET, backoff_ms = pause.as_millis() as u64, error.type = telemetry::error_type(&error), "the service did not process a write; sending it again");
                        telemetry::retry("not_processed");
                        tokio::time::sleep(pause).await;
                        continue;
                    }
                    // An earlier attempt in doubt may still land.
                    return Err(match doubt {
                        Some(earlier) => self.outcome_unknown(&ops, earlier),
                        None => error,
                    });
                }
                (Answer::Failed, false) if too_many_properties(&error) && strip_tokens(&mut ops) => {
                    // A merge into a stored row at the property limit: refused,
                    // so nothing was applied; sent again without the token.
                    tracing::debug!(table = %self.table, "a row at the property limit has no room for a write token; sending it without one");
                    continue;
                }
                (Answer::Refused | Answer::Failed, false) => return Err(error),
                (Answer::InDoubt, _) => {
                    failures += 1;
                    doubt.get_or_insert(error);
                }
                // A refusal after an attempt in doubt: maybe that attempt's echo.
                (Answer::Refused, true) => {}
                (Answer::Failed, true) => failed = Some(error),
            }
            // Refused before it was sent (a pool's fence, a check of the
            // client's): it says nothing of the attempt in doubt, which may
            // still land.
            let unsent = failed.as_ref().is_some_and(|e| !e.was_sent());
            let evidence = loop {
                match self.read_back(&ops).await {
                    Ok(evidence) => break Some(evidence),
                    Err(read_error) => {
                        failures += 1;
                        tracing::debug!(name: telemetry::SETTLE_READ_BACK, target: telemetry::DECISION_TARGET, verdict = "unreadable", error.type = telemetry::error_type(&read_error), "cannot read back a write whose answer was lost");
                        telemetry::settle_read_back("unreadable");
                        match policy.pause_after(&read_error, failures, started.elapsed()) {
                            Some(pause) => tokio::time::sleep(pause).await,
                            None => break None,
                        }
                    }
                }
            };
            let mut earlier = || doubt.take().unwrap_or_else(|| unreachable!("a write in doubt"));
            let Some(evidence) = evidence else {
                tracing::warn!(table = %self.table, "a write whose answer was lost could not be read back within the retry policy");
                return Err(self.outcome_unknown(&ops, earlier()));
            };
            tracing::debug!(name: telemetry::SETTLE_READ_BACK, target: telemetry::DECISION_TARGET, verdict = evidence.name(), "a write whose answer was lost was read back");
            telemetry::settle_read_back(evidence.name());
            match evidence {
                Evidence::Applied(outcomes) => return Ok(outcomes),
                Evidence::Nothing => {
                    tracing::warn!(table = %self.table, "a write whose answer was lost finds no row of its own: whether it landed cannot be told");
                    return Err(self.outcome_unknown(&ops, earlier()));
                }
                // Not landed yet, and not sent again: the attempt in doubt may still land.
                Evidence::NotYet if unsent => {
                    tracing::warn!(table = %self.table, "a write whose answer was lost has not landed, and its next attempt was refused before it was sent: it may still land");
                    return Err(self.outcome_unknown(&ops, earlier()));
                }
                // The same request refused for what it is, not for the row: an
                // earlier attempt of it was refused the same way.
                Evidence::NotYet if failed.is_some() => return Err(failed.unwrap_or_else(earlier)),
                Evidence::NotYet => match policy.next_delay(failures, started.elapsed()) {
                    Some(pause) => {
                        tracing::debug!(target: telemetry::DECISION_TARGET, backoff_ms = pause.as_millis() as u64, "a conditional write whose answer was lost has not landed; sending it again");
                        telemetry::retry("not_applied_yet");
                        tokio::time::sleep(pause).await;
                    }
                    // Not landed yet, and it still may.
                    None => return Err(self.outcome_unknown(&ops, earlier())),
                },
            }
        }
    }

    /// Sends `ops` once: one operation alone, several as a transaction.
    async fn request(&self, ops: &[WriteOp]) -> Result<Vec<WriteOutcome>> {
        match ops {
            [op] => self
                .shared
                .backend
                .execute(&self.table, op.clone())
                .await
                .map(|o| vec![o]),
            _ => self.shared.backend.transaction(&self.table, ops.to_vec()).await,
        }
    }

    /// Reads back the rows that can settle `ops` (see [`Evidence`]): the
    /// rows carrying a token, in order, until one holds it; the rows written
    /// on condition of a version; for deletes only, every row.
    async fn read_back(&self, ops: &[WriteOp]) -> Result<Evidence> {
        let mut stored: Vec<Option<Option<Row>>> = vec![None; ops.len()];
        for (i, op) in ops.iter().enumerate() {
            let Some(token) = token_in(op) else { continue };
            let row = self.read_row(op).await?;
            let holds = row.as_ref().is_some_and(|r| token_of(r) == Some(token));
            stored[i] = Some(row);
            if holds {
                return Ok(Evidence::Applied(self.outcomes_proven(ops, &mut stored, i).await?));
            }
        }
        for (i, op) in ops.iter().enumerate() {
            let Some(version) = pinned_version(op) else { continue };
            if stored[i].is_none() {
                stored[i] = Some(self.read_row(op).await?);
            }
            if stored[i]
                .as_ref()
                .and_then(|r| r.as_ref())
                .and_then(|r| r.etag.as_ref())
                == Some(version)
            {
                return Ok(Evidence::NotYet);
            }
        }
        if ops.iter().all(|op| op.row().is_none()) {
            for (i, op) in ops.iter().enumerate() {
                if stored[i].is_none() {
                    stored[i] = Some(self.read_row(op).await?);
                }
                if stored[i].as_ref().is_some_and(Option::is_some) {
                    return Ok(Evidence::Nothing);
                }
            }
            return Ok(Evidence::Applied(vec![WriteOutcome::default(); ops.len()]));
        }
        Ok(Evidence::Nothing)
    }

    /// The outcomes of a request proven applied by the row of `ops[proof]`:
    /// the first operation's (the one callers read) and the proof's, each
    /// with its row's version when the row is exactly what it wrote.
    async fn outcomes_proven(
        &self,
        ops: &[WriteOp],
        stored: &mut [Option<Option<Row>>],
        proof: usize,
    ) -> Result<Vec<WriteOutcome>> {
        let mut outcomes = vec![WriteOutcome::default(); ops.len()];
        for i in [0, proof] {
            if ops[i].row().is_none() {
                continue;
            }
            if stored[i].is_none() {
                stored[i] = Some(self.read_row(&ops[i]).await?);
            }
            let row = stored[i].as_ref().and_then(Option::as_ref);
            if let Some(row) = row.filter(|r| token_in(&ops[i]).is_some_and(|t| token_of(r) == Some(t))) {
                if is_exactly(&ops[i], row) {
                    outcomes[i] = WriteOutcome {
                        etag: row.etag.clone(),
                        timestamp: row.timestamp,
                    };
                } else {
                    tracing::debug!(table = %self.table, "a write whose answer was lost landed, but its row is no longer exactly what it wrote: no version is reported");
                }
            }
        }
        Ok(outcomes)
    }

    async fn read_row(&self, op: &WriteOp) -> Result<Option<Row>> {
        let (pk, rk) = op.keys();
        self.shared.backend.get(&self.table, pk, rk).await
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::WRITE_TOKEN_CHARS;

    #[test]
    fn a_token_is_fresh_and_of_the_documented_size() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        assert_eq!(a.len(), WRITE_TOKEN_CHARS);
        let mut row = Row::new("p", "r");
        put_token(&mut row);
        assert_eq!(token_of(&row).map(str::len), Some(WRITE_TOKEN_CHARS));
    }

    #[test]
    fn a_row_at_the_property_limit_gets_no_token() {
        let mut row = Row::new("p", "r");
        for i in 0..MAX_PROPERTIES {
            row.insert(format!("C{i}"), Value::Int32(1));
        }
        put_token(&mut row);
        assert!(token_of(&row).is_none());
        row.properties.remove("C0");
        put_token(&mut row);
        assert!(token_of(&row).is_some(), "251 cells and the token");
    }

    #[test]
    fn a_request_without_a_token_gets_one_on_its_first_row() {
        let mut with = Row::new("p", "a");
        put_token(&mut with);
        let mut ops = vec![
            WriteOp::Insert(with),
            WriteOp::Upsert {
                row: Row::new("p", "a~0001"),
                mode: UpdateMode::Replace,
            },
        ];
        let before = token_in(&ops[0]).map(str::to_owned);
        stamp(&mut ops);
        assert_eq!(token_in(&ops[0]).map(str::to_owned), before, "kept");
        assert!(
            ops[1].row().unwrap().get(WRITE_TOKEN).is_none(),
            "a continuation row carries none"
        );

        let mut merge = vec![WriteOp::Update {
            row: Row::new("p", "a"),
            mode: UpdateMode::Merge,
            condition: IfMatch::Any,
        }];
        stamp(&mut merge);
        assert!(token_in(&merge[0]).is_some());
        assert!(strip_tokens(&mut merge));
        assert!(token_in(&merge[0]).is_none());
    }

    #[test]
    fn only_a_replace_whose_cells_are_all_there_is_exactly_ours() {
        let mut sent = Row::new("p", "a");
        sent.insert("A", Value::Int32(1));
        sent.insert("N", Value::Double(f64::NAN));
        let mut stored = sent.clone();
        let upsert = WriteOp::Upsert {
            row: sent.clone(),
            mode: UpdateMode::Replace,
        };
        assert!(is_exactly(&upsert, &stored));
        stored.insert("B", Value::Int32(2));
        assert!(!is_exactly(&upsert, &stored), "another writer's merge added a cell");
        stored.properties.remove("B");
        stored.insert("A", Value::Int32(3));
        assert!(!is_exactly(&upsert, &stored), "another writer's merge changed a cell");
        let merge = WriteOp::Update {
            row: sent.clone(),
            mode: UpdateMode::Merge,
            condition: IfMatch::Any,
        };
        assert!(!is_exactly(&merge, &sent), "a merge's row is never known whole");
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
        assert_eq!(answer(&Error::unreachable("connection refused")), Answer::NotProcessed);
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
