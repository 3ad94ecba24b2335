//! The verdict of a soak: the table against what every client recorded.

use std::collections::BTreeMap;

use unified_tables::{QueryOptions, Tables};

use super::{list_hash, Reported, SoakCounter, SoakHistory, SoakItem, SoakLarge, SoakRun};

/// What the check found.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Operations run.
    pub ops: usize,
    /// Operations that reported success.
    pub ok: usize,
    /// `OutcomeUnknown` answers.
    pub unknown: usize,
    /// Increments and appends reported applied and not found.
    pub lost: u64,
    /// Increments and appends found more often than they could have been applied.
    pub doubled: u64,
    /// `Integrity` errors.
    pub integrity: usize,
    /// `mutate` calls that gave up under contention.
    pub gave_up: usize,
    /// Latency percentiles over every operation, in milliseconds: (p50, p99).
    pub latency_ms: (f64, f64),
    /// Resident memory: the largest sample just after warm-up and in the last
    /// quarter of the run, in bytes.
    pub memory: (u64, u64),
    /// Everything that is wrong, one line each.
    pub violations: Vec<String>,
}

impl Verdict {
    /// Operations per second of the run: those finished within its
    /// duration, over the duration (the last operations of the clients,
    /// started before the deadline and finished after it, show in the
    /// latencies and [`SoakRun::elapsed`], not in the rate).
    pub fn rate(&self, run: &SoakRun) -> f64 {
        let done: usize = run.logs.iter().map(|l| l.in_window).sum();
        done as f64 / run.config.duration.as_secs_f64()
    }
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    f64::from(sorted[at]) / 1000.0
}

/// Reads the final state of `table` and checks it against `run`'s records.
pub async fn check(tables: &Tables, table: &str, run: &SoakRun) -> unified_tables::Result<Verdict> {
    let mut v = Verdict::default();
    let mut all: Vec<u32> = run
        .logs
        .iter()
        .flat_map(|l| l.latencies.values().flatten().copied())
        .collect();
    all.sort_unstable();
    v.ops = all.len();
    v.latency_ms = (percentile(&all, 0.50), percentile(&all, 0.99));
    for log in &run.logs {
        v.unknown += log.unknown;
        v.integrity += log.integrity;
        v.gave_up += log.gave_up;
        v.violations
            .extend(log.errors.iter().map(|e| format!("an operation failed: {e}")));
        v.violations.extend(log.bad_queries.iter().cloned());
    }
    v.ok = v
        .ops
        .saturating_sub(v.unknown + v.gave_up + run.logs.iter().map(|l| l.failed).sum::<usize>());
    if run.config.expect_settled && v.unknown > 0 {
        v.violations.push(format!(
            "{} writes reported OutcomeUnknown; every lost answer should be settled",
            v.unknown
        ));
    }

    // Counters: the increments reported, no more (but the unknown ones) and no fewer.
    let counters = tables.store_in::<SoakCounter>(table);
    for n in 0..run.config.counters {
        let (ok, unknown) = run.logs.iter().fold((0, 0), |(a, b), l| {
            let (x, y) = l.increments.get(&n).copied().unwrap_or_default();
            (a + x, b + y)
        });
        let value = counters
            .get(("c", format!("c{n}").as_str()))
            .await?
            .map_or(0, |c| c.value) as u64;
        if value < ok {
            v.lost += ok - value;
            v.violations
                .push(format!("counter c{n} is {value}; {ok} increments reported success"));
        }
        if value > ok + unknown {
            v.doubled += value - ok - unknown;
            v.violations.push(format!(
                "counter c{n} is {value}; {ok} increments reported success and {unknown} an unknown outcome"
            ));
        }
    }

    // Histories: each id reported appended once, exactly once; an unknown
    // one at most once; a failed one never; each client's ids in its order;
    // every read a prefix of the final list.
    let histories = tables.store_in::<SoakHistory>(table);
    for n in 0..run.config.histories {
        let ids = histories
            .get(("h", format!("h{n}").as_str()))
            .await?
            .map(|h| h.ids)
            .unwrap_or_default();
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for id in &ids {
            *seen.entry(id.as_str()).or_default() += 1;
        }
        for (client, log) in run.logs.iter().enumerate() {
            let mine = log.appends.get(&n).map(Vec::as_slice).unwrap_or_default();
            for (id, reported) in mine {
                let count = seen.remove(id.as_str()).unwrap_or(0);
                let allowed = match reported {
                    Reported::Ok => 1..=1,
                    Reported::Unknown => 0..=1,
                    Reported::Failed => 0..=0,
                };
                if !allowed.contains(&count) {
                    if count < *allowed.start() {
                        v.lost += 1;
                    } else {
                        v.doubled += (count - allowed.end()) as u64;
                    }
                    v.violations
                        .push(format!("h{n}: id {id} ({reported:?}) appears {count} times"));
                }
            }
            // The client's own ids appear in the order it appended them.
            let order: Vec<u64> = ids
                .iter()
                .filter_map(|id| id.split_once('.'))
                .filter(|(c, _)| c.parse() == Ok(client))
                .filter_map(|(_, s)| s.parse().ok())
                .collect();
            if order.windows(2).any(|w| w[0] >= w[1]) {
                v.violations
                    .push(format!("h{n}: client {client}'s ids are out of order"));
            }
            for (h, len, hash) in &log.reads {
                if *h == n && (*len > ids.len() || list_hash(&ids[..*len]) != *hash) {
                    v.violations.push(format!(
                        "h{n}: client {client} read {len} ids that are not a prefix of the final list"
                    ));
                }
            }
        }
        for (id, count) in seen {
            v.doubled += count as u64;
            v.violations
                .push(format!("h{n}: id {id} appears {count} times but was never appended"));
        }
    }

    // Items: exactly those the record says, give or take the unknown ones.
    let items = tables.store_in::<SoakItem>(table);
    let large = tables.store_in::<SoakLarge>(table);
    for (client, log) in run.logs.iter().enumerate() {
        let found = items.query(QueryOptions::partition(format!("i{client}"))).await?;
        let found: std::collections::BTreeSet<String> = found.into_iter().map(|i| i.rk).collect();
        for rk in log.items.difference(&found) {
            v.violations.push(format!("client {client}: item {rk} is missing"));
        }
        for rk in found
            .iter()
            .filter(|rk| !log.items.contains(*rk) && !log.maybe_items.contains(*rk))
        {
            v.violations
                .push(format!("client {client}: item {rk} should not exist"));
        }
        let got = large
            .get(("l", format!("l{client}").as_str()))
            .await?
            .map(|d| d.version);
        let (last, later) = &log.large;
        if got != *last && !got.is_some_and(|g| later.contains(&g)) {
            v.violations.push(format!(
                "client {client}: the large value is version {got:?}, last written {last:?}"
            ));
        }
    }

    // Memory: the last quarter against just after warm-up (the first quarter).
    let secs = run.elapsed.as_secs_f64();
    let peak = |from: f64, to: f64| {
        run.memory
            .iter()
            .filter(|(t, _)| *t >= from * secs && *t <= to * secs)
            .map(|(_, b)| *b)
            .max()
            .unwrap_or(0)
    };
    v.memory = (peak(0.25, 0.5), peak(0.75, 1.0));
    Ok(v)
}
