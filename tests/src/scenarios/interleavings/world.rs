//! The world of one interleaving: the store's backend with a planned fault,
//! and another writer who acts on a row right after the store's first write
//! request is answered (or not).

use std::sync::{Arc, Mutex};

use unified_tables::backend::counting::CountingBackend;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::{
    Backend, IfMatch, Page, PageAnswer, PageToken, QueryRequest, UpdateMode, WriteOp, WriteOutcome,
};
use unified_tables::layout::WRITE_TOKEN;
use unified_tables::{ETag, ErrorKind, Row, Value};

use super::model::{cells_of, Model};
use crate::model::Customer;
use crate::scenarios::exactly_once::{lost, timed_out};

/// The env's backend, as the other writer and the checks see it.
pub type Raw = CountingBackend<Arc<dyn Backend>>;

/// What another writer does to the row between our write and our read-back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Other {
    /// Nothing.
    Nothing,
    /// Inserts its own row (refused when one is there).
    Create,
    /// Replaces the row (or inserts it) with its own, carrying its own token.
    ReplaceWithToken,
    /// Replaces the row (or inserts it) with its own, carrying no token (a
    /// client that writes none).
    ReplaceWithoutToken,
    /// Merges one column into the row (`If-Match: *`; refused when absent),
    /// keeping every other cell, our token included: what Azure.Data.Tables'
    /// `UpdateEntity` does by default.
    MergeKeepingToken,
    /// Deletes the row (`If-Match: *`; refused when absent).
    Delete,
}

impl Other {
    /// Every action.
    pub const ALL: [Other; 6] = [
        Other::Nothing,
        Other::Create,
        Other::ReplaceWithToken,
        Other::ReplaceWithoutToken,
        Other::MergeKeepingToken,
        Other::Delete,
    ];

    /// A short name for the printed matrix.
    pub fn name(self) -> &'static str {
        match self {
            Other::Nothing => "nothing",
            Other::Create => "create",
            Other::ReplaceWithToken => "replace+token",
            Other::ReplaceWithoutToken => "replace-token",
            Other::MergeKeepingToken => "merge",
            Other::Delete => "delete",
        }
    }

    /// The other writer's row.
    fn row(self, pk: &str, rk: &str) -> Row {
        let theirs = Customer {
            visits: 100,
            ..Customer::new(pk, rk, "theirs")
        };
        let mut row = Row::new(pk, rk);
        row.insert("Name", Value::String(theirs.name));
        row.insert("Visits", Value::Int64(i64::from(theirs.visits)));
        if self == Other::ReplaceWithToken {
            row.insert(WRITE_TOKEN, Value::String("another-writers-token0".into()));
        }
        row
    }

    /// Does it on `raw`: its error's kind when refused.
    async fn act(self, raw: &Raw, table: &str, pk: &str, rk: &str) -> Result<(), ErrorKind> {
        let op = match self {
            Other::Nothing => return Ok(()),
            Other::Create => WriteOp::Insert(self.row(pk, rk)),
            Other::ReplaceWithToken | Other::ReplaceWithoutToken => WriteOp::Upsert {
                row: self.row(pk, rk),
                mode: UpdateMode::Replace,
            },
            Other::MergeKeepingToken => WriteOp::Update {
                row: Row::new(pk, rk).with("Name", Value::String("merged".into())),
                mode: UpdateMode::Merge,
                condition: IfMatch::Any,
            },
            Other::Delete => WriteOp::Delete {
                partition_key: pk.to_owned(),
                row_key: rk.to_owned(),
                condition: IfMatch::Any,
            },
        };
        raw.execute(table, op).await.map(|_| ()).map_err(|e| e.kind())
    }

    /// What it does to the model: `Err` with the kind the service refuses it with.
    pub fn apply(self, model: &mut Model, rk: &str) -> Result<(), ErrorKind> {
        match self {
            Other::Nothing => Ok(()),
            Other::Create if model.contains(rk) => Err(ErrorKind::AlreadyExists),
            Other::Create | Other::ReplaceWithToken | Other::ReplaceWithoutToken => {
                model.put(rk, cells_of(&self.row("", rk)));
                Ok(())
            }
            Other::MergeKeepingToken | Other::Delete if !model.contains(rk) => Err(ErrorKind::NotFound),
            Other::MergeKeepingToken => {
                model.merge(rk, [("Name", Value::String("merged".into()))]);
                Ok(())
            }
            Other::Delete => {
                model.remove(rk);
                Ok(())
            }
        }
    }
}

/// How the answer to our write goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doubt {
    /// Applied, then the answer is lost (a connection reset); the other
    /// writer acts after ours landed.
    Lost,
    /// Answered 500 `OperationTimedOut` before it is applied; the other
    /// writer acts, our read-back is answered, then ours lands. The store
    /// may try `attempts` times in all.
    Late {
        /// The retry policy's attempts.
        attempts: u32,
    },
}

impl Doubt {
    /// Every kind of doubt the matrix runs.
    pub const ALL: [Doubt; 3] = [Doubt::Lost, Doubt::Late { attempts: 1 }, Doubt::Late { attempts: 4 }];

    /// A short name for the printed matrix.
    pub fn name(self) -> String {
        match self {
            Doubt::Lost => "lost".into(),
            Doubt::Late { attempts } => format!("late/{attempts}"),
        }
    }

    /// The retry policy's attempts.
    pub fn attempts(self) -> u32 {
        match self {
            Doubt::Lost => 4,
            Doubt::Late { attempts } => attempts,
        }
    }

