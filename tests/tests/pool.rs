//! A handle over a pool of accounts, on three in-memory accounts and on the
//! Azurite accounts of `UNIFIED_TABLES_TEST_POOL`: queries merged across
//! accounts (order, signed cursors that read each account once, `take`, an
//! account failing mid-query, rows outside their home left out), blob names
//! folded before routing, the descriptor that refuses a wrong pool, the
//! fence of a stale handle, and resharding: everything a partition owns
//! moves, and a job stopped at any of its requests finishes when run again.
//!
//! (The whole conformance suite also runs on a pooled handle, from
//! `conformance.rs`.)

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use sha2::{Digest, Sha256};
use unified_tables::backend::blob::BlobBackend;
use unified_tables::backend::counting::CountingBackend;
use unified_tables::backend::faulty::{FaultTarget, FaultTiming};
use unified_tables::backend::pool::{account_of, PooledBackend};
use unified_tables::backend::{Backend, UpdateMode, WriteOp};
use unified_tables::query::{CmpOp, Filter};
use unified_tables::AnyPartition;
use unified_tables::{
    BlobContent, Cursor, Error, ErrorKind, PoolOptions, QueryOptions, ReshardOptions, RetryPolicy, Row, Store, Tables,
    Value,
};
use unified_tables_tests::gate::{GateBackend, Point};
use unified_tables_tests::model::Document;
use unified_tables_tests::pool::{keys, requests_by_target, scan, Accounts, Reading, World};
use unified_tables_tests::{noise, unique_table};

/// One test at a time touches the Azure accounts' pool descriptors.
static DESCRIPTORS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn readings(partitions: usize, per_partition: usize) -> Vec<Reading> {
    let mut all: Vec<Reading> = (0..partitions)
        .flat_map(|p| {
            (0..per_partition).map(move |r| Reading {
                sensor: format!("sensor-{p:03}"),
                at: format!("{r:04}"),
                value: (p * 1000 + r) as i64,
            })
        })
        .collect();
    all.sort_by(|a, b| (&a.sensor, &a.at).cmp(&(&b.sensor, &b.at)));
    all
}

/// Every row of `store` page by page from `options`, each page at most `size` rows.
async fn page_through(
    store: &Store<Reading>,
    mut options: QueryOptions<Reading, AnyPartition>,
    size: usize,
) -> Vec<Reading> {
    let mut seen = Vec::new();
    loop {
        let page = store.page(options.clone()).await.unwrap();
        assert!(page.items.len() <= size);
        seen.extend(page.items);
        match page.cursor {
            Some(next) => options = options.after(next),
            None => return seen,
        }
    }
}

/// A pooled handle made without a descriptor (the tests that do not check
/// descriptors run side by side).
fn unchecked(accounts: &Accounts) -> Tables {
    let backends: Vec<Arc<dyn Backend>> = accounts
        .rows
        .iter()
        .map(|r| Arc::new(r.clone()) as Arc<dyn Backend>)
        .collect();
    Tables::with_backend(PooledBackend::new(backends).unwrap()).without_blobs()
}

fn no_wait() -> ReshardOptions {
    ReshardOptions::new().fence_wait(Duration::ZERO)
}

fn injected() -> Error {
    Error::service(500, "InternalError", "injected")
}

fn busy() -> Error {
    Error::service(503, "ServerBusy", "The server is busy.")
}

async fn merges_in_key_order_and_each_partition_stays_home(accounts: Accounts) {
    let table = unique_table("merge");
    let store = unchecked(&accounts).store_in::<Reading>(&table);
    let all = readings(24, 5);
    for partition in all.chunks(5) {
        store.create_batch(partition).await.unwrap();
    }
    assert_eq!(store.query(QueryOptions::all()).await.unwrap(), all);
    for i in 0..3 {
        let here = accounts.partitions_in(i, &table).await;
        assert!(!here.is_empty(), "account {i} holds some of 24 partitions");
        for pk in here {
            assert_eq!(account_of(&pk, 3), i, "{pk} in account {i}");
        }
    }
    // A partition query asks only its account.
    accounts.reset_counts();
    let one = store.query(QueryOptions::partition("sensor-007")).await.unwrap();
    assert_eq!(one.len(), 5);
    let home = account_of("sensor-007", 3);
    for (i, counter) in accounts.counters.iter().enumerate() {
        assert_eq!(counter.counts().queries, u64::from(i == home), "account {i}");
    }
}

