//! Differential test of secondary indexes under crashes: random writes of
//! an entity with every kind of index, over small value domains (so unique
//! values collide), each write through a handle that may die between any
//! two of its requests (every request after the crash point fails, not
//! sent, or sent with its answer lost). After the sequence the operator's
//! job and a repair run, and the index rows must be exactly the rows the
//! model rebuilds from the entities (0 divergent rows), every unique value
//! must have one holder, and every lookup must answer what the entities hold.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use proptest::prelude::*;
use unified_tables::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use unified_tables::IndexCheckOptions;
use unified_tables::{ETag, Error, Result, Row, Store, StoreOptions, TableEntity, Tables};

use crate::index_model::{all_rows, divergence};
use crate::Env;

/// An entity with a local unique, a local, a global and a global unique index.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Indexed {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    #[unique]
    pub code: i64,
    #[index(project(note))]
    pub color: String,
    #[index(global)]
    pub shape: String,
    #[unique(global, protocol = "reserve")]
    pub handle: Option<String>,
    pub note: String,
    #[table(etag)]
    pub etag: Option<ETag>,
}

const PKS: [&str; 2] = ["a", "b"];
const RKS: [&str; 3] = ["r0", "r1", "r2"];
const COLORS: [&str; 3] = ["red", "green", "blue"];
const SHAPES: [&str; 2] = ["disc", "cube"];
const HANDLES: [Option<&str>; 3] = [None, Some("h1"), Some("h2")];
/// A short reservation timeout: a crashed writer's reservation expires before the final repair.
const TIMEOUT: Duration = Duration::from_millis(300);

/// The values of one entity, by index into the domains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vals {
    pub code: i64,
    pub color: usize,
    pub shape: usize,
    pub handle: usize,
    pub note: u8,
}

/// One write of the sequence.
#[derive(Debug, Clone)]
pub enum IxOp {
    Create(usize, usize, Vals),
    Upsert(usize, usize, Vals),
    Update(usize, usize, Vals),
    Patch(usize, usize, Vals),
    Mutate(usize, usize, Vals),
    Delete(usize, usize),
    Batch(usize, Vec<(usize, Vals)>),
    DeletePartition(usize),
}

/// Where the handle of a write dies: after this many requests, the next
/// one fails unsent (`lost = false`) or takes effect with its answer lost.
#[derive(Debug, Clone, Copy)]
pub struct Crash {
    pub after: usize,
    pub lost: bool,
}

fn vals() -> impl Strategy<Value = Vals> {
    (0..3i64, 0..COLORS.len(), 0..SHAPES.len(), 0..HANDLES.len(), 0..4u8).prop_map(
        |(code, color, shape, handle, note)| Vals {
            code,
            color,
            shape,
            handle,
            note,
        },
    )
}

fn op() -> impl Strategy<Value = IxOp> {
    let p = 0..PKS.len();
    let r = 0..RKS.len();
    prop_oneof![
        3 => (p.clone(), r.clone(), vals()).prop_map(|(p, r, v)| IxOp::Create(p, r, v)),
        3 => (p.clone(), r.clone(), vals()).prop_map(|(p, r, v)| IxOp::Upsert(p, r, v)),
        2 => (p.clone(), r.clone(), vals()).prop_map(|(p, r, v)| IxOp::Update(p, r, v)),
        2 => (p.clone(), r.clone(), vals()).prop_map(|(p, r, v)| IxOp::Patch(p, r, v)),
        2 => (p.clone(), r.clone(), vals()).prop_map(|(p, r, v)| IxOp::Mutate(p, r, v)),
        2 => (p.clone(), r.clone()).prop_map(|(p, r)| IxOp::Delete(p, r)),
        1 => (p.clone(), proptest::collection::vec((0..RKS.len(), vals()), 1..3)).prop_map(|(p, w)| IxOp::Batch(p, w)),
        1 => p.prop_map(IxOp::DeletePartition),
    ]
}

/// A sequence of writes, each with the point its handle may die at.
pub fn sequence(max: usize) -> impl Strategy<Value = Vec<(IxOp, Option<Crash>)>> {
    let crash = proptest::option::weighted(
        0.4,
        (0..8usize, any::<bool>()).prop_map(|(after, lost)| Crash { after, lost }),
    );
    proptest::collection::vec((op(), crash), 1..=max)
}

