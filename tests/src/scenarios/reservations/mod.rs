//! The reservation protocol of `#[unique(global, protocol = "reserve")]`
//! against every interleaving: each write verb × another actor acting
//! right after any one of the writer's requests × each write request of the
//! writer lost, late or refused (or none), each case checked against the
//! protocol's property.
//!
//! The property, once both calls have returned (and the intents are applied):
//!
//! - no value has two holders;
//! - every entity holding a value is found by its `get_by_*` lookup;
//! - a writer told `Ok` holds the value;
//! - a writer told `UniqueViolation` or any refusal changed nothing;
//! - a writer told `OutcomeUnknown` changed nothing or exactly its write;
//! - the other actor's acknowledged write stands (unless the writer's own
//!   later write of the same entity replaced it with the same value).
//!
//! The other actors: a rival entity created with the value, a twin write of
//! the same entity to the value (a double submit), the applier of earlier
//! intents, a takeover of the value as after the reservation timeout, and
//! the index repair of `check_indexes`. The matrix it prints (to the
//! terminal, past the test harness's capture): cases and passed, per verb
//! and actor.

mod script;

use std::io::Write as _;
use std::time::Duration;

use unified_tables::backend::{Backend, IfMatch, UpdateMode, WriteOp};
use unified_tables::index::rows::{entity_of, index_row, intent_row, set_reservation};
use unified_tables::{DateTime, ETag, Error, ErrorKind, IndexCheckOptions, RetryPolicy, Store, TableEntity, Tables};

use self::script::Turn;
pub use self::script::{Fault, Script};
use crate::Env;

/// A member of a tenant whose e-mail address is unique across tenants.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Member {
    #[table(partition_key)]
    pub tenant: String,
    #[table(row_key)]
    pub id: String,
    #[unique(global, protocol = "reserve")]
    pub email: String,
    pub name: String,
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl Member {
    fn new(tenant: &str, id: &str, email: &str, name: &str) -> Member {
        Member {
            tenant: tenant.into(),
            id: id.into(),
            email: email.into(),
            name: name.into(),
            etag: None,
        }
    }
}

/// The writer's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    /// A new entity with the value.
    Create,
    /// An entity holding another value moved to it (read, then replaced on its version).
    Move,
    /// An entity moved back to the value it left, while the intent of that
    /// earlier move (to release the value's row) is not applied yet.
    MoveBack,
}

impl Verb {
    const ALL: [Verb; 3] = [Verb::Create, Verb::Move, Verb::MoveBack];

    fn name(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Move => "move",
            Verb::MoveBack => "move back",
        }
    }
}

/// The other actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Other {
    Nothing,
    /// Another entity created with the value.
    Rival,
    /// The same entity written with the value (a double submit).
    Twin,
    /// `apply_index_intents` over the table.
    Applier,
    /// The value's row taken over once the writer's reservation timeout
    /// has passed (when its entity does not hold the value), then another
    /// entity created with it.
    Takeover,
    /// `check_indexes` with repair.
    Repair,
}

impl Other {
    const ALL: [Other; 6] = [
        Other::Nothing,
        Other::Rival,
        Other::Twin,
        Other::Applier,
        Other::Takeover,
        Other::Repair,
    ];

    fn name(self) -> &'static str {
        match self {
            Other::Nothing => "nothing",
            Other::Rival => "rival",
            Other::Twin => "twin",
            Other::Applier => "applier",
            Other::Takeover => "takeover",
            Other::Repair => "repair",
        }
    }
}

/// What a call was told.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Said {
    Ok,
    Unknown,
    Refused(String),
}

fn said<T>(r: &Result<T, Error>) -> Said {
    match r {
        Ok(_) => Said::Ok,
        Err(e) if e.kind() == ErrorKind::OutcomeUnknown => Said::Unknown,
        Err(e) => Said::Refused(format!("{e}")),
    }
}

/// The keys and values of one case.
#[derive(Debug, Clone)]
struct Case {
    /// The writer's entity, and the rival's.
    ours: (String, String),
    rival: (String, String),
    /// The value the writer's entity starts with (a move), and the one it writes.
    start: String,
    value: String,
}

impl Case {
    fn new(n: usize) -> Case {
        Case {
            ours: (format!("t1-{n}"), "a".into()),
            rival: (format!("t2-{n}"), "b".into()),
            start: format!("u{n}@example.com"),
            value: format!("v{n}@example.com"),
        }
    }

    fn member(&self, who: &(String, String), email: &str, name: &str) -> Member {
        Member::new(&who.0, &who.1, email, name)
    }
}