    /// Plans the fault on `faulty` for the next request of `target`.
    pub fn plan<B>(self, faulty: &FaultyBackend<B>, target: FaultTarget) {
        match self {
            Doubt::Lost => faulty.fail_next(target, FaultTiming::After, lost),
            Doubt::Late { .. } => faulty.fail_next(target, FaultTiming::Late, timed_out),
        }
    }
}

/// What the rows written by our first request showed right after the other
/// writer acted: the evidence a read-back had.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// A row holds a token our request carried.
    pub token_held: bool,
    /// A row written on condition of a version still has that version.
    pub pinned: bool,
    /// The request deletes only, and every row is gone.
    pub deletes_gone: bool,
}

/// What happened around our first write request.
#[derive(Debug, Default)]
pub struct Log {
    /// The other writer's action was taken.
    pub acted: bool,
    /// What the other writer's action got.
    pub other: Option<Result<(), ErrorKind>>,
    /// The evidence after it.
    pub evidence: Evidence,
    /// Versions our requests were answered with.
    pub ours: Vec<ETag>,
}

/// A backend between the store and the faulty backend: after the store's
/// first write request is answered, the other writer acts on `(pk, rk)`,
/// straight on the raw backend (so a held write does not land for it).
#[derive(Debug, Clone)]
pub struct Interleave {
    inner: FaultyBackend<Raw>,
    raw: Raw,
    plan: Arc<Mutex<Option<(Other, String, String)>>>,
    log: Arc<Mutex<Log>>,
}

impl Interleave {
    /// Over `faulty`, whose wrapped backend is `raw`.
    pub fn new(faulty: FaultyBackend<Raw>, raw: Raw) -> Interleave {
        Interleave {
            inner: faulty,
            raw,
            plan: Arc::default(),
            log: Arc::default(),
        }
    }

    /// Arms the other writer for the next write request.
    pub fn arm(&self, other: Other, pk: &str, rk: &str) {
        *self.plan.lock().unwrap() = Some((other, pk.to_owned(), rk.to_owned()));
        *self.log.lock().unwrap() = Log::default();
    }

    /// What happened since [`Interleave::arm`].
    pub fn take_log(&self) -> Log {
        std::mem::take(&mut *self.log.lock().unwrap())
    }

    /// Notes versions a request was answered with; after the first write
    /// request, lets the other writer act and reads the evidence.
    async fn after_write(&self, table: &str, ops: &[WriteOp], answer: &unified_tables::Result<Vec<WriteOutcome>>) {
        if let Ok(outcomes) = answer {
            let mut log = self.log.lock().unwrap();
            log.ours.extend(outcomes.iter().filter_map(|o| o.etag.clone()));
        }
        let plan = self.plan.lock().unwrap().take();
        let Some((other, pk, rk)) = plan else { return };
        let got = other.act(&self.raw, table, &pk, &rk).await;
        let mut evidence = Evidence::default();
        let mut all_gone = true;
        for op in ops {
            let (pk, rk) = op.keys();
            let stored = self.raw.get(table, pk, rk).await.expect("a read of the evidence");
            all_gone &= stored.is_none();
            let token = op.row().and_then(|r| r.get(WRITE_TOKEN));
            if token.is_some() && stored.as_ref().and_then(|r| r.get(WRITE_TOKEN)) == token {
                evidence.token_held = true;
            }
            let version = match op {
                WriteOp::Update {
                    condition: IfMatch::ETag(v),
                    ..
                }
                | WriteOp::Delete {
                    condition: IfMatch::ETag(v),
                    ..
                } => Some(v),
                _ => None,
            };
            if version.is_some() && stored.as_ref().and_then(|r| r.etag.as_ref()) == version {
                evidence.pinned = true;
            }
        }
        evidence.deletes_gone = all_gone && ops.iter().all(|op| op.row().is_none());
        let mut log = self.log.lock().unwrap();
        log.acted = true;
        log.other = Some(got);
        log.evidence = evidence;
    }
}

#[async_trait::async_trait]
#[deny(clippy::missing_trait_methods)]
impl Backend for Interleave {
    async fn create_table(&self, table: &str) -> unified_tables::Result<()> {
        self.inner.create_table(table).await
    }
    async fn delete_table(&self, table: &str) -> unified_tables::Result<()> {
        self.inner.delete_table(table).await
    }
    async fn get(&self, table: &str, pk: &str, rk: &str) -> unified_tables::Result<Option<Row>> {
        self.inner.get(table, pk, rk).await
    }
    async fn execute(&self, table: &str, op: WriteOp) -> unified_tables::Result<WriteOutcome> {
        let ops = [op.clone()];
        let answer = self.inner.execute(table, op).await.map(|o| vec![o]);
        self.after_write(table, &ops, &answer).await;
        answer.map(|mut o| o.swap_remove(0))
    }
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> unified_tables::Result<Vec<WriteOutcome>> {
        let sent = ops.clone();
        let answer = self.inner.transaction(table, ops).await;
        self.after_write(table, &sent, &answer).await;
        answer
    }
    async fn query(
        &self,
        table: &str,
        request: &QueryRequest,
        token: Option<&PageToken>,
    ) -> unified_tables::Result<Page> {
        self.inner.query(table, request, token).await
    }
    async fn query_body(
        &self,
        table: &str,
        request: &QueryRequest,
        token: Option<&PageToken>,
    ) -> unified_tables::Result<PageAnswer> {
        self.inner.query_body(table, request, token).await
    }
    fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.inner.profile()
    }
}
