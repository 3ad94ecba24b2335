//! `delete_partition` against a model, with another writer acting between
//! ANY two of its requests: a type with a local unique index, a global
//! unique index (the reservation protocol) and a global index. The
//! property, once both have returned and the intents are applied: **no
//! value has two holders, every entity holding a value is found by its
//! lookups, every index row is one an entity needs, and the other
//! writer's acknowledged write is intact** (its entity as it wrote it, or
//! gone with all its rows).
//!
//! The matrix it prints (to the terminal, past the test harness's
//! capture): cases and passed, per act of the other writer.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use unified_tables::index::rows::entity_of;
use unified_tables::layout::{is_index_key, is_index_row, SPLIT_OF};
use unified_tables::{ETag, Error, Row, Store, TableEntity, Tables};

use crate::index_model::{all_rows, divergence};
use crate::steps::Steps;
use crate::Env;

/// A badge of a team: a code unique in the team, a handle unique across
/// teams (reserved first), and a country indexed across teams.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Badge {
    #[table(partition_key)]
    pub team: String,
    #[table(row_key)]
    pub id: String,
    #[unique]
    pub code: String,
    #[unique(global, protocol = "reserve")]
    pub handle: String,
    #[index(global)]
    pub country: String,
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl Badge {
    pub fn new(team: &str, id: &str, code: &str, handle: &str) -> Badge {
        Badge {
            team: team.into(),
            id: id.into(),
            code: code.into(),
            handle: handle.into(),
            country: "UA".into(),
            etag: None,
        }
    }
}

/// What the other writer does, between two requests of the call under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Creates an entity whose key sorts before the seeded ones, with values of its own.
    CreateBefore,
    /// Creates an entity whose key sorts after the seeded ones, with values of its own.
    CreateAfter,
    /// Creates an entity with the local unique value and the handle of `b1`.
    CreateTaking,
    /// Moves `b2` to a new code and a new handle.
    Update,
    /// Deletes `b3`.
    Delete,
}

impl Act {
    pub const ALL: [Act; 5] = [
        Act::CreateBefore,
        Act::CreateAfter,
        Act::CreateTaking,
        Act::Update,
        Act::Delete,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Act::CreateBefore => "create before",
            Act::CreateAfter => "create after",
            Act::CreateTaking => "create taking b1's",
            Act::Update => "update b2's values",
            Act::Delete => "delete b3",
        }
    }

    /// The entity the act writes, as it writes it (`None`: it deletes).
    pub fn written(self, team: &str) -> (String, Option<Badge>) {
        match self {
            Act::CreateBefore => ("a0".into(), Some(Badge::new(team, "a0", "cn", &format!("{team}-hn")))),
            Act::CreateAfter => ("b9".into(), Some(Badge::new(team, "b9", "cm", &format!("{team}-hm")))),
            Act::CreateTaking => ("a1".into(), Some(Badge::new(team, "a1", "c1", &format!("{team}-h1")))),
            Act::Update => ("b2".into(), Some(Badge::new(team, "b2", "c2x", &format!("{team}-h2x")))),
            Act::Delete => ("b3".into(), None),
        }
    }

    /// Does it through `store` (a handle of its own): `Ok` when acknowledged.
    pub async fn run(self, store: &Store<Badge>, team: &str) -> Result<(), Error> {
        let (id, written) = self.written(team);
        match (self, written) {
            (Act::Delete, _) => store.delete((team, id.as_str())).await.map(|_| ()),
            (Act::Update, Some(new)) => store
                .mutate((team, id.as_str()), |b| {
                    b.code = new.code.clone();
                    b.handle = new.handle.clone();
                })
                .await
                .map(|_| ()),
            (_, Some(mut new)) => store.create(&mut new).await.map(|_| ()),
            (_, None) => Ok(()),
        }
    }
}

/// The entities every case starts from.
pub fn seed(team: &str) -> Vec<Badge> {
    (1..=3)
        .map(|i| Badge::new(team, &format!("b{i}"), &format!("c{i}"), &format!("{team}-h{i}")))
        .collect()
}

