//! What the write token costs on a normal write, and what it buys:
//!
//! 1. request body bytes per upsert with the token against without (a
//!    recording decorator sums the wire size of every row sent), for the
//!    small `Reading` row and for a typical entity of about 1 KB;
//! 2. client CPU per upsert of the typical entity with the token against
//!    without, one request at a time, interleaved rounds (each first in
//!    turn), the median
//!    (Linux: the process's CPU time; on Azure the service's time is not in it);
//!    beside it the floor: the same entity without the token but with one
//!    more ordinary cell of the token's size, against without (what any
//!    22-character cell costs a write, wherever it comes from);
//! 3. ambiguous answers injected through a `FaultyBackend` (the write is
//!    applied, then its answer is replaced by a lost connection or a 500
//!    `OperationTimedOut`; every fifth read-back fails too, so the write is
//!    sent again and refused by its own first attempt) against operations
//!    applied twice: `mutate` increments of a counter and `create`s.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming, FaultyBackend};
use unified_tables::backend::{Backend, Page, PageAnswer, PageToken, QueryRequest, WriteOp, WriteOutcome};
use unified_tables::wire::wire_size;
use unified_tables::{DateTime, Error, RetryPolicy, Row, Store, TableEntity, Tables};

use crate::common::{fresh_table, process_cpu, thread_cpu, Failure, Reading};
use crate::report::{median, Figure, Target};

/// Interleaved rounds of the CPU figure.
const ROUNDS: usize = 7;
/// Slices of a round, the variants taking turns over them.
const SLICES: usize = 10;

