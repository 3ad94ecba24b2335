//! Soak under faults: 8 clients for 10 s on Azure / Azurite through the
//! fault proxy, which drops the answer of 1 % of the writes after the
//! service applied them and resets 0.5 % of all connections before the
//! request is forwarded (`UNIFIED_TABLES_SOAK_CLIENTS`,
//! `UNIFIED_TABLES_SOAK_SECS`, `UNIFIED_TABLES_SOAK_DROP_PER_MILLION` and
//! `UNIFIED_TABLES_SOAK_RESET_PER_MILLION` set a longer or harsher run). The mix and the checks are in
//! `unified_tables_tests::soak`: every counter equals the increments that
//! reported success (plus at most the few that answered `OutcomeUnknown`: a
//! conditional write overtaken by another writer before its read-back),
//! every appended id that reported success appears exactly once and none
//! more than once, every read is a prefix of the final
//! history, no `Integrity` error, and resident memory does not grow after
//! warm-up.
//!
//! Azure only: the in-memory backend has no network to lose answers on
//! (its lost answers are the `FaultyBackend` scenarios of the suite).

use std::time::Duration;

use unified_tables_tests::fault_proxy::{proxied_env, Fault, Kinds};
use unified_tables_tests::soak::{check, prepare, run, SoakConfig};

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clients_under_lost_answers_lose_and_double_nothing() {
    let Some((env, proxy)) = proxied_env("soak", 0x50A6).await else {
        return;
    };
    let clients = env_number("UNIFIED_TABLES_SOAK_CLIENTS", 8) as usize;
    let secs = env_number("UNIFIED_TABLES_SOAK_SECS", 10);
    let rate = env_number("UNIFIED_TABLES_SOAK_DROP_PER_MILLION", 10_000) as u32;
    let resets = env_number("UNIFIED_TABLES_SOAK_RESET_PER_MILLION", 5_000) as u32;
    let config = SoakConfig::new(clients, Duration::from_secs(secs));
    prepare(&env.tables, &env.table, &config)
        .await
        .expect("the counters and histories");
    proxy.set_rate(Kinds::WRITES, Fault::DropAnswer, rate);
    proxy.set_rate(Kinds::TABLE_DATA, Fault::ResetBeforeForward, resets);
    let soak = run(&env.tables, &env.table, &config).await;
    proxy.clear();
    let verdict = check(&env.tables, &env.table, &soak)
        .await
        .expect("the final state reads");
    let faults = proxy.counts();
    eprintln!(
        "soak: {clients} clients × {secs} s: {} ops ({:.0}/s), {} ok, {} unknown, {} mutates gave up; {} write answers dropped and {} connections reset of {} requests; lost {} doubled {}; p50 {:.1} ms p99 {:.1} ms; most in flight {}; resident {:.1} MiB after warm-up, {:.1} MiB at the end",
        verdict.ops,
        verdict.rate(&soak),
        verdict.ok,
        verdict.unknown,
        verdict.gave_up,
        faults.dropped_write_answers,
        faults.resets,
        faults.requests,
        verdict.lost,
        verdict.doubled,
        verdict.latency_ms.0,
        verdict.latency_ms.1,
        soak.max_in_flight,
        verdict.memory.0 as f64 / 1048576.0,
        verdict.memory.1 as f64 / 1048576.0,
    );
    assert!(verdict.violations.is_empty(), "{:#?}", verdict.violations);
    assert_eq!((verdict.lost, verdict.doubled, verdict.integrity), (0, 0, 0));
    assert!(soak.max_in_flight > 1, "the clients overlapped");
    assert!(
        rate == 0 || faults.dropped_write_answers > 0,
        "answers were dropped: {faults:?}"
    );
    // An unknown outcome only where an answer was lost and the token could
    // not settle it (another writer changed the row before the read-back).
    assert!(
        verdict.unknown as u64 <= faults.dropped_write_answers + faults.resets,
        "{} unknown outcomes for {faults:?}",
        verdict.unknown
    );
    let (warm, end) = verdict.memory;
    assert!(
        end <= warm + (warm / 5).max(32 << 20),
        "resident memory grew after warm-up: {warm} → {end} bytes"
    );
}