/// The rows of one team: its partition and the global index rows of its entities.
pub async fn rows_of(env: &Env, team: &str) -> Vec<Row> {
    all_rows(env.backend(), &env.table)
        .await
        .into_iter()
        .filter(|r| {
            r.partition_key == team || (is_index_key(&r.partition_key) && entity_of(r).is_some_and(|(p, _)| p == team))
        })
        .collect()
}

/// The team's entities among `rows`, each checked to be the one holder of
/// its code and its handle and to be found by both lookups; `Err` says what broke.
pub async fn holders(store: &Store<Badge>, team: &str, rows: &[Row]) -> Result<Vec<Badge>, String> {
    let ids: Vec<String> = rows
        .iter()
        .filter(|r| r.partition_key == team && !is_index_row(r) && r.get(SPLIT_OF).is_none())
        .map(|r| r.row_key.clone())
        .collect();
    let (mut codes, mut handles) = (BTreeSet::new(), BTreeSet::new());
    let mut entities = Vec::new();
    for id in &ids {
        let Some(e) = store.get((team, id.as_str())).await.map_err(|e| e.to_string())? else {
            continue;
        };
        if !codes.insert(e.code.clone()) {
            return Err(format!("code {} has two holders", e.code));
        }
        if !handles.insert(e.handle.clone()) {
            return Err(format!("handle {} has two holders", e.handle));
        }
        let by_code = Badge::get_by_code(store, team, &e.code)
            .await
            .map_err(|e| e.to_string())?;
        if by_code.map(|b| b.id) != Some(e.id.clone()) {
            return Err(format!("{} is not found by its code", e.id));
        }
        let by_handle = Badge::get_by_handle(store, &e.handle)
            .await
            .map_err(|e| e.to_string())?;
        if by_handle.map(|b| b.id) != Some(e.id.clone()) {
            return Err(format!("{} is not found by its handle", e.id));
        }
        entities.push(e);
    }
    Ok(entities)
}

/// Checks the property for one team once both sides returned; `Err` says what broke.
pub async fn check(
    env: &Env,
    store: &Store<Badge>,
    team: &str,
    act: Act,
    acted: &Result<(), Error>,
) -> Result<(), String> {
    store.settle_indexes().await;
    store
        .apply_index_intents(Some(team))
        .await
        .map_err(|e| format!("applying the intents: {e}"))?;
    let rows = rows_of(env, team).await;
    let wrong = divergence(Badge::INDEXES, &rows);
    if !wrong.is_empty() {
        return Err(format!("the index rows differ from the entities: {}", wrong.join("; ")));
    }
    let entities = holders(store, team, &rows).await?;
    let (id, written) = act.written(team);
    let now = entities.iter().find(|e| e.id == id);
    match (acted, written, now) {
        // Acknowledged: its entity as written, or gone with all its rows (deleted after).
        (Ok(()), Some(w), Some(n)) if (&n.code, &n.handle) != (&w.code, &w.handle) => {
            Err(format!("{id}'s acknowledged write was lost: {n:?}"))
        }
        (Ok(()), None, Some(_)) => Err(format!("{id}'s acknowledged delete was undone")),
        // Refused: it changed nothing (a create left no entity; an update of a deleted entity none).
        (Err(e), _, Some(n)) if act != Act::Update || (n.code != "c2") => {
            Err(format!("{id} was refused ({e}) but holds {n:?}"))
        }
        _ => Ok(()),
    }
}

/// One row of the printed matrix.
#[derive(Default)]
pub struct Tally {
    pub cases: usize,
    pub passed: usize,
}