/// The writer's reservation timeout: short, so the takeover waits it out.
const TIMEOUT: Duration = Duration::from_millis(600);

/// A policy of one attempt: a refusal or a doubt is the call's answer.
fn one_attempt() -> RetryPolicy {
    RetryPolicy::builder()
        .attempts(1)
        .backoff(Duration::from_millis(1), Duration::from_millis(2))
        .build()
        .expect("a valid policy")
}

/// The other actor's turn, on a store without faults.
fn turn(other: Other, verb: Verb, clean: Store<Member>, raw: Env2, case: Case, said_to: SaidTo) -> Turn {
    let script = raw.script.clone();
    Box::pin(async move {
        let told = match other {
            Other::Nothing => return,
            Other::Rival => said(&clean.create(&mut case.member(&case.rival, &case.value, "rival")).await),
            Other::Twin => {
                let mut twin = case.member(&case.ours, &case.value, "twin");
                said(&match verb {
                    Verb::Create => clean.create(&mut twin).await,
                    Verb::Move | Verb::MoveBack => clean.upsert(&mut twin).await,
                })
            }
            Other::Applier => said(&clean.apply_index_intents(None).await),
            Other::Repair => said(
                &clean
                    .check_indexes(IndexCheckOptions {
                        repair: true,
                        ..IndexCheckOptions::default()
                    })
                    .await,
            ),
            // The reservation's timeout has passed: every request the writer sent before
            // has landed by then (a write is sent only while its reservations are younger
            // than half the timeout, and the service ends an operation within 30 s).
            Other::Takeover => {
                tokio::time::sleep(TIMEOUT + Duration::from_millis(50)).await;
                script.land().await;
                match take_over(&raw, &case).await {
                    true => said(&clean.create(&mut case.member(&case.rival, &case.value, "rival")).await),
                    false => Said::Refused("the value's holder holds it".into()),
                }
            }
        };
        *said_to.lock().expect("said") = Some(told);
    })
}

type SaidTo = std::sync::Arc<std::sync::Mutex<Option<Said>>>;

/// The raw backend and table, for the actors that act below the store.
#[derive(Clone)]
struct Env2 {
    raw: std::sync::Arc<dyn Backend>,
    script: Script<std::sync::Arc<dyn Backend>>,
    table: String,
}

/// Replaces the value's row with the rival's reservation, as a rival does
/// once the row is past its timeout: unless the entity the row names holds
/// the value. Whether it took the row.
async fn take_over(env: &Env2, case: &Case) -> bool {
    let rival = case.member(&case.rival, &case.value, "rival");
    let mut mine = index_row(&Member::INDEXES[0], &rival.to_row(&Default::default()).expect("a row"))
        .expect("an index row")
        .expect("the value's row");
    set_reservation(&mut mine, DateTime::now(), false);
    let found = env
        .raw
        .get(&env.table, &mine.partition_key, &mine.row_key)
        .await
        .expect("a read");
    let op = match found {
        None => WriteOp::Insert(mine),
        Some(row) => {
            if let Some((pk, rk)) = entity_of(&row) {
                let holder = env.raw.get(&env.table, &pk, &rk).await.expect("a read");
                if holds(holder.as_ref(), &case.value) {
                    return false;
                }
            }
            WriteOp::Update {
                row: mine,
                mode: UpdateMode::Replace,
                condition: row.etag.map_or(IfMatch::Any, IfMatch::ETag),
            }
        }
    };
    env.raw.execute(&env.table, op).await.is_ok()
}

/// The start of a move back: the entity held the value, settled, then
/// moved to its start value, as a move leaves it before its applier runs:
/// the start value's row confirmed, the entity's row holding it, and an
/// intent to release the value's row (still there, confirmed).
async fn moved_away(clean: &Store<Member>, env: &Env2, case: &Case) {
    let mut first = case.member(&case.ours, &case.value, "first");
    clean.create(&mut first).await.expect("the first write");
    clean.settle_indexes().await;
    let moved = case.member(&case.ours, &case.start, "start");
    let row = moved.to_row(&Default::default()).expect("a row");
    let def = &Member::INDEXES[0];
    let mut start_row = index_row(def, &row).expect("an index row").expect("the start's row");
    set_reservation(&mut start_row, DateTime::now(), true);
    let left = index_row(def, &first.to_row(&Default::default()).expect("a row"))
        .expect("an index row")
        .expect("the value's row");
    let intent = intent_row(
        &case.ours.0,
        &case.ours.1,
        "movedaway0000000000000",
        &[(left.partition_key, left.row_key)],
    )
    .expect("an intent");
    let entity = WriteOp::Upsert {
        row,
        mode: UpdateMode::Replace,
    };
    env.raw
        .execute(&env.table, WriteOp::Insert(start_row))
        .await
        .expect("the start's row");
    env.raw
        .transaction(&env.table, vec![entity, WriteOp::Insert(intent)])
        .await
        .expect("the move and its intent");
}

