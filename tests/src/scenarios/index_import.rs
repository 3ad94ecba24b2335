//! The operator's tools and unique global values: an import reserves them
//! as the store's writes do (a taken value is refused, naming the entity
//! and the index, never the value), a replacing import over drifted index
//! rows succeeds and resumes, and `fsck --repair` leaves the reservation of
//! a write still in flight.

use unified_tables::admin::{Admin, ExportOptions, Finding, FsckOptions, ImportMode, ImportOptions, Stop};
use unified_tables::backend::{Backend, IfMatch, WriteOp};
use unified_tables::{ETag, Error, TableEntity, Tables};

use crate::gate::{GateBackend, Point};
use crate::index_model::{all_rows, divergence};
use crate::scenarios::index_partition_delete::Badge;
use crate::Env;

/// A badge as a program without indexes wrote it: the same columns.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct PlainBadge {
    #[table(partition_key)]
    pub team: String,
    #[table(row_key)]
    pub id: String,
    pub code: String,
    pub handle: String,
    pub country: String,
    #[table(etag)]
    pub etag: Option<ETag>,
}

pub fn plain(team: &str, id: &str, code: &str, handle: &str) -> PlainBadge {
    PlainBadge {
        team: team.into(),
        id: id.into(),
        code: code.into(),
        handle: handle.into(),
        country: "UA".into(),
        etag: None,
    }
}

/// Exports `badges`, written without indexes into a table of their own.
pub async fn exported(env: &Env, badges: Vec<PlainBadge>) -> std::path::PathBuf {
    let source = env.another_table();
    let store = env.tables.store_in::<PlainBadge>(&source);
    for mut b in badges {
        store.create(&mut b).await.unwrap();
    }
    let dir = crate::scenarios::admin::scratch_dir("ixglobal");
    Admin::new(&env.tables, &source)
        .unwrap()
        .export(&dir, ExportOptions::default())
        .await
        .unwrap();
    dir
}

async fn assert_clean(env: &Env, table: &str, when: &str) {
    let store = env.tables.store_in::<Badge>(table);
    store.settle_indexes().await;
    store.apply_index_intents(None).await.unwrap();
    let wrong = divergence(Badge::INDEXES, &all_rows(env.backend(), table).await);
    assert!(wrong.is_empty(), "{when}: {}", wrong.join("\n"));
}

fn refused_on_handle(err: &Error, value: &str) {
    let text = format!("{err} {:?}", std::error::Error::source(err).map(|s| s.to_string()));
    assert!(
        matches!(err, Error::BatchFailed { source, .. } if matches!(**source, Error::UniqueViolation { ref index, .. } if index == "handle")),
        "{err}"
    );
    assert!(!text.contains(value), "the refusal shows the value: {text}");
}

pub async fn import_refuses_a_taken_unique_global_value(env: &Env) {
    // Two imported entities with one handle (in two partitions, so two transactions).
    let dir = exported(
        env,
        vec![
            plain("p1", "a", "ca", "dup-handle"),
            plain("p2", "b", "cb", "dup-handle"),
        ],
    )
    .await;
    let target = env.another_table();
    let admin = Admin::new(&env.tables, &target).unwrap();
    let options = || ImportOptions {
        indexes: Badge::INDEXES,
        ..ImportOptions::default()
    };
    let err = admin.import(&dir, options()).await.unwrap_err();
    refused_on_handle(&err, "dup-handle");
    assert!(
        matches!(&err, Error::BatchFailed { partition_key, row_key, .. } if (partition_key.as_str(), row_key.as_str()) == ("p2", "b")),
        "{err}"
    );
    let store = env.tables.store_in::<Badge>(&target);
    let holder = Badge::get_by_handle(&store, "dup-handle")
        .await
        .unwrap()
        .expect("one holder");
    assert_eq!((holder.team.as_str(), holder.id.as_str()), ("p1", "a"));
    assert!(
        store.get(("p2", "b")).await.unwrap().is_none(),
        "nothing of the refused entity is written"
    );
    assert_clean(env, &target, "after a refused duplicate").await;

    // Against an entity the target holds already.
    let target = env.another_table();
    let store = env.tables.store_in::<Badge>(&target);
    store
        .create(&mut Badge::new("x", "z", "cz", "taken-handle"))
        .await
        .unwrap();
    let dir = exported(env, vec![plain("p1", "c", "cc", "taken-handle")]).await;
    let err = Admin::new(&env.tables, &target)
        .unwrap()
        .import(&dir, options())
        .await
        .unwrap_err();
    refused_on_handle(&err, "taken-handle");
    let holder = Badge::get_by_handle(&store, "taken-handle")
        .await
        .unwrap()
        .expect("one holder");
    assert_eq!((holder.team.as_str(), holder.id.as_str()), ("x", "z"));
    assert!(store.get(("p1", "c")).await.unwrap().is_none());
    assert_clean(env, &target, "after a refused taken value").await;
}