/// Prints a matrix to the terminal (past the test harness's capture of `print!`).
pub fn print_matrix(title: &str, env: &Env, tallies: &[(Act, Tally)]) {
    let mut out = format!(
        "\n{title} on {:?}:\n{:<22} {:>5} {:>6}\n",
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

/// The other writer's act, ready for [`Steps::arm`]; its outcome lands in `slot`.
pub fn planned(
    store: Store<Badge>,
    team: String,
    act: Act,
    slot: Arc<Mutex<Option<Result<(), Error>>>>,
) -> crate::steps::Act {
    Box::new(move || {
        async move {
            let outcome = act.run(&store, &team).await;
            *slot.lock().expect("slot") = Some(outcome);
        }
        .boxed()
    })
}

/// The other writer's outcome, once it has acted.
pub async fn acted_by(slot: &Mutex<Option<Result<(), Error>>>) -> Result<(), Error> {
    for _ in 0..500 {
        if let Some(outcome) = slot.lock().expect("slot").take() {
            return outcome;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the other writer never acted")
}

pub async fn partition_delete_keeps_every_write_made_between_its_requests(env: &Env) {
    let steps = Steps::new(env.backend().clone());
    let deleting = Tables::with_backend(steps.clone())
        .without_cache()
        .store_in::<Badge>(&env.table);
    let clean = env.tables.clone().without_cache().store_in::<Badge>(&env.table);
    clean.ensure_created().await.unwrap();

    // How many requests a partition delete makes.
    for mut b in seed("pd000") {
        clean.create(&mut b).await.unwrap();
    }
    clean.settle_indexes().await;
    steps.count();
    assert_eq!(deleting.delete_partition("pd000").await.unwrap(), 3);
    let requests = steps.seen();
    assert!(requests >= 2, "a listing and a delete at least, not {requests}");

    let mut tallies: Vec<(Act, Tally)> = Act::ALL.iter().map(|a| (*a, Tally::default())).collect();
    let mut failures = Vec::new();
    let mut n = 0;
    for (act, tally) in tallies.iter_mut() {
        for after in 0..=requests {
            n += 1;
            let team = format!("pd{n:03}");
            for mut b in seed(&team) {
                clean.create(&mut b).await.unwrap();
            }
            clean.settle_indexes().await;
            let slot = Arc::new(Mutex::new(None));
            steps.arm(after, planned(clean.clone(), team.clone(), *act, slot.clone()));
            let deleted = deleting.delete_partition(&team).await;
            if let Some(late) = steps.take_unfired() {
                late().await;
            }
            // An act after the call's last request runs in its background applier.
            deleting.settle_indexes().await;
            let acted = acted_by(&slot).await;
            let case = format!("{} after request {after}", act.name());
            tally.cases += 1;
            let verdict = match deleted {
                Err(e) => Err(format!("delete_partition failed: {e}")),
                Ok(_) => check(env, &clean, &team, *act, &acted).await,
            };
            match verdict {
                Ok(()) => tally.passed += 1,
                Err(why) => failures.push(format!("{case}: {why}")),
            }
        }
    }
    print_matrix(
        "partition delete × another writer between any two requests",
        env,
        &tallies,
    );
    assert!(
        failures.is_empty(),
        "{} of {n} interleavings break the property:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// An entity changed while the delete runs is left with all its rows, and
/// the call does not count it.
pub async fn partition_delete_leaves_an_entity_changed_since_it_was_listed(env: &Env) {
    let steps = Steps::new(env.backend().clone());
    let deleting = Tables::with_backend(steps.clone())
        .without_cache()
        .store_in::<Badge>(&env.table);
    let clean = env.tables.clone().without_cache().store_in::<Badge>(&env.table);
    for mut b in seed("t") {
        clean.create(&mut b).await.unwrap();
    }
    clean.settle_indexes().await;
    let slot = Arc::new(Mutex::new(None));
    // Right after the listing: b2 moves to new values.
    steps.arm(1, planned(clean.clone(), "t".into(), Act::Update, slot.clone()));
    let deleted = deleting.delete_partition("t").await.unwrap();
    let acted = acted_by(&slot).await;
    acted.as_ref().unwrap();
    assert_eq!(deleted, 2, "b1 and b3 deleted, b2 left");
    check(env, &clean, "t", Act::Update, &acted).await.unwrap();
    let b2 = Badge::get_by_handle(&clean, "t-h2x")
        .await
        .unwrap()
        .expect("b2 found by its new handle");
    assert_eq!((b2.id.as_str(), b2.code.as_str()), ("b2", "c2x"));
    assert_eq!(
        Badge::get_by_code(&clean, "t", "c2x")
            .await
            .unwrap()
            .map(|b| b.id)
            .as_deref(),
        Some("b2")
    );
    // The value stays enforced.
    let err = clean
        .create(&mut Badge::new("t", "b7", "c2x", "t-h7"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
    let err = clean
        .create(&mut Badge::new("u", "b8", "c8", "t-h2x"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
}