/// Whether an entity row holds `email`.
fn holds(row: Option<&unified_tables::Row>, email: &str) -> bool {
    row.and_then(|r| r.get("Email"))
        .and_then(|v| v.as_str())
        .is_some_and(|e| e == email)
}

/// One row of the printed matrix.
#[derive(Default, Clone)]
struct Tally {
    cases: usize,
    passed: usize,
    unknown: usize,
}

pub async fn a_unique_value_has_one_holder_against_every_interleaving(env: &Env) {
    let raw: std::sync::Arc<dyn Backend> = std::sync::Arc::new(env.backend().clone());
    let script = Script::new(raw.clone());
    let mut tables = Tables::with_backend(script.clone())
        .with_options(unified_tables::StoreOptions {
            unique_reservation_timeout: TIMEOUT,
            ..unified_tables::StoreOptions::default()
        })
        .without_cache()
        .with_retry(one_attempt());
    if let Some(blobs) = env.blobs.clone() {
        tables = tables.with_blobs(blobs, crate::blob_options());
    }
    let ours = tables.store_in::<Member>(&env.table);
    let clean = env.tables.clone().without_cache().store_in::<Member>(&env.table);
    clean.ensure_created().await.expect("the table");
    let env2 = Env2 {
        raw: raw.clone(),
        script: script.clone(),
        table: env.table.clone(),
    };
    let mut tallies: Vec<((Verb, Other), Tally)> = Vec::new();
    let mut failures = Vec::new();
    let mut n = 0usize;
    for verb in Verb::ALL {
        for other in Other::ALL {
            let mut tally = Tally::default();
            let mut faults: Vec<Option<(usize, Fault)>> = vec![None];
            let mut w = 0;
            'writes: loop {
                for f in Fault::ALL {
                    faults.push(Some((w, f)));
                }
                // Enumerated below: a fault past the writer's last write request stops the list.
                if faults.len() > 1 + 3 * 8 {
                    break 'writes;
                }
                w += 1;
            }
            'faults: for fault in faults {
                let mut k = 0;
                loop {
                    n += 1;
                    let case = Case::new(n);
                    // The start: a move's entity holds its first value, settled.
                    match verb {
                        Verb::Create => {}
                        Verb::Move => {
                            let mut start = case.member(&case.ours, &case.start, "start");
                            clean.create(&mut start).await.expect("the start");
                        }
                        Verb::MoveBack => moved_away(&clean, &env2, &case).await,
                    }
                    let said_to: SaidTo = Default::default();
                    script.arm(
                        fault,
                        k,
                        turn(other, verb, clean.clone(), env2.clone(), case.clone(), said_to.clone()),
                    );
                    let call = async {
                        match verb {
                            Verb::Create => ours.create(&mut case.member(&case.ours, &case.value, "ours")).await,
                            Verb::Move | Verb::MoveBack => {
                                let mut m = ours
                                    .get((case.ours.0.as_str(), case.ours.1.as_str()))
                                    .await?
                                    .expect("the start");
                                m.email = case.value.clone();
                                m.name = "ours".into();
                                ours.update(&mut m).await
                            }
                        }
                    };
                    let told = said(&script.run(call).await);
                    let seen = script.finish().await;
                    if fault.is_some() && !seen.fired {
                        // Past the writer's last write request on this path: nothing to place.
                        // (its keys are not used again)
                        continue 'faults;
                    }
                    if !seen.acted {
                        // (its keys are not used again)
                        break;
                    }
                    ours.settle_indexes().await;
                    clean.settle_indexes().await;
                    let _ = clean.apply_index_intents(None).await;
                    let theirs = said_to.lock().expect("said").clone();
                    tally.cases += 1;
                    match check(&clean, &raw, &env.table, verb, other, &case, &told, theirs.as_ref()).await {
                        Ok(()) => {
                            tally.passed += 1;
                            if told == Said::Unknown {
                                tally.unknown += 1;
                            }
                        }
                        Err(why) => failures.push(format!(
                            "{} × {} × {} after request {k}: {why} (ours: {told:?}, theirs: {theirs:?})",
                            verb.name(),
                            other.name(),
                            fault.map_or("none".to_owned(), |(w, f)| format!("write {w} {}", f.name())),
                        )),
                    }
                    if other == Other::Nothing {
                        break;
                    }
                    k += 1;
                }
            }
            tallies.push(((verb, other), tally));
        }
    }
    print_matrix(env, &tallies);
    assert!(
        failures.is_empty(),
        "{} interleavings break the reservation protocol's property:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Checks the property (see the module docs) on the rows of one case.
#[allow(clippy::too_many_arguments)]
async fn check(
    clean: &Store<Member>,
    raw: &std::sync::Arc<dyn Backend>,
    table: &str,
    verb: Verb,
    other: Other,
    case: &Case,
    told: &Said,
    theirs: Option<&Said>,
) -> Result<(), String> {
    let read = |who: &(String, String)| {
        let (raw, table, who) = (raw.clone(), table.to_owned(), who.clone());
        async move { raw.get(&table, &who.0, &who.1).await.map_err(|e| e.to_string()) }
    };
    let ours = read(&case.ours).await?;
    let rival = read(&case.rival).await?;
    let email = |r: &Option<unified_tables::Row>| {
        r.as_ref()
            .and_then(|r| r.get("Email"))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let (ours_email, rival_email) = (email(&ours), email(&rival));
    // No value has two holders.
    if ours_email.is_some() && ours_email == rival_email {
        return Err(format!("two holders of {:?}", ours_email));
    }
    // Every entity holding a value is found by its lookup.
    for (who, held) in [(&case.ours, &ours_email), (&case.rival, &rival_email)] {
        if let Some(value) = held {
            let found = Member::get_by_email(clean, value).await.map_err(|e| e.to_string())?;
            if found.as_ref().map(|m| (m.tenant.clone(), m.id.clone())) != Some(who.clone()) {
                return Err(format!("the holder {who:?} of a value is not found by get_by_email"));
            }
        }
    }
    let theirs_ok = theirs == Some(&Said::Ok);
    let twin_wrote = other == Other::Twin && theirs_ok;
    let start = match verb {
        Verb::Create => None,
        Verb::Move | Verb::MoveBack => Some(case.start.clone()),
    };
    // What our entity may hold if ours changed nothing: its start, or the twin's write.
    let unchanged = |e: &Option<String>| *e == start || (twin_wrote && e.as_deref() == Some(case.value.as_str()));
    let ours_name = ours
        .as_ref()
        .and_then(|r| r.get("Name"))
        .and_then(|v| v.as_str())
        .map(str::to_owned);
    match told {
        Said::Ok => {
            if ours_email.as_deref() != Some(case.value.as_str()) {
                return Err(format!("told Ok, but the entity holds {ours_email:?}"));
            }
        }
        Said::Refused(_) => {
            if !unchanged(&ours_email) || ours_name.as_deref() == Some("ours") {
                return Err(format!(
                    "refused, but the entity holds {ours_email:?} (named {ours_name:?})"
                ));
            }
        }
        Said::Unknown => {
            let exactly_ours = ours_email.as_deref() == Some(case.value.as_str());
            if !unchanged(&ours_email) && !exactly_ours {
                return Err(format!("unknown, but the entity holds {ours_email:?}"));
            }
        }
    }
    // The other actor's acknowledged write stands.
    if theirs_ok {
        match other {
            Other::Rival | Other::Takeover if rival_email.as_deref() != Some(case.value.as_str()) => {
                return Err(format!("the rival was told Ok but holds {rival_email:?}"));
            }
            Other::Twin if ours_email.as_deref() != Some(case.value.as_str()) => {
                return Err(format!("the twin was told Ok but the entity holds {ours_email:?}"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Prints the matrix to the terminal (past the test harness's capture of `print!`).
fn print_matrix(env: &Env, tallies: &[((Verb, Other), Tally)]) {
    let mut out = format!(
        "\nreservations on {:?} ({} verbs × {} actors × every request × {} faults per write):\n{:<20} {:>5} {:>6} {:>7}\n",
        env.kind,
        Verb::ALL.len(),
        Other::ALL.len(),
        Fault::ALL.len(),
        "verb × actor",
        "cases",
        "passed",
        "unknown"
    );
    let (mut cases, mut passed, mut unknown) = (0, 0, 0);
    for ((verb, other), t) in tallies {
        out += &format!(
            "{:<20} {:>5} {:>6} {:>7}\n",
            format!("{} × {}", verb.name(), other.name()),
            t.cases,
            t.passed,
            t.unknown
        );
        cases += t.cases;
        passed += t.passed;
        unknown += t.unknown;
    }
    out += &format!("{:<20} {cases:>5} {passed:>6} {unknown:>7}\n", "all");
    let _ = std::io::stderr().write_all(out.as_bytes());
}
