//! The backend of one case: faults one write request of the writer under
//! test and lets another actor act right after one of its requests is
//! answered. Only the writer's own requests (those made inside
//! [`Script::run`]) are counted and faulted; its background tasks (the
//! applier of its intents) and every other actor pass straight through.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use unified_tables::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use unified_tables::{Error, Result, Row};

use crate::scenarios::exactly_once::{lost, timed_out};

tokio::task_local! {
    static OURS: bool;
}

/// How one write request of the writer goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Applied, then the answer is lost.
    Lost,
    /// Answered 500 `OperationTimedOut` now, applied after the writer's next request is answered.
    Late,
    /// Refused without being applied (503 `ServerBusy`).
    Refused,
}

impl Fault {
    /// Every fault.
    pub const ALL: [Fault; 3] = [Fault::Lost, Fault::Late, Fault::Refused];

    /// A short name for the printed matrix.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Lost => "lost",
            Fault::Late => "late",
            Fault::Refused => "refused",
        }
    }
}

/// The other actor's turn: run once, right after the writer's request it is armed for.
pub type Turn = Pin<Box<dyn Future<Output = ()> + Send>>;

#[derive(Default)]
struct Plan {
    /// The writer's requests so far, and its write requests.
    requests: usize,
    writes: usize,
    fault: Option<(usize, Fault)>,
    fired: bool,
    act_after: usize,
    turn: Option<Turn>,
    acted: bool,
    /// A late write: its table, operations and whether it was a transaction.
    held: Option<(String, Vec<WriteOp>, bool)>,
}

/// The decorator (see the module docs).
#[derive(Clone)]
pub struct Script<B> {
    inner: B,
    plan: Arc<Mutex<Plan>>,
}

impl<B> std::fmt::Debug for Script<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Script")
    }
}

/// What the case saw of the script.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// The planned fault fired.
    pub fired: bool,
    /// The other actor acted.
    pub acted: bool,
}

impl<B: Backend> Script<B> {
    /// Wraps `inner` with nothing planned.
    pub fn new(inner: B) -> Self {
        Script {
            inner,
            plan: Arc::new(Mutex::new(Plan::default())),
        }
    }

    /// Plans a case: `fault` on the writer's write request of that index,
    /// and `turn` right after the writer's request `act_after` is answered.
    pub fn arm(&self, fault: Option<(usize, Fault)>, act_after: usize, turn: Turn) {
        *self.plan.lock().expect("plan") = Plan {
            fault,
            act_after,
            turn: Some(turn),
            ..Plan::default()
        };
    }

    /// Runs the writer's call: its requests are the ones counted.
    pub async fn run<F: Future>(&self, call: F) -> F::Output {
        OURS.scope(true, call).await
    }

    /// Lands a late write still held, and says what the case saw.
    pub async fn finish(&self) -> Seen {
        self.land().await;
        let plan = self.plan.lock().expect("plan");
        Seen {
            fired: plan.fired,
            acted: plan.acted,
        }
    }

    /// Lands a late write still held now (time has passed: a write sent
    /// before has landed by now, or never will).
    pub async fn land(&self) {
        let held = self.plan.lock().expect("plan").held.take();
        if let Some((table, ops, transaction)) = held {
            let _ = self.apply(&table, ops, transaction).await;
        }
    }

    async fn apply(&self, table: &str, mut ops: Vec<WriteOp>, transaction: bool) -> Result<Vec<WriteOutcome>> {
        match transaction {
            false => self.inner.execute(table, ops.swap_remove(0)).await.map(|o| vec![o]),
            true => self.inner.transaction(table, ops).await,
        }
    }

    fn ours() -> bool {
        OURS.try_with(|o| *o).unwrap_or(false)
    }

    /// After one of the writer's requests was answered: a late write lands,
    /// then the other actor takes its turn if it is armed for this request.
    async fn after(&self, held_before: bool) {
        if held_before {
            self.land().await;
        }
        let turn = {
            let mut plan = self.plan.lock().expect("plan");
            let n = plan.requests;
            plan.requests += 1;
            match n == plan.act_after {
                true => {
                    plan.acted = true;
                    plan.turn.take()
                }
                false => None,
            }
        };
        if let Some(turn) = turn {
            // Not a request of the writer's: the actor's own pass straight through.
            OURS.scope(false, turn).await;
        }
    }

    async fn read<R>(&self, request: impl Future<Output = Result<R>>) -> Result<R> {
        if !Self::ours() {
            return request.await;
        }
        let held_before = self.plan.lock().expect("plan").held.is_some();
        let answer = request.await;
        self.after(held_before).await;
        answer
    }

    async fn write(&self, table: &str, ops: Vec<WriteOp>, transaction: bool) -> Result<Vec<WriteOutcome>> {
        if !Self::ours() {
            return self.apply(table, ops, transaction).await;
        }
        let (fault, held_before) = {
            let mut plan = self.plan.lock().expect("plan");
            let w = plan.writes;
            plan.writes += 1;
            let fault = match plan.fault {
                Some((at, fault)) if at == w => {
                    plan.fired = true;
                    Some(fault)
                }
                _ => None,
            };
            (fault, plan.held.is_some())
        };
        let answer = match fault {
            None => self.apply(table, ops, transaction).await,
            Some(Fault::Lost) => {
                let _ = self.apply(table, ops, transaction).await;
                Err(lost())
            }
            Some(Fault::Late) => {
                self.plan.lock().expect("plan").held = Some((table.to_owned(), ops, transaction));
                Err(timed_out())
            }
            Some(Fault::Refused) => Err(Error::service(503, "ServerBusy", "The server is busy.")),
        };
        self.after(held_before).await;
        answer
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for Script<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.inner.create_table(table).await
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        self.inner.delete_table(table).await
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        self.read(self.inner.get(table, partition_key, row_key)).await
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.write(table, vec![op], false).await.map(|mut o| o.swap_remove(0))
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        self.write(table, ops, true).await
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        self.read(self.inner.query(table, request, token)).await
    }

    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        self.read(self.inner.query_body(table, request, token)).await
    }
    fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.inner.profile()
    }
}
