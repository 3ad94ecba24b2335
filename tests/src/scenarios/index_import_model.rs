//! An import with unique indexes against a model, with another writer
//! acting between ANY two of its requests: a type with a local unique
//! index, a global unique index (the reservation protocol) and a global
//! index, imported with [`ImportOptions::indexes`]. The property, once
//! both have returned and the intents are applied: **no value has two
//! holders, every entity holding a value is found by its lookups, every
//! index row is one an entity needs, the other writer's acknowledged write
//! is intact, and an entity the import reports refused has nothing
//! written.**
//!
//! The matrix it prints (to the terminal, past the test harness's
//! capture): cases and passed, per act of the other writer.

use std::io::Write as _;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use unified_tables::admin::{Admin, ImportOptions};
use unified_tables::{Error, Store, TableEntity, Tables};

use crate::index_model::{all_rows, divergence};
use crate::scenarios::index_import::{exported, plain};
use crate::scenarios::index_partition_delete::{holders, seed, Badge};
use crate::steps::Steps;
use crate::Env;

/// The partition the import writes.
const TEAM: &str = "t";

/// What the other writer does, between two requests of the import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Creates `a1` with the code and the handle `b1` is imported with.
    CreateTaking,
    /// Moves `b2` to a new code and a new handle.
    Update,
    /// Deletes `b3`.
    Delete,
    /// Creates `a0` with values of its own.
    CreateFresh,
}

impl Act {
    pub const ALL: [Act; 4] = [Act::CreateTaking, Act::Update, Act::Delete, Act::CreateFresh];

    pub fn name(self) -> &'static str {
        match self {
            Act::CreateTaking => "create taking b1's",
            Act::Update => "update b2's values",
            Act::Delete => "delete b3",
            Act::CreateFresh => "create fresh",
        }
    }

    /// The entity the act writes, as it writes it (`None`: it deletes).
    fn written(self) -> (&'static str, Option<Badge>) {
        match self {
            Act::CreateTaking => ("a1", Some(Badge::new(TEAM, "a1", "c1", "t-h1"))),
            Act::Update => ("b2", Some(Badge::new(TEAM, "b2", "c2x", "t-h2x"))),
            Act::Delete => ("b3", None),
            Act::CreateFresh => ("a0", Some(Badge::new(TEAM, "a0", "cn", "t-hn"))),
        }
    }

    /// Does it through `store` (a handle of its own): `Ok(true)` when
    /// acknowledged as a change, `Ok(false)` when it found nothing to delete.
    async fn run(self, store: &Store<Badge>) -> Result<bool, Error> {
        let (id, written) = self.written();
        match (self, written) {
            (Act::Delete, _) => store.delete((TEAM, id)).await,
            (Act::Update, Some(new)) => store
                .mutate((TEAM, id), |b| {
                    b.code = new.code.clone();
                    b.handle = new.handle.clone();
                })
                .await
                .map(|_| true),
            (_, Some(mut new)) => store.create(&mut new).await.map(|_| true),
            (_, None) => Ok(false),
        }
    }
}

type Slot = Arc<Mutex<Option<Result<bool, Error>>>>;

fn planned(store: Store<Badge>, act: Act, slot: Slot) -> crate::steps::Act {
    Box::new(move || {
        async move {
            let outcome = act.run(&store).await;
            *slot.lock().expect("slot") = Some(outcome);
        }
        .boxed()
    })
}

