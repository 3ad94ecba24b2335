//! Exactly once against every interleaving: every write verb × everything
//! another writer can do between our write and our read-back × every kind
//! of doubt, each case checked against a model of the two operations.
//!
//! The property: **a resend never undoes another writer's acknowledged
//! write, a version reported to the caller is one this call wrote, and a
//! call says `OutcomeUnknown` only where the store's docs say it may** (no
//! row holds the write's token, no row written on condition of a version
//! still has it, or does with no attempt left, and it is not a delete whose
//! rows are all gone). Each case:
//!
//! 1. writes the rows the verb starts from (through a handle without faults);
//! 2. plans the fault on the verb's first write request: [`Doubt::Lost`]
//!    (applied, answer lost) or [`Doubt::Late`] (answered 500 now, applied
//!    after the store's next request, with 1 or 4 attempts);
//! 3. lets the other writer act ([`Other`]) right after that request is
//!    answered, and reads what a read-back would find;
//! 4. lands any write still held, reads the rows, and checks that ours
//!    first, theirs first, or theirs alone (when ours claims no effect or an
//!    unknown outcome) explains what each side was told and how the rows
//!    end ([`model::check`]).
//!
//! The matrix it prints (to the terminal, past the test harness's capture):
//! cases, passed, and how many ended as `OutcomeUnknown`, per verb.

mod model;
mod verbs;
mod world;

pub use world::{Doubt, Other};

use std::io::Write as _;
use std::time::Duration;

use unified_tables::backend::faulty::FaultyBackend;
use unified_tables::backend::Backend;
use unified_tables::{RetryPolicy, Tables};

use self::model::{cells_of, check, Model, Observed, Said};
use self::verbs::Verb;
use self::world::Interleave;
use crate::{blob_options, Env};

/// A policy of `attempts` with pauses of 1 to 5 ms.
fn policy(attempts: u32) -> RetryPolicy {
    RetryPolicy::builder()
        .attempts(attempts)
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .build()
        .expect("a valid policy")
}

/// One row of the printed matrix.
#[derive(Default)]
struct Tally {
    cases: usize,
    passed: usize,
    unknown: usize,
}

pub async fn every_write_is_settled_exactly_once_against_every_interleaving(env: &Env) {
    let raw = env.backend().clone();
    let faulty = FaultyBackend::new(raw.clone());
    let interleave = Interleave::new(faulty.clone(), raw.clone());
    // The start of each case is written without faults.
    let clean = env.tables.clone().without_cache();
    let mut tallies: Vec<(Verb, Tally)> = Verb::ALL.iter().map(|v| (*v, Tally::default())).collect();
    let mut failures = Vec::new();
    let mut n = 0;
    for doubt in Doubt::ALL {
        let mut tables = Tables::with_backend(interleave.clone())
            .without_cache()
            .with_retry(policy(doubt.attempts()));
        if let Some(blobs) = env.blobs.clone() {
            tables = tables.with_blobs(blobs, blob_options());
        }
        for (verb, tally) in tallies.iter_mut() {
            for other in Other::ALL {
                n += 1;
                let pk = format!("i{n:03}");
                let start = verb.start();
                let prepared = verb.seed(&clean, &env.table, &pk).await;
                let heard_before = faulty.swallowed().len();
                interleave.arm(other, &pk, "r0");
                doubt.plan(&faulty, verb.target());
                let (said, etag) = verb.run(&tables, &env.table, &pk, prepared).await;
                faulty.land_held().await;
                let unfired = faulty.pending();
                faulty.clear();
                let log = interleave.take_log();
                let case = format!("{} × {} × {}", verb.name(), other.name(), doubt.name());
                if unfired > 0 || !log.acted {
                    failures.push(format!(
                        "{case}: the call made no write request for the fault to land on"
                    ));
                    continue;
                }
                let mut end = Model::default();
                for rk in verb.keys() {
                    if let Some(row) = raw.get(&env.table, &pk, rk).await.expect("a read of the end") {
                        end.put(rk, cells_of(&row));
                    }
                }
                let mut ours = log.ours;
                for s in &faulty.swallowed()[heard_before..] {
                    if let Ok(outcomes) = &s.answer {
                        ours.extend(outcomes.iter().filter_map(|o| o.etag.clone()));
                    }
                }
                let seen = Observed {
                    said,
                    etag,
                    other: log.other.expect("the other writer acted"),
                    end,
                    evidence: log.evidence,
                    ours,
                };
                tally.cases += 1;
                match check(&*verb, other, doubt, &start, &seen) {
                    Ok(()) => {
                        tally.passed += 1;
                        if seen.said == Said::Unknown {
                            tally.unknown += 1;
                        }
                    }
                    Err(why) => failures.push(format!("{case}: {why}")),
                }
            }
        }
    }
    print_matrix(env, &tallies);
    assert!(
        failures.is_empty(),
        "{} of {n} interleavings break the exactly-once rule:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Prints the matrix to the terminal (past the test harness's capture of `print!`).
fn print_matrix(env: &Env, tallies: &[(Verb, Tally)]) {
    let mut out = format!(
        "\ninterleavings on {:?} ({} × {} others × {} doubts):\n{:<22} {:>5} {:>6} {:>7}\n",
        env.kind,
        Verb::ALL.len(),
        Other::ALL.len(),
        Doubt::ALL.len(),
        "verb",
        "cases",
        "passed",
        "unknown"
    );
    let (mut cases, mut passed, mut unknown) = (0, 0, 0);
    for (verb, t) in tallies {
        out += &format!("{:<22} {:>5} {:>6} {:>7}\n", verb.name(), t.cases, t.passed, t.unknown);
        cases += t.cases;
        passed += t.passed;
        unknown += t.unknown;
    }
    out += &format!("{:<22} {cases:>5} {passed:>6} {unknown:>7}\n", "all");
    let _ = std::io::stderr().write_all(out.as_bytes());
}