fn entity(p: usize, r: usize, v: Vals) -> Indexed {
    Indexed {
        pk: PKS[p].into(),
        rk: RKS[r].into(),
        code: v.code,
        color: COLORS[v.color].into(),
        shape: SHAPES[v.shape].into(),
        handle: HANDLES[v.handle].map(str::to_owned),
        note: format!("n{}", v.note),
        etag: None,
    }
}

/// A backend that dies: the first `after` requests pass; the next one fails
/// unsent, or (when `lost`) takes effect and then fails; every later one fails.
#[derive(Debug, Clone)]
pub struct CrashBackend<B> {
    inner: B,
    sent: Arc<AtomicUsize>,
    crash: Option<Crash>,
}

impl<B> CrashBackend<B> {
    pub fn new(inner: B, crash: Option<Crash>) -> Self {
        CrashBackend {
            inner,
            sent: Arc::new(AtomicUsize::new(0)),
            crash,
        }
    }

    async fn guard<T>(&self, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        let n = self.sent.fetch_add(1, Ordering::SeqCst);
        match self.crash {
            None => f.await,
            Some(c) if n < c.after => f.await,
            Some(c) if n == c.after && c.lost => {
                let _ = f.await;
                Err(Error::transport("the process stopped after sending"))
            }
            Some(_) => Err(Error::transport("the process stopped")),
        }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for CrashBackend<B> {
    async fn create_table(&self, table: &str) -> Result<()> {
        self.inner.create_table(table).await
    }

    async fn delete_table(&self, table: &str) -> Result<()> {
        self.inner.delete_table(table).await
    }

    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> Result<Option<Row>> {
        self.guard(self.inner.get(table, partition_key, row_key)).await
    }

    async fn execute(&self, table: &str, op: WriteOp) -> Result<WriteOutcome> {
        self.guard(self.inner.execute(table, op)).await
    }

    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> Result<Vec<WriteOutcome>> {
        self.guard(self.inner.transaction(table, ops)).await
    }

    async fn query(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<Page> {
        self.guard(self.inner.query(table, request, token)).await
    }

    async fn query_body(&self, table: &str, request: &QueryRequest, token: Option<&PageToken>) -> Result<PageAnswer> {
        self.guard(self.inner.query_body(table, request, token)).await
    }
    fn profile(&self) -> unified_tables::service::ServiceProfile {
        self.inner.profile()
    }
}

fn options() -> StoreOptions {
    StoreOptions {
        unique_reservation_timeout: TIMEOUT,
        ..StoreOptions::default()
    }
}

/// A store over the environment's backend whose handle dies at `crash`.
fn handle(env: &Env, crash: Option<Crash>) -> Store<Indexed> {
    let backend: Arc<dyn Backend> = Arc::new(CrashBackend::new(env.backend().clone(), crash));
    Tables::from_arc(backend)
        .with_options(options())
        .store_in::<Indexed>(&env.table)
}

/// Runs one write; errors (refusals, conflicts, the crash) are expected.
async fn apply(store: &Store<Indexed>, op: &IxOp) {
    let _ = match op {
        IxOp::Create(p, r, v) => store.create(&mut entity(*p, *r, *v)).await.map(|_| ()),
        IxOp::Upsert(p, r, v) => store.upsert(&mut entity(*p, *r, *v)).await.map(|_| ()),
        IxOp::Update(p, r, v) => match store.get((PKS[*p], RKS[*r])).await {
            Ok(Some(current)) => {
                let mut next = entity(*p, *r, *v);
                next.etag = current.etag;
                store.update(&mut next).await.map(|_| ())
            }
            other => other.map(|_| ()),
        },
        IxOp::Patch(p, r, v) => {
            let e = entity(*p, *r, *v);
            store
                .patch((PKS[*p], RKS[*r]), Indexed::update().color(e.color).note(e.note))
                .await
                .map(|_| ())
        }
        IxOp::Mutate(p, r, v) => {
            let e = entity(*p, *r, *v);
            store
                .mutate((PKS[*p], RKS[*r]), |x| {
                    x.code = e.code;
                    x.shape = e.shape.clone();
                    x.handle = e.handle.clone();
                })
                .await
                .map(|_| ())
        }
        IxOp::Delete(p, r) => store.delete((PKS[*p], RKS[*r])).await.map(|_| ()),
        IxOp::Batch(p, writes) => {
            let mut seen = std::collections::BTreeSet::new();
            let batch: Vec<Indexed> = writes
                .iter()
                .filter(|(r, _)| seen.insert(*r))
                .map(|(r, v)| entity(*p, *r, *v))
                .collect();
            store.upsert_batch(&batch).await.map(|_| ())
        }
        IxOp::DeletePartition(p) => store.delete_partition(PKS[*p]).await.map(|_| ()),
    };
}

/// Runs the sequence, then the operator's job and a repair, and compares.
pub async fn run(env: &Env, ops: &[(IxOp, Option<Crash>)]) -> std::result::Result<(), String> {
    for (op, crash) in ops {
        let store = handle(env, *crash);
        apply(&store, op).await;
        if crash.is_none() {
            store.settle_indexes().await;
        }
    }
    // Every crashed writer's reservation expires, then the job and a repair run.
    tokio::time::sleep(TIMEOUT + Duration::from_millis(100)).await;
    let store = handle(env, None);
    store
        .apply_index_intents(None)
        .await
        .map_err(|e| format!("the job: {e}"))?;
    let repair = IndexCheckOptions {
        repair: true,
        ..IndexCheckOptions::default()
    };
    store
        .check_indexes(repair)
        .await
        .map_err(|e| format!("the repair: {e}"))?;
    let rows = all_rows(env.backend(), &env.table).await;
    let wrong = divergence(Indexed::INDEXES, &rows);
    if !wrong.is_empty() {
        return Err(format!("{} divergent index rows:\n{}", wrong.len(), wrong.join("\n")));
    }
    let report = store
        .check_indexes(IndexCheckOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    if !report.is_clean() {
        return Err(format!("after the repair: {:?}", report.findings));
    }
    // One holder per unique value, and every lookup answers what the entities hold.
    let entities: Vec<Indexed> = store
        .query(unified_tables::QueryOptions::all())
        .await
        .map_err(|e| e.to_string())?;
    let holders = |f: &dyn Fn(&Indexed) -> bool| entities.iter().filter(|e| f(e)).count();
    for p in PKS {
        for code in 0..3 {
            if holders(&|e| e.pk == p && e.code == code) > 1 {
                return Err(format!("two holders of code {code} in {p}"));
            }
            let got = Indexed::get_by_code(&store, p, code).await.map_err(|e| e.to_string())?;
            let want = entities.iter().find(|e| e.pk == p && e.code == code);
            if got.as_ref().map(|g| &g.rk) != want.map(|w| &w.rk) {
                return Err(format!("get_by_code({p}, {code}) = {got:?}, want {want:?}"));
            }
        }
        for color in COLORS {
            let got = Indexed::find_by_color(&store, p, color)
                .await
                .map_err(|e| e.to_string())?;
            if got.len() != holders(&|e| e.pk == p && e.color == color) {
                return Err(format!("find_by_color({p}, {color}) = {got:?}"));
            }
        }
    }
    for handle_value in HANDLES.into_iter().flatten() {
        if holders(&|e| e.handle.as_deref() == Some(handle_value)) > 1 {
            return Err(format!("two holders of handle {handle_value}"));
        }
        let got = Indexed::get_by_handle(&store, handle_value)
            .await
            .map_err(|e| e.to_string())?;
        let want = entities.iter().find(|e| e.handle.as_deref() == Some(handle_value));
        if got.as_ref().map(|g| (&g.pk, &g.rk)) != want.map(|w| (&w.pk, &w.rk)) {
            return Err(format!("get_by_handle({handle_value}) = {got:?}, want {want:?}"));
        }
    }
    for shape in SHAPES {
        let got = Indexed::find_by_shape(&store, shape).await.map_err(|e| e.to_string())?;
        if got.len() != holders(&|e| e.shape == shape) {
            return Err(format!("find_by_shape({shape}) = {got:?}"));
        }
    }
    Ok(())
}