/// Checks the property in `table` once both sides returned; `Err` says what broke.
async fn check(
    env: &Env,
    table: &str,
    imported: &Result<unified_tables::admin::ImportReport, Error>,
    act: Act,
    acted: &Result<bool, Error>,
) -> Result<(), String> {
    let store = env.tables.clone().without_cache().store_in::<Badge>(table);
    store.settle_indexes().await;
    store
        .apply_index_intents(None)
        .await
        .map_err(|e| format!("applying the intents: {e}"))?;
    let rows = all_rows(env.backend(), table).await;
    let wrong = divergence(Badge::INDEXES, &rows);
    if !wrong.is_empty() {
        return Err(format!("the index rows differ from the entities: {}", wrong.join("; ")));
    }
    let entities = holders(&store, TEAM, &rows).await?;
    let now = |id: &str| entities.iter().find(|e| e.id == id);
    // The other writer's acknowledged write is intact; a refused one changed nothing.
    let (id, written) = act.written();
    match (acted, written, now(id)) {
        (Ok(true), Some(w), Some(n)) if (&n.code, &n.handle) == (&w.code, &w.handle) => {}
        (Ok(true), Some(_), n) => return Err(format!("{id}'s acknowledged write was lost: {n:?}")),
        (Ok(true), None, Some(_)) => return Err(format!("{id}'s acknowledged delete was undone")),
        (Err(e), Some(w), Some(n)) if (&n.code, &n.handle) == (&w.code, &w.handle) => {
            return Err(format!("{id} was refused ({e}) but holds its write"))
        }
        (Err(e), _, _) if act == Act::CreateFresh => return Err(format!("a fresh create was refused: {e}")),
        _ => {}
    }
    // The import: every entity written, or the one it reports refused has nothing written.
    match imported {
        Ok(report) => {
            for b in seed(TEAM) {
                let gone = act == Act::Delete && b.id == "b3" && matches!(acted, Ok(true));
                if now(&b.id).is_none() && !gone {
                    return Err(format!("the import reported {report:?} but {} is missing", b.id));
                }
            }
        }
        Err(Error::BatchFailed {
            partition_key,
            row_key,
            source,
            ..
        }) if matches!(**source, Error::UniqueViolation { .. }) => {
            if act != Act::CreateTaking {
                return Err(format!("the import was refused with no value taken: {source}"));
            }
            if now(row_key).is_some()
                || rows
                    .iter()
                    .any(|r| r.partition_key == *partition_key && r.row_key == *row_key)
            {
                return Err(format!("the import reported {row_key} refused but wrote some of it"));
            }
        }
        Err(e) => return Err(format!("the import failed: {e}")),
    }
    Ok(())
}

#[derive(Default)]
struct Tally {
    cases: usize,
    passed: usize,
}

fn print_matrix(env: &Env, tallies: &[(Act, Tally)]) {
    let mut out = format!(
        "\nimport × another writer between any two requests on {:?}:\n{:<22} {:>5} {:>6}\n",
        env.kind, "act", "cases", "passed"
    );
    let (mut cases, mut passed) = (0, 0);
    for (act, t) in tallies {
        out += &format!("{:<22} {:>5} {:>6}\n", act.name(), t.cases, t.passed);
        cases += t.cases;
        passed += t.passed;
    }
    out += &format!("{:<22} {cases:>5} {passed:>6}\n", "all");
    let _ = std::io::stderr().write_all(out.as_bytes());
}

pub async fn import_keeps_every_write_made_between_its_requests(env: &Env) {
    let dir = exported(
        env,
        seed(TEAM)
            .iter()
            .map(|b| plain(TEAM, &b.id, &b.code, &b.handle))
            .collect(),
    )
    .await;
    let steps = Steps::new(env.backend().clone());
    let importing = Tables::with_backend(steps.clone()).without_cache();
    let options = || ImportOptions {
        indexes: Badge::INDEXES,
        ..ImportOptions::default()
    };

    // How many requests the import makes.
    let target = env.another_table();
    steps.count();
    let report = Admin::new(&importing, &target)
        .unwrap()
        .import(&dir, options())
        .await
        .unwrap();
    assert_eq!(report.written, 3, "{report:?}");
    let requests = steps.seen();
    assert!(
        requests >= 2,
        "a reservation and a transaction at least, not {requests}"
    );

    let mut tallies: Vec<(Act, Tally)> = Act::ALL.iter().map(|a| (*a, Tally::default())).collect();
    let mut failures = Vec::new();
    let mut n = 0;
    for (act, tally) in tallies.iter_mut() {
        for after in 0..=requests {
            n += 1;
            let target = env.another_table();
            let clean = env.tables.clone().without_cache().store_in::<Badge>(&target);
            clean.ensure_created().await.unwrap();
            let slot: Slot = Arc::new(Mutex::new(None));
            steps.arm(after, planned(clean.clone(), *act, slot.clone()));
            let imported = Admin::new(&importing, &target).unwrap().import(&dir, options()).await;
            if let Some(late) = steps.take_unfired() {
                late().await;
            }
            let acted = slot.lock().expect("slot").take().expect("the other writer acted");
            tally.cases += 1;
            match check(env, &target, &imported, *act, &acted).await {
                Ok(()) => tally.passed += 1,
                Err(why) => failures.push(format!("{} after request {after}: {why}", act.name())),
            }
        }
    }
    print_matrix(env, &tallies);
    assert!(
        failures.is_empty(),
        "{} of {n} interleavings break the property:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