async fn cursors_resume_across_accounts_and_take_stops_early(accounts: Accounts) {
    let table = unique_table("cursor");
    let store = unchecked(&accounts).store_in::<Reading>(&table);
    let all = readings(20, 3);
    for partition in all.chunks(3) {
        store.create_batch(partition).await.unwrap();
    }
    let seen = page_through(&store, QueryOptions::all().take(7), 7).await;
    assert_eq!(seen, all, "every row once, in key order");
    accounts.reset_counts();
    let first = store.query(QueryOptions::all().take(4)).await.unwrap();
    assert_eq!(first, all[..4]);
    for (i, counter) in accounts.counters.iter().enumerate() {
        assert_eq!(counter.counts().queries, 1, "account {i} asked once for `take(4)`");
    }
}

async fn an_account_failing_mid_query_fails_it_and_resumes_without_loss(accounts: Accounts) {
    let table = unique_table("fail");
    let store = unchecked(&accounts).store_in::<Reading>(&table);
    let all = readings(15, 4);
    for partition in all.chunks(4) {
        store.create_batch(partition).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut options = QueryOptions::all().take(6);
    let first = store.page(options.clone()).await.unwrap();
    seen.extend(first.items);
    options = options.after(first.cursor.expect("more pages"));
    accounts.rows[1].fail_next(FaultTarget::Query, FaultTiming::Before, || {
        Error::service(500, "InternalError", "account 1 failed")
    });
    let err = store.page(options.clone()).await.unwrap_err();
    assert!(err.to_string().contains("account 1 failed"), "{err}");
    seen.extend(page_through(&store, options, 6).await);
    assert_eq!(seen, all, "nothing twice, nothing skipped");
}

/// Ten pages of a filtered query over three accounts, one of which holds
/// no match: the account without a match is asked once, and every account
/// is read once across the pages, by this handle or by another of the pool.
async fn merged_pages_read_each_account_once(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    accounts.forget_pool().await;
    let table = unique_table("once");
    let db = Tables::pooled(accounts.pool(3)).await.unwrap().without_blobs();
    let store = db.store_in::<Reading>(&table);
    let mut matching = 0;
    for p in 0..60 {
        let sensor = format!("sensor-{p:03}");
        let none_here = account_of(&sensor, 3) == 2;
        let rows: Vec<Reading> = (0..3)
            .map(|r| Reading {
                sensor: sensor.clone(),
                at: format!("{r}"),
                value: if none_here { 5000 } else { r },
            })
            .collect();
        matching += if none_here { 0 } else { 3 };
        store.create_batch(&rows).await.unwrap();
    }
    let wanted = || QueryOptions::all().filter(Filter::cmp("Value", CmpOp::Lt, Value::Int64(1000)));
    let size = matching / 10 + 1;
    accounts.reset_counts();
    let mut options = wanted().take(size);
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = store.page(options.clone()).await.unwrap();
        pages += 1;
        seen.extend(page.items);
        match page.cursor {
            Some(next) => options = options.after(next),
            None => break,
        }
    }
    assert_eq!(pages, 10);
    assert_eq!(seen.len(), matching);
    assert!(seen
        .windows(2)
        .all(|w| (&w[0].sensor, &w[0].at) < (&w[1].sensor, &w[1].at)));
    let queries: Vec<u64> = accounts.counters.iter().map(|c| c.counts().queries).collect();
    assert_eq!(queries[2], 1, "the account without a match is asked once: {queries:?}");
    for i in 0..2 {
        let rows = seen.iter().filter(|r| account_of(&r.sensor, 3) == i).count();
        // One request per page of the account's own rows, and one that finds its end.
        assert!(
            queries[i] <= (rows / size + 1) as u64,
            "account {i} read once: {queries:?}, {rows} rows"
        );
    }

    // The pool's other handles (another process) take the same cursors.
    let other = Tables::pooled(accounts.pool(3)).await.unwrap().without_blobs();
    let first = store.page(wanted().take(size)).await.unwrap();
    let cursor = first.cursor.expect("more pages");
    let mut rest = first.items;
    let mut options = wanted().take(size).after(cursor.clone());
    loop {
        let page = other.store_in::<Reading>(&table).page(options.clone()).await.unwrap();
        rest.extend(page.items);
        match page.cursor {
            Some(next) => options = options.after(next),
            None => break,
        }
    }
    assert_eq!(rest, seen);

    // A cursor whose account positions were forged (the store's checksum
    // recomputed, as anyone can) is refused.
    let text = cursor.to_string();
    let (body, _) = text.rsplit_once('.').unwrap();
    let payload = String::from_utf8(base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(body).unwrap()).unwrap();
    let forged_places = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"["Done","Done","Done"]"#);
    let mut lines: Vec<String> = payload.split('\n').map(str::to_owned).collect();
    let (len, key) = lines[1].split_once(':').unwrap();
    let _ = len;
    let forged_key = format!("pool1.{forged_places}");
    assert!(key.starts_with("pool1."), "{key}");
    lines[1] = format!("{}:{forged_key}", forged_key.chars().count());
    let forged = lines.join("\n");
    let sum: String = Sha256::digest(forged.as_bytes())[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let forged: Cursor = format!(
        "{}.{sum}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged.as_bytes())
    )
    .parse()
    .unwrap();
    let err = store.page(wanted().take(size).after(forged)).await.unwrap_err();
    assert!(matches!(err, Error::InvalidCursor(_)), "{err}");
    // So is a cursor sent back with another query.
    let err = store.page(wanted().take(size + 1).after(cursor)).await.unwrap_err();
    assert!(matches!(err, Error::InvalidCursor(_)), "{err}");
    accounts.forget_pool().await;
}

/// A row outside its home account (left by an interrupted reshard) never
/// shows in a merged query.
async fn merged_queries_leave_out_rows_outside_their_home(accounts: Accounts) {
    let table = unique_table("strays");
    let store = unchecked(&accounts).store_in::<Reading>(&table);
    let all = readings(9, 2);
    for partition in all.chunks(2) {
        store.create_batch(partition).await.unwrap();
    }
    let stray = &all[0];
    let elsewhere = (account_of(&stray.sensor, 3) + 1) % 3;
    let row = Row::new(stray.sensor.clone(), stray.at.clone()).with("Value", Value::Int64(-1));
    let op = WriteOp::Upsert {
        row,
        mode: UpdateMode::Replace,
    };
    accounts.rows[elsewhere].execute(&table, op).await.unwrap();
    assert_eq!(store.query(QueryOptions::all()).await.unwrap(), all);
    assert_eq!(page_through(&store, QueryOptions::all().take(3), 3).await, all);
}

/// `a/./b` and `a/b` name one blob, in one account, through a pool.
async fn blob_names_are_folded_before_routing(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    accounts.forget_pool().await;
    let db = Tables::pooled(accounts.pool(3)).await.unwrap();
    let container = format!("fold{}", &unique_table("c")[1..].to_lowercase());
    let files = db.blobs(&container);
    for i in 0..6 {
        let (dotted, folded) = (format!("dir/./name-{i}/x"), format!("dir/name-{i}/x"));
        files.create(&dotted, vec![i]).await.unwrap();
        assert_eq!(files.get(&folded).await.unwrap().expect("one blob").bytes, vec![i]);
        let err = files.create(&folded, vec![9]).await.unwrap_err();
        assert!(matches!(err, Error::BlobAlreadyExists { .. }), "{err}");
        let mut holders = Vec::new();
        for a in 0..3 {
            holders.extend(accounts.blobs_in(a, &container, &folded).await.into_iter().map(|_| a));
        }
        assert_eq!(holders.len(), 1, "{folded} in accounts {holders:?}");
    }
    let lock = db.lock("jobs/./7");
    let guard = lock.acquire(Duration::from_secs(15)).await.unwrap();
    assert!(db
        .lock("jobs/7")
        .try_acquire(Duration::from_secs(15))
        .await
        .unwrap()
        .is_none());
    guard.release().await.unwrap();
    accounts.forget_pool().await;
}

async fn the_descriptor_refuses_a_wrong_pool(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    accounts.forget_pool().await;
    Tables::pooled(accounts.pool(3))
        .await
        .expect("the first open records the pool");
    Tables::pooled(accounts.pool(3))
        .await
        .expect("the same pool opens again");
    let fewer = Tables::pooled(accounts.pool(2)).await.unwrap_err();
    assert_eq!(fewer.kind(), ErrorKind::Invalid);
    assert!(fewer.to_string().contains("3 accounts"), "{fewer}");
    let mut swapped = accounts.pool(3);
    swapped.swap(0, 1);
    let err = Tables::pooled(swapped).await.unwrap_err();
    assert!(err.to_string().contains("position"), "{err}");
    let mut renamed = accounts.pool(3);
    renamed[2].0 = "another".into();
    let err = Tables::pooled(renamed).await.unwrap_err();
    assert!(err.to_string().contains("another"), "{err}");
    accounts.forget_pool().await;
}

async fn resharding_moves_partitions_with_their_large_values(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    accounts.forget_pool().await;
    let table = unique_table("reshard");
    let two = Tables::pooled(accounts.pool(2)).await.unwrap();
    let store = two.store_in::<Document>(&table);
    let mut documents = Vec::new();
    for i in 0..12 {
        let mut doc = Document::new(&format!("customer-{i}"), "doc");
        doc.body = noise(if i % 3 == 0 { 3_200_000 } else { 150_000 }, i); // a blob, or continuation rows
        doc.attachment =
            (i % 4 == 0).then(|| BlobContent::from_bytes(noise(20_000, i + 100).into_bytes(), "text/plain"));
        store.upsert(&mut doc).await.unwrap();
        documents.push(doc);
    }
    let moving: Vec<usize> = (0..12)
        .filter(|i| account_of(&format!("customer-{i}"), 3) == 2)
        .collect();
    assert!(!moving.is_empty(), "some partitions move to the new account");
    // The table is found in the pool's list: no need to name it.
    let report = Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap();
    assert_eq!(report.tables, std::slice::from_ref(&table));
    assert_eq!(report.partitions_moved, moving.len());
    assert!(report.rows_copied >= moving.len());
    assert_eq!(report.rows_removed, report.rows_copied);
    assert_eq!(report.blobs_removed, report.blobs_copied);
    let err = Tables::pooled(accounts.pool(2)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid, "the old pool no longer opens: {err}");
    let three = Tables::pooled(accounts.pool(3)).await.unwrap();
    let store = three.store_in::<Document>(&table);
    for doc in &documents {
        let read = store
            .get((doc.pk.as_str(), "doc"))
            .await
            .unwrap()
            .expect("every document survives");
        assert_eq!(read.body, doc.body, "{}", doc.pk);
        match (&read.attachment, &doc.attachment) {
            (Some(a), Some(b)) => assert_eq!(a.read_all().await.unwrap(), b.read_all().await.unwrap(), "{}", doc.pk),
            (a, b) => assert_eq!(a.is_some(), b.is_some(), "{}", doc.pk),
        }
    }
    for i in 0..3 {
        for pk in accounts.partitions_in(i, &table).await {
            assert_eq!(account_of(&pk, 3), i, "{pk} left behind in account {i}");
        }
    }
    // Running it again finds nothing left to do.
    let again = Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap();
    assert_eq!((again.partitions_moved, again.rows_removed), (0, 0));
    // A table-wide query takes a filter of the service's full size: nothing is added to it.
    let wide = (0..14).fold(Filter::eq("Title", Value::String("none".into())), |f, i| {
        f.or(Filter::eq("Title", Value::String(format!("t{i}"))))
    });
    assert!(store.query(QueryOptions::all().filter(wide)).await.unwrap().is_empty());
    accounts.forget_pool().await;
}

/// A table and a container created by other means (not through the pool)
/// and written through a pooled handle are listed by that handle's first
/// write to them, so a reshard moves them without being told.
async fn tables_and_containers_made_elsewhere_move_once_written_through_the_pool(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    accounts.forget_pool().await;
    let table = unique_table("elsewhere");
    let container = format!("e{}", &unique_table("c")[1..].to_lowercase());
    for i in 0..2 {
        accounts.rows[i].create_table(&table).await.unwrap();
        accounts.blobs[i].create_container(&container).await.unwrap();
    }
    let two = Tables::pooled(accounts.pool(2)).await.unwrap();
    let store = two.store_in::<Reading>(&table);
    let mut rows = Vec::new();
    for sensor in keys("sensor", 3, true).into_iter().chain(keys("sensor", 2, false)) {
        let mut row = Reading {
            sensor,
            at: "000".into(),
            value: 7,
        };
        store.upsert(&mut row).await.unwrap();
        rows.push(row);
    }
    rows.sort_by(|a, b| (&a.sensor, &a.at).cmp(&(&b.sensor, &b.at)));
    let files = two.blobs(&container);
    let names: Vec<String> = keys("file", 3, true)
        .into_iter()
        .chain(keys("file", 1, false))
        .collect();
    for name in &names {
        files.create(name, name.as_bytes().to_vec()).await.unwrap();
    }
    let report = Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap();
    assert!(report.tables.contains(&table), "{report:?}");
    assert!(report.containers.contains(&container), "{report:?}");
    assert_eq!(report.partitions_moved, 3, "{report:?}");
    let three = Tables::pooled(accounts.pool(3)).await.unwrap();
    assert_eq!(
        three
            .store_in::<Reading>(&table)
            .query(QueryOptions::all())
            .await
            .unwrap(),
        rows
    );
    let files = three.blobs(&container);
    for name in &names {
        let found = files.get(name).await.unwrap().expect("every blob moves or stays");
        assert_eq!(found.bytes, name.as_bytes(), "{name}");
    }
    for i in 0..3 {
        for pk in accounts.partitions_in(i, &table).await {
            assert_eq!(account_of(&pk, 3), i, "{pk} left behind in account {i}");
        }
        for name in accounts.blobs_in(i, &container, "").await {
            assert_eq!(account_of(&name, 3), i, "blob {name} left behind in account {i}");
        }
    }
    accounts.forget_pool().await;
}

/// Every request of the job, failed in turn (before it is sent, or after it
/// was applied, its answer lost), then the job run again: the grown pool
/// opens, and every row, blob and lock is in its home account.
async fn a_reshard_stopped_at_any_request_finishes_when_run_again(accounts: Accounts) {
    // In memory each request fails both ways; on Azurite, by turns.
    let both_timings = !accounts.on_azure;
    let _turn = DESCRIPTORS.lock().await;
    let accounts = accounts.with_retry(RetryPolicy::no_retries());
    accounts.forget_pool().await;
    let world = World::write(&accounts).await;
    accounts.reset_counts();
    let report = Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap();
    assert!(report.rows_copied > 0 && report.blobs_copied > 0, "{report:?}");
    let counts: Vec<_> = accounts.counters.iter().map(CountingBackend::counts).collect();
    world.check(&accounts).await;
    let mut cases = 0;
    for (account, counts) in counts.iter().enumerate() {
        for (target, n) in requests_by_target(counts) {
            for k in 0..n as usize {
                let timings: &[FaultTiming] = match (both_timings, k % 2) {
                    (true, _) => &[FaultTiming::Before, FaultTiming::After],
                    (false, 0) => &[FaultTiming::Before],
                    (false, _) => &[FaultTiming::After],
                };
                for &timing in timings {
                    accounts.clear_faults();
                    accounts.forget_pool().await;
                    let world = World::write(&accounts).await;
                    let case = format!("request {k} of {target:?} on account {account}, failed {timing:?}");
                    match target {
                        FaultTarget::Get | FaultTarget::Write | FaultTarget::Transaction | FaultTarget::Query => {
                            accounts.rows[account].fail_after(target, k, timing, injected)
                        }
                        _ => accounts.blobs[account].fail_after(target, k, timing, injected),
                    }
                    let first = Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait()).await;
                    assert_eq!(accounts.pending_faults(), 0, "{case}: the fault fired");
                    assert!(first.is_err(), "{case}: the job stops");
                    Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
                        .await
                        .unwrap_or_else(|e| panic!("{case}, then run again: {e}"));
                    world.check(&accounts).await;
                    cases += 1;
                }
            }
        }
    }
    eprintln!("{cases} runs stopped at one failed request, each finished by the next run");
    assert!(cases > 20, "{cases}");
    accounts.forget_pool().await;
}

