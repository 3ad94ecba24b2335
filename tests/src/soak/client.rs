//! One soak client's operations and how each answer is recorded.

use std::collections::BTreeSet;

use rand::Rng as _;
use unified_tables::{Error, ErrorKind, QueryOptions, Tables};

use super::{list_hash, ClientLog, Op, Reported, SoakConfig, SoakCounter, SoakHistory, SoakItem, SoakLarge};

fn record(log: &mut ClientLog, err: &Error) -> Reported {
    match err.kind() {
        ErrorKind::OutcomeUnknown => {
            log.unknown += 1;
            Reported::Unknown
        }
        ErrorKind::PreconditionFailed => {
            log.gave_up += 1;
            Reported::Failed
        }
        kind => {
            log.failed += 1;
            if matches!(err, Error::Integrity { .. }) || kind == ErrorKind::Damaged {
                log.integrity += 1;
            }
            if log.errors.len() < 20 {
                log.errors.push(err.to_string());
            }
            Reported::Failed
        }
    }
}

/// One client: where it writes, the mix and its record.
pub(super) struct Client<'a> {
    pub(super) tables: &'a Tables,
    pub(super) table: &'a str,
    pub(super) config: &'a SoakConfig,
    pub(super) client: usize,
    pub(super) rng: rand::rngs::StdRng,
    pub(super) log: ClientLog,
}

pub(super) async fn one_op(c: &mut Client<'_>, seq: u64, op: Op) {
    let Client {
        tables,
        table,
        config,
        client,
        rng,
        log,
    } = c;
    let (tables, table, config, client) = (*tables, *table, *config, *client);
    match op {
        Op::Increment => {
            let n = rng.gen_range(0..config.counters);
            let result = tables
                .store_in::<SoakCounter>(table)
                .mutate(("c", format!("c{n}").as_str()), |c| c.value += 1)
                .await;
            let entry = log.increments.entry(n).or_default();
            match result.as_ref().map_err(|e| e.kind()) {
                Ok(_) => entry.0 += 1,
                Err(ErrorKind::OutcomeUnknown) => entry.1 += 1,
                Err(_) => {}
            }
            if let Err(e) = result {
                record(log, &e);
            }
        }
        Op::Append => {
            let n = rng.gen_range(0..config.histories);
            let id = format!("{client}.{seq}");
            let result = tables
                .store_in::<SoakHistory>(table)
                .mutate(("h", format!("h{n}").as_str()), |h| h.ids.push(id.clone()))
                .await;
            let reported = match result {
                Ok(_) => Reported::Ok,
                Err(e) => record(log, &e),
            };
            log.appends.entry(n).or_default().push((id, reported));
        }
        Op::Create => {
            let rk = format!("n{seq}");
            let mut item = SoakItem {
                pk: format!("i{client}"),
                rk: rk.clone(),
                payload: format!("item {client} {seq}"),
                etag: None,
            };
            match tables.store_in::<SoakItem>(table).create(&mut item).await {
                Ok(_) => {
                    log.items.insert(rk);
                }
                Err(e) => {
                    if record(log, &e) == Reported::Unknown {
                        log.maybe_items.insert(rk);
                    }
                }
            }
        }
        Op::Delete => {
            let Some(rk) = log.items.iter().next().cloned() else {
                return;
            };
            let pk = format!("i{client}");
            match tables
                .store_in::<SoakItem>(table)
                .delete((pk.as_str(), rk.as_str()))
                .await
            {
                Ok(_) => {
                    log.items.remove(&rk);
                }
                Err(e) => {
                    if record(log, &e) == Reported::Unknown {
                        log.items.remove(&rk);
                        log.maybe_items.insert(rk);
                    }
                }
            }
        }
        Op::Query => {
            let pk = format!("i{client}");
            match tables
                .store_in::<SoakItem>(table)
                .query(QueryOptions::partition(pk))
                .await
            {
                Ok(found) => {
                    let found: BTreeSet<String> = found.into_iter().map(|i| i.rk).collect();
                    let missing = log.items.difference(&found).next();
                    let extra = found
                        .iter()
                        .find(|rk| !log.items.contains(*rk) && !log.maybe_items.contains(*rk));
                    if missing.is_some() || extra.is_some() {
                        log.bad_queries.push(format!(
                            "client {client}: a query misses {missing:?} or returns {extra:?}"
                        ));
                    }
                }
                Err(e) => {
                    record(log, &e);
                }
            }
        }
        Op::ReadHistory => {
            let n = rng.gen_range(0..config.histories);
            match tables
                .store_in::<SoakHistory>(table)
                .get(("h", format!("h{n}").as_str()))
                .await
            {
                Ok(Some(h)) => log.reads.push((n, h.ids.len(), list_hash(&h.ids))),
                Ok(None) => log.errors.push(format!("history h{n} is gone")),
                Err(e) => {
                    record(log, &e);
                }
            }
        }
        Op::Large => {
            let version = seq as i64;
            let chars = rng.gen_range(1_000..=config.large_chars.max(1_000));
            let store = tables.store_in::<SoakLarge>(table);
            let mut doc = SoakLarge::at(client, version, chars);
            let written = match store.upsert(&mut doc).await {
                Ok(_) => {
                    log.large = (Some(version), Vec::new());
                    true
                }
                Err(e) => {
                    if record(log, &e) == Reported::Unknown {
                        log.large.1.push(version);
                    }
                    false
                }
            };
            match store.get(("l", format!("l{client}").as_str())).await {
                Ok(Some(back))
                    if (!written || back.version == version)
                        && back.body == SoakLarge::at(client, back.version, back.body.len()).body => {}
                Ok(other) => log.errors.push(format!(
                    "client {client}: the large value reads as {:?}, not a version written",
                    other.map(|d| d.version)
                )),
                Err(e) => {
                    record(log, &e);
                }
            }
        }
    }
}