/// Declares a typical entity (a dozen columns, about 1 KB on the wire) under
/// `$name`, with the extra columns given and their values, and its `nth`.
macro_rules! profile {
    ($(#[$doc:meta])* $name:ident { $($field:ident: $ty:ty = $value:expr),* }) => {
        $(#[$doc])*
        #[derive(TableEntity, Debug, Clone)]
        pub struct $name {
            #[table(partition_key)]
            pub tenant: String,
            #[table(row_key)]
            pub user: String,
            pub display_name: String,
            pub email: String,
            pub city: String,
            pub country: String,
            pub bio: String,
            pub tags: Vec<String>,
            pub score: i64,
            pub visits: i32,
            pub active: bool,
            pub last_seen: DateTime,
            $(pub $field: $ty,)*
        }

        impl $name {
            fn nth(tenant: &str, i: usize) -> $name {
                $name {
                    tenant: tenant.to_owned(),
                    user: format!("user-{i:07}"),
                    display_name: format!("User number {i}"),
                    email: format!("user{i}@example.com"),
                    city: "Lisbon".into(),
                    country: "PT".into(),
                    bio: "Writes about storage engines, retries and the many ways an answer can get lost on its way back. "
                        .repeat(6),
                    tags: vec!["storage".into(), "rust".into(), "azure".into()],
                    score: i as i64 * 13,
                    visits: (i % 1000) as i32,
                    active: i % 2 == 0,
                    last_seen: DateTime::from_unix_nanos(1_700_000_000_000_000_000 + i as i128 * 1_000_000_000),
                    $($field: $value,)*
                }
            }
        }
    };
}

profile!(
    /// A typical entity: a dozen columns, about 1 KB on the wire.
    Profile {}
);
profile!(
    /// [`Profile`]'s columns and one more cell of a write token's size (22 characters).
    ProfileCell { cell: String = "c".repeat(unified_tables::layout::WRITE_TOKEN_CHARS) }
);

/// Sums the wire size of every row the wrapped backend is asked to write.
#[derive(Debug, Clone)]
struct BodyBytes<B> {
    inner: B,
    bytes: Arc<AtomicU64>,
}

impl<B> BodyBytes<B> {
    fn count(&self, ops: &[WriteOp]) {
        let sum: usize = ops.iter().filter_map(WriteOp::row).map(wire_size).sum();
        self.bytes.fetch_add(sum as u64, Ordering::Relaxed);
    }

    fn take(&self) -> u64 {
        self.bytes.swap(0, Ordering::Relaxed)
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl<B: Backend> Backend for BodyBytes<B> {
    async fn create_table(&self, table: &str) -> unified_tables::Result<()> {
        self.inner.create_table(table).await
    }
    async fn delete_table(&self, table: &str) -> unified_tables::Result<()> {
        self.inner.delete_table(table).await
    }
    async fn get(&self, table: &str, partition_key: &str, row_key: &str) -> unified_tables::Result<Option<Row>> {
        self.inner.get(table, partition_key, row_key).await
    }
    async fn execute(&self, table: &str, op: WriteOp) -> unified_tables::Result<WriteOutcome> {
        self.count(std::slice::from_ref(&op));
        self.inner.execute(table, op).await
    }
    async fn transaction(&self, table: &str, ops: Vec<WriteOp>) -> unified_tables::Result<Vec<WriteOutcome>> {
        self.count(&ops);
        self.inner.transaction(table, ops).await
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

/// The token's figures on `db`'s backend (`memory`: the in-memory one): `ops` upserts per measurement.
pub async fn figures(db: &Tables, memory: bool, ops: usize) -> Result<Vec<Figure>, Failure> {
    let recorder = BodyBytes {
        inner: db.backend().clone(),
        bytes: Arc::default(),
    };
    let with = Tables::with_backend(recorder.clone()).without_cache();
    let without = unified_tables::__measure::without_write_tokens(with.clone());
    let table = fresh_table("tokens");
    let mut figures = Vec::new();

    // Body bytes per upsert.
    let small = |tables: &Tables| tables.store_in::<Reading>(&table);
    let typical = |tables: &Tables| tables.store_in::<Profile>(&table);
    small(&with).ensure_created().await?;
    recorder.take();
    let per_write = |bytes: u64, n: usize| bytes as f64 / n as f64;
    let n = 50;
    for i in 0..n {
        small(&with).upsert(&mut Reading::nth("bytes", "s", i)).await?;
    }
    let small_with = per_write(recorder.take(), n);
    for i in 0..n {
        small(&without).upsert(&mut Reading::nth("bytes", "s", i)).await?;
    }
    let small_without = per_write(recorder.take(), n);
    for i in 0..n {
        typical(&with).upsert(&mut Profile::nth("bytes", i)).await?;
    }
    let typical_with = per_write(recorder.take(), n);
    for i in 0..n {
        typical(&without).upsert(&mut Profile::nth("bytes", i)).await?;
    }
    let typical_without = per_write(recorder.take(), n);
    let bytes = |v: f64| (format!("{v:.0} B"), v);
    figures.push(
        Figure::compared(
            "write token: request body per upsert (1 KB entity), with vs without",
            bytes(typical_with),
            bytes(typical_without),
        )
        .target(Target::AtMost(1.05)),
    );
    figures.push(Figure::compared(
        "write token: request body per upsert (small row), with vs without",
        bytes(small_with),
        bytes(small_without),
    ));

    // Client CPU per upsert, interleaved rounds: with the token, without
    // it, and without it but with one more ordinary cell of the token's size
    // (what any cell of 22 characters costs a write: the token's floor).
    let mut cpu = [Vec::new(), Vec::new(), Vec::new()];
    let with_store = typical(&with);
    let without_store = typical(&without);
    let cell_store = without.store_in::<ProfileCell>(&table);
    let mut entities: Vec<Profile> = (0..ops).map(|i| Profile::nth("cpu", i)).collect();
    let mut celled: Vec<ProfileCell> = (0..ops).map(|i| ProfileCell::nth("cpu", i)).collect();
    for round in 0..ROUNDS {
        // Slices of the round taken in turn, each variant first in turn, so
        // a warm-up or a slow spell falls on all of them alike.
        let mut spent = [Some(Duration::ZERO); 3];
        for slice in 0..SLICES {
            let part = slice * ops / SLICES..(slice + 1) * ops / SLICES;
            for k in 0..3 {
                let variant = (round + slice + k) % 3;
                let took = match variant {
                    0 => cpu_of(&with_store, &mut entities[part.clone()], memory).await?,
                    1 => cpu_of(&without_store, &mut entities[part.clone()], memory).await?,
                    _ => cpu_of(&cell_store, &mut celled[part.clone()], memory).await?,
                };
                spent[variant] = spent[variant].zip(took).map(|(a, b)| a + b);
            }
        }
        for (variant, took) in spent.into_iter().enumerate() {
            cpu[variant].extend(took);
        }
    }
    if cpu.iter().all(|c| c.len() == ROUNDS) {
        let per_op = |d: Duration| {
            let us = d.as_secs_f64() * 1e6 / ops as f64;
            (format!("{us:.2} µs"), us)
        };
        let [cpu_with, cpu_without, cpu_cell] = cpu.map(median);
        figures.push(
            Figure::compared(
                "write token: client CPU per upsert (1 KB entity), with vs without",
                per_op(cpu_with),
                per_op(cpu_without),
            )
            .target(Target::AtMost(1.05)),
        );
        figures.push(Figure::compared(
            "floor: one more 22-char cell, CPU per upsert, with vs without",
            per_op(cpu_cell),
            per_op(cpu_without),
        ));
    }

    // Ambiguous answers against operations applied twice.
    let (injected, twice, unknown) = ambiguous_answers(db, &table, ops.min(200)).await?;
    figures.push(
        Figure::compared(
            "write token: operations applied twice vs ambiguous answers injected",
            (format!("{twice}"), twice as f64),
            (format!("{injected}"), injected as f64),
        )
        .target(Target::AtMost(0.0)),
    );
    figures.push(Figure::alone(
        "write token: outcomes left unknown (read-back possible)",
        format!("{unknown}"),
    ));
    Ok(figures)
}

/// The CPU time of upserting `entities` one at a time, if the platform says:
/// in memory the calling thread's (every write runs on it, and no other
/// thread's time is counted), on Azure the process's (the HTTP client's
/// connection tasks run on the runtime's other threads).
async fn cpu_of<T: TableEntity>(
    store: &Store<T>,
    entities: &mut [T],
    memory: bool,
) -> Result<Option<Duration>, Failure> {
    let clock = if memory { thread_cpu } else { process_cpu };
    let before = clock();
    for e in entities.iter_mut() {
        store.upsert(e).await?;
    }
    Ok(before.zip(clock()).map(|(a, b)| b.saturating_sub(a)))
}

/// Runs `n` `mutate` increments of a counter and `n` `create`s, each with
/// its answer lost after the service applied it. Returns the answers
/// injected, the operations applied twice, and the outcomes left unknown.
async fn ambiguous_answers(db: &Tables, table: &str, n: usize) -> Result<(usize, usize, usize), Failure> {
    let faulty = Arc::new(FaultyBackend::new(db.backend().clone()));
    let policy = RetryPolicy::builder()
        .backoff(Duration::from_millis(5), Duration::from_millis(50))
        .build()?;
    let tables = Tables::from_arc(faulty.clone()).without_cache().with_retry(policy);
    let store = tables.store_in::<Reading>(table);
    let lost = || Error::transport("the connection was reset before the answer arrived");
    let timed_out = || Error::service(500, "OperationTimedOut", "Operation could not be completed in time.");
    let mut counter = Reading::nth("ambiguous", "counter", 0);
    counter.value = 0;
    store.upsert(&mut counter).await?;

    let (mut injected, mut unknown, mut landed) = (0, 0, 0i64);
    let plan = |i: usize, reads_before: usize| {
        faulty.fail_next(
            FaultTarget::Write,
            FaultTiming::After,
            if i.is_multiple_of(2) { lost } else { timed_out },
        );
        if i % 5 == 4 {
            // The first read-back fails too: the write is sent again and refused by itself.
            faulty.fail_after(FaultTarget::Get, reads_before, FaultTiming::Before, lost);
        }
    };
    for i in 0..n {
        plan(i, 1);
        injected += 1;
        match store.mutate(("ambiguous", counter.rk.as_str()), |c| c.value += 1).await {
            Ok(_) => landed += 1,
            Err(e) if e.kind() == unified_tables::ErrorKind::OutcomeUnknown => unknown += 1,
            Err(e) => return Err(e.into()),
        }
        faulty.clear();
    }
    let stored = store
        .get(("ambiguous", counter.rk.as_str()))
        .await?
        .map_or(0, |c| c.value);
    let mut twice = usize::try_from(stored - landed).unwrap_or(usize::MAX);

    for i in 0..n {
        plan(i, 0);
        injected += 1;
        match store.create(&mut Reading::nth("ambiguous", "created", i)).await {
            Ok(_) => {}
            // Its own first attempt refusing it would be a second application reported.
            Err(e) if e.kind() == unified_tables::ErrorKind::AlreadyExists => twice += 1,
            Err(e) if e.kind() == unified_tables::ErrorKind::OutcomeUnknown => unknown += 1,
            Err(e) => return Err(e.into()),
        }
        faulty.clear();
    }
    Ok((injected, twice, unknown))
}