/// A job stopped after its copy, whose source then loses a row, deletes the
/// copy of that row when run again.
async fn a_partial_copy_is_repaired_when_run_again(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    let accounts = accounts.with_retry(RetryPolicy::no_retries());
    accounts.forget_pool().await;
    let mut world = World::write(&accounts).await;
    // Account 0's transactions: the freeze, then the switch.
    accounts.rows[0].fail_after(FaultTarget::Transaction, 1, FaultTiming::Before, injected);
    let err = Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    world.forget_a_moving_reading(&accounts).await;
    let report = Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap();
    assert_eq!(report.rows_repaired, 1, "{report:?}");
    assert_eq!(report.rows_copied, 0, "{report:?}");
    world.check(&accounts).await;
    accounts.forget_pool().await;
}

/// A moving lock that is held stops the job, naming it; once released, the
/// job finishes and the lock's tokens go on rising in its new account.
async fn a_held_lock_stops_the_job_naming_it(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    accounts.forget_pool().await;
    let world = World::write(&accounts).await;
    let old = Tables::pooled(accounts.pool(2)).await.unwrap();
    let name = keys("job", 1, true).remove(0);
    let held = old
        .lock(&name)
        .in_container(world.locks.clone())
        .acquire(Duration::from_secs(60))
        .await
        .unwrap();
    let err = Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert!(err.to_string().contains(&name), "{err}");
    let token = held.fencing_token();
    held.release().await.unwrap();
    Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap();
    let new = Tables::pooled(accounts.pool(3)).await.unwrap();
    let guard = new
        .lock(&name)
        .in_container(world.locks.clone())
        .acquire(Duration::from_secs(15))
        .await
        .unwrap();
    assert!(guard.fencing_token() > token);
    guard.release().await.unwrap();
    accounts.forget_pool().await;
}