pub async fn import_replacing_over_drifted_index_rows_succeeds_and_resumes(env: &Env) {
    let target = env.another_table();
    let store = env.tables.store_in::<Badge>(&target);
    for (team, id, code) in [("p1", "a", "ca"), ("p2", "b", "cb")] {
        store
            .create(&mut Badge::new(team, id, code, &format!("{id}-handle")))
            .await
            .unwrap();
    }
    // Drift: each entity's local index row is gone.
    for (team, code) in [("p1", "ca"), ("p2", "cb")] {
        let op = WriteOp::Delete {
            partition_key: team.into(),
            row_key: format!("~ix|code|{code}!"),
            condition: IfMatch::Any,
        };
        env.backend().execute(&target, op).await.unwrap();
    }
    let dir = exported(
        env,
        vec![
            plain("p1", "a", "ca2", "a-handle2"),
            plain("p2", "b", "cb2", "b-handle2"),
        ],
    )
    .await;
    let admin = Admin::new(&env.tables, &target).unwrap();
    let stop = Stop::default();
    stop.raise();
    let options = |resume: bool, stop: Stop| ImportOptions {
        mode: ImportMode::Replace,
        indexes: Badge::INDEXES,
        resume,
        stop,
        ..ImportOptions::default()
    };
    let first = admin.import(&dir, options(false, stop)).await.unwrap();
    assert!(first.interrupted, "{first:?}");
    let rest = admin.import(&dir, options(true, Stop::default())).await.unwrap();
    assert_eq!(first.written + rest.written, 2, "{first:?} {rest:?}");
    for (team, id, code) in [("p1", "a", "ca2"), ("p2", "b", "cb2")] {
        let by_code = Badge::get_by_code(&store, team, code).await.unwrap().map(|b| b.id);
        assert_eq!(by_code.as_deref(), Some(id));
        let by_handle = Badge::get_by_handle(&store, &format!("{id}-handle2"))
            .await
            .unwrap()
            .map(|b| b.id);
        assert_eq!(by_handle.as_deref(), Some(id));
    }
    assert_clean(env, &target, "after a replacing import over drift").await;
}

/// A registration held between its reservation and its entity write while
/// `fsck --repair` runs and a rival registers the same value: the
/// reservation is left (reported in flight), the rival is refused, and the
/// held registration succeeds, the one holder found by the lookup.
pub async fn fsck_repair_leaves_a_registration_in_flight(env: &Env) {
    let gate = GateBackend::new(env.backend().clone());
    let registering = Tables::with_backend(gate.clone())
        .without_cache()
        .store_in::<Badge>(&env.table);
    registering.ensure_created().await.unwrap();
    // The reservation is written; the store has not seen its answer yet.
    let hold = gate.arm(Point::AfterWrite);
    let task = tokio::spawn(async move {
        let mut b = Badge::new("t", "new", "c-new", "new-handle");
        registering.create(&mut b).await
    });
    hold.reached.await.unwrap();
    let options = FsckOptions {
        repair: true,
        ..FsckOptions::default()
    };
    let report = Admin::new(&env.tables, &env.table)
        .unwrap()
        .fsck(options)
        .await
        .unwrap();
    // Another registration of the value while the first is still held.
    let store = env.tables.store_in::<Badge>(&env.table);
    let rival = store
        .create(&mut Badge::new("u", "rival", "c-rival", "new-handle"))
        .await;
    drop(hold.release);
    let created = task.await.unwrap();
    assert!(
        created.is_ok(),
        "the registration failed after fsck --repair ({report:?}) and a rival's registration ({rival:?}): {created:?}"
    );
    let holder = Badge::get_by_handle(&store, "new-handle")
        .await
        .unwrap()
        .expect("one holder");
    assert_eq!(holder.id, "new");
    assert!(matches!(rival, Err(Error::UniqueViolation { .. })), "{rival:?}");
    let err = store
        .create(&mut Badge::new("u", "other", "c-other", "new-handle"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
    assert_clean(env, &env.table, "after the registration").await;
    // How the repair told it: in flight, not repaired.
    assert!(
        report
            .findings
            .iter()
            .any(|f| matches!(f, Finding::IndexInFlight { index, .. } if index == "handle")),
        "{report:?}"
    );
    assert_eq!(report.repaired, 0, "{report:?}");
}