/// While a job copies, a handle of the old pool writes the partitions that
/// stay and is refused the ones that move; after the switch it is refused
/// every write, naming both epochs, and the grown pool opens.
async fn stale_handles_are_fenced(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    let accounts = accounts.with_retry(RetryPolicy::no_retries());
    accounts.forget_pool().await;
    let world = World::write(&accounts).await;
    let old = Tables::pooled_with(accounts.pool(2), PoolOptions::new().check_interval(Duration::ZERO))
        .await
        .unwrap();
    let readings = old.store_in::<Reading>(&world.readings);
    let write = |sensor: String| {
        let readings = readings.clone();
        async move {
            let mut row = Reading {
                sensor,
                at: "late".into(),
                value: 1,
            };
            readings.upsert(&mut row).await
        }
    };
    // Stop the job in its copy: the first transaction of the new account.
    accounts.rows[2].fail_next(FaultTarget::Transaction, FaultTiming::Before, injected);
    Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap_err();
    let moving = keys("sensor", 1, true).remove(0);
    let staying = keys("sensor", 1, false).remove(0);
    let err = write(moving.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert!(
        err.to_string().contains(&moving) && err.to_string().contains("epoch 2"),
        "{err}"
    );
    write(staying.clone()).await.expect("a partition that stays is written");
    let err = old
        .blobs(&world.files)
        .put(&keys("file", 1, true)[0], vec![1])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid, "a moving blob is frozen too: {err}");
    let err = Tables::pooled(accounts.pool(3)).await.unwrap_err();
    assert!(err.to_string().contains("under way"), "{err}");

    Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap();
    let err = write(staying.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    let text = err.to_string();
    assert!(text.contains("epoch 1") && text.contains("epoch 3"), "{text}");
    let grown = Tables::pooled(accounts.pool(3)).await.unwrap();
    let found = grown
        .store_in::<Reading>(&world.readings)
        .get((staying.as_str(), "late"))
        .await
        .unwrap();
    assert!(found.is_some(), "the write admitted during the copy survives");
    accounts.forget_pool().await;
}

/// One throttled answer to any kind of write of the job is sent again: the
/// job finishes in one run.
async fn a_throttled_answer_does_not_stop_the_job(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    let policy = RetryPolicy::builder()
        .attempts(4)
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .build()
        .unwrap();
    let accounts = accounts.with_retry(policy);
    accounts.forget_pool().await;
    let world = World::write(&accounts).await;
    for account in 0..3 {
        for target in [
            FaultTarget::Transaction,
            FaultTarget::Write,
            FaultTarget::Query,
            FaultTarget::Get,
        ] {
            accounts.rows[account].fail_next(target, FaultTiming::Before, busy);
        }
        for target in [
            FaultTarget::BlobPut,
            FaultTarget::BlobGet,
            FaultTarget::BlobDelete,
            FaultTarget::BlobList,
            FaultTarget::BlobLease,
        ] {
            accounts.blobs[account].fail_next(target, FaultTiming::Before, busy);
        }
    }
    Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap();
    accounts.clear_faults();
    world.check(&accounts).await;
    accounts.forget_pool().await;
}

/// A write admitted before the freeze that lands in its old account after
/// the job copied its row (held there by a gate across the freeze and the
/// copy): the job finds the row changed since its copy, copies it again
/// before it removes it, and the acknowledged write is in the grown pool.
async fn a_write_landing_after_the_copy_is_copied_again_not_lost(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    accounts.forget_pool().await;
    let table = unique_table("late");
    // A partition that moves from account 1 to account 2.
    let sensor = (0..)
        .map(|i| format!("sensor-{i}"))
        .find(|k| account_of(k, 2) == 1 && account_of(k, 3) == 2)
        .unwrap();
    let slow = GateBackend::new(accounts.rows[1].clone());
    let writers = vec![
        (accounts.names[0].clone(), accounts.handle(0)),
        (
            accounts.names[1].clone(),
            Tables::with_backend(slow.clone())
                .with_blobs(accounts.blobs[1].clone(), accounts.values.clone())
                .with_retry(accounts.retry),
        ),
    ];
    let old = Tables::pooled_with(writers, PoolOptions::new().check_interval(Duration::ZERO))
        .await
        .unwrap();
    let store = old.store_in::<Reading>(&table);
    let mut row = Reading {
        sensor: sensor.clone(),
        at: "0001".into(),
        value: 1,
    };
    store.upsert(&mut row).await.unwrap();

    // The write is admitted (the pool is not frozen yet) and held before it reaches the service.
    let write = slow.arm(Point::BeforeWrite);
    let writer = tokio::spawn({
        let store = store.clone();
        async move {
            let mut row = Reading {
                sensor,
                at: "0001".into(),
                value: 2,
            };
            store.upsert(&mut row).await
        }
    });
    write.reached.await.unwrap();

    // The job freezes the partition and copies it; held once the copy is written.
    let copying = GateBackend::new(accounts.rows[2].clone());
    let copied = copying.arm(Point::AfterWrite);
    let mut grown = accounts.pool(3);
    grown[2].1 = Tables::with_backend(copying.clone())
        .with_blobs(accounts.blobs[2].clone(), accounts.values.clone())
        .with_retry(accounts.retry);
    let job = tokio::spawn(Tables::reshard_with(accounts.pool(2), grown, no_wait()));
    copied.reached.await.unwrap();
    let copy = scan(&accounts.rows[2], &table).await;
    assert_eq!(copy.len(), 1, "the copy is made");
    assert_eq!(
        copy[0].get("Value"),
        Some(&Value::Int64(1)),
        "of the version before the write"
    );

    // The write lands in the old account after the copy, and its caller is told it succeeded.
    write.release.send(()).unwrap();
    writer.await.unwrap().expect("the write is acknowledged");
    copied.release.send(()).unwrap();
    let report = job.await.unwrap().unwrap();
    assert_eq!(report.rows_recopied, 1, "{report:?}");
    assert_eq!((report.rows_copied, report.rows_removed), (1, 1), "{report:?}");

    let three = Tables::pooled(accounts.pool(3)).await.unwrap();
    let found = three
        .store_in::<Reading>(&table)
        .get((row.sensor.as_str(), "0001"))
        .await
        .unwrap()
        .expect("the row moved");
    assert_eq!(found.value, 2, "the acknowledged write is in the grown pool");
    assert!(scan(&accounts.rows[1], &table).await.is_empty(), "nothing left behind");
    accounts.forget_pool().await;
}

/// From the switch until the job has removed them from their old accounts,
/// the moved partitions stay frozen: a handle of the grown pool refuses
/// writes to them and writes the others; once the job is finished, it
/// writes them too.
async fn moved_partitions_stay_frozen_until_they_are_removed(accounts: Accounts) {
    let _turn = DESCRIPTORS.lock().await;
    let accounts = accounts.with_retry(RetryPolicy::no_retries());
    accounts.forget_pool().await;
    let world = World::write(&accounts).await;
    // Stop the job after its switch: account 0's transactions are the
    // freeze, the switch, then its removals and the job's end.
    accounts.rows[0].fail_after(FaultTarget::Transaction, 2, FaultTiming::Before, injected);
    Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap_err();
    let grown = Tables::pooled_with(accounts.pool(3), PoolOptions::new().check_interval(Duration::ZERO))
        .await
        .unwrap();
    let readings = grown.store_in::<Reading>(&world.readings);
    let write = |sensor: String| {
        let readings = readings.clone();
        async move {
            let mut row = Reading {
                sensor,
                at: "after".into(),
                value: 1,
            };
            readings.upsert(&mut row).await
        }
    };
    let moved = keys("sensor", 1, true).remove(0);
    let staying = keys("sensor", 1, false).remove(0);
    let err = write(moved.clone()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Invalid);
    assert!(
        err.to_string().contains(&moved) && err.to_string().contains("removing"),
        "{err}"
    );
    write(staying).await.expect("a partition that stayed is written");

    Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap();
    write(moved)
        .await
        .expect("a moved partition is written once the job is done");
    accounts.forget_pool().await;
}

/// A pool of Cosmos DB for Table accounts: a query over every account
/// returns every row once, in key order, and pages with cursors return every
/// row once (in the service's order); a reshard, which reads in key order,
/// is refused naming the account, before anything is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pool_of_cosmos_accounts_reads_every_row_once_and_refuses_a_reshard() {
    let accounts = Accounts::cosmos();
    let table = unique_table("cosmospool");
    let store = unchecked(&accounts).store_in::<Reading>(&table);
    let all = readings(24, 5);
    for partition in all.chunks(5) {
        store.create_batch(partition).await.unwrap();
    }
    assert_eq!(
        store.query(QueryOptions::all()).await.unwrap(),
        all,
        "every row once, in key order"
    );
    assert_eq!(
        store.query(QueryOptions::all().take(7)).await.unwrap(),
        all[..7],
        "the first seven in key order"
    );
    let mut paged = page_through(&store, QueryOptions::all().take(9), 9).await;
    paged.sort_by(|a, b| (&a.sensor, &a.at).cmp(&(&b.sensor, &b.at)));
    assert_eq!(paged, all, "every row once over the pages");

    accounts.reset_counts();
    let err = Tables::reshard_with(accounts.pool(2), accounts.pool(3), no_wait())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Config { .. }), "{err}");
    assert!(
        err.to_string().contains("no order") && err.to_string().contains("copy"),
        "{err}"
    );
    let writes: u64 = accounts
        .counters
        .iter()
        .map(|c| c.counts().writes + c.counts().transactions + c.counts().tables)
        .sum();
    assert_eq!(writes, 0, "nothing was written");
}

macro_rules! on_both {
    ($($name:ident),* $(,)?) => {
        mod memory {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name(Accounts::memory()).await;
                }
            )*
        }
        mod azure {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(accounts) = Accounts::azure() else { return };
                    super::$name(accounts).await;
                }
            )*
        }
    };
}

on_both!(
    merges_in_key_order_and_each_partition_stays_home,
    cursors_resume_across_accounts_and_take_stops_early,
    an_account_failing_mid_query_fails_it_and_resumes_without_loss,
    merged_pages_read_each_account_once,
    merged_queries_leave_out_rows_outside_their_home,
    blob_names_are_folded_before_routing,
    the_descriptor_refuses_a_wrong_pool,
    resharding_moves_partitions_with_their_large_values,
    tables_and_containers_made_elsewhere_move_once_written_through_the_pool,
    a_reshard_stopped_at_any_request_finishes_when_run_again,
    a_partial_copy_is_repaired_when_run_again,
    a_held_lock_stops_the_job_naming_it,
    stale_handles_are_fenced,
    a_throttled_answer_does_not_stop_the_job,
    a_write_landing_after_the_copy_is_copied_again_not_lost,
    moved_partitions_stay_frozen_until_they_are_removed,
);
