//! The index tools: `check_indexes` and `fsck` find drift and repair only
//! what is safe, `build_index` builds an index over existing rows (resumable,
//! never undoing a concurrent write), `drop_index` removes an index no longer
//! declared, and the toolbox shows and counts index rows.

use futures::{StreamExt, TryStreamExt};
use unified_tables::admin::{Admin, Finding, FsckOptions, Read};
use unified_tables::index::rows::index_row;
use unified_tables::{BuildIndexOptions, BuildStep, IndexCheckOptions, IndexFinding};
use unified_tables::{ETag, Row, TableEntity, Tables};

use crate::gate::{GateBackend, Point};
use crate::index_model::{all_rows, assert_indexes_match, divergence};
use crate::scenarios::indexes::Member;
use crate::Env;

/// A member as an older program wrote it: the same columns, no indexes.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct PlainMember {
    #[table(partition_key)]
    pub team: String,
    #[table(row_key)]
    pub id: String,
    pub email: String,
    pub city: String,
    pub name: String,
    pub level: crate::scenarios::indexes::Level,
    pub score: i64,
    pub note: String,
    #[table(etag)]
    pub etag: Option<ETag>,
}

fn plain(id: &str, email: &str, city: &str) -> PlainMember {
    PlainMember {
        team: "t".into(),
        id: id.into(),
        email: email.into(),
        city: city.into(),
        name: format!("member {id}"),
        level: crate::scenarios::indexes::Level::Junior,
        score: 0,
        note: String::new(),
        etag: None,
    }
}

fn row_of(m: &Member) -> Row {
    m.to_row(&Default::default()).unwrap()
}

pub async fn index_tools_find_drift_and_repair_what_is_safe(env: &Env) {
    let store = env.tables.store_in::<Member>(&env.table);
    for (id, email, city) in [
        ("a", "a@x.com", "Lviv"),
        ("b", "b@x.com", "Lviv"),
        ("c", "c@x.com", "Kyiv"),
    ] {
        store.create(&mut Member::new("t", id, email, city)).await.unwrap();
    }
    assert!(store
        .check_indexes(IndexCheckOptions::default())
        .await
        .unwrap()
        .is_clean());
    // Drift an older program or a hand edit leaves: a row removed, an orphan, a stale row.
    let city = &Member::INDEXES[2];
    assert_eq!(city.name, "city");
    let a_city = index_row(city, &row_of(&Member::new("t", "a", "a@x.com", "Lviv")))
        .unwrap()
        .unwrap();
    let remove = unified_tables::backend::WriteOp::Delete {
        partition_key: a_city.partition_key.clone(),
        row_key: a_city.row_key.clone(),
        condition: unified_tables::backend::IfMatch::Any,
    };
    unified_tables::backend::Backend::execute(env.backend(), &env.table, remove)
        .await
        .unwrap();
    env.put_raw(
        index_row(city, &row_of(&Member::new("t", "gone", "g@x.com", "Odesa")))
            .unwrap()
            .unwrap(),
    )
    .await;
    env.put_raw(
        index_row(city, &row_of(&Member::new("t", "c", "c@x.com", "Rivne")))
            .unwrap()
            .unwrap(),
    )
    .await;
    // Two holders of one unique value, written past the store.
    let mut twin = row_of(&Member::new("t", "d", "b@x.com", "Lviv"));
    twin.insert("_WriteToken", unified_tables::Value::String("x".into()));
    env.put_raw(twin).await;

    let report = store.check_indexes(IndexCheckOptions::default()).await.unwrap();
    let kinds: Vec<&str> = report
        .findings
        .iter()
        .map(|f| match f {
            IndexFinding::Missing { .. } => "missing",
            IndexFinding::Orphan { .. } => "orphan",
            IndexFinding::Stale { .. } => "stale",
            IndexFinding::Duplicate { .. } => "duplicate",
            IndexFinding::Intent { .. } => "intent",
            _ => "other",
        })
        .collect();
    for kind in ["missing", "orphan", "stale", "duplicate"] {
        assert!(kinds.contains(&kind), "{kind} in {:?}", report.findings);
    }
    assert_eq!(report.repaired, 0, "a check without repair changes nothing");

    // The toolbox's fsck finds the same drift from the index rows alone.
    let admin = Admin::new(&env.tables, &env.table).unwrap();
    let fsck = admin.fsck(FsckOptions::default()).await.unwrap();
    let has = |f: fn(&Finding) -> bool| fsck.findings.iter().any(f);
    assert!(has(|f| matches!(f, Finding::IndexOrphan { .. })), "{:?}", fsck.findings);
    assert!(has(|f| matches!(f, Finding::IndexStale { .. })), "{:?}", fsck.findings);
    assert!(
        has(|f| matches!(f, Finding::IndexMissing { row_key, .. } if row_key == "a")),
        "{:?}",
        fsck.findings
    );
    let repaired = admin
        .fsck(FsckOptions {
            repair: true,
            ..FsckOptions::default()
        })
        .await
        .unwrap();
    assert!(
        repaired.repaired >= 2,
        "the orphan and the stale row are deleted: {:?}",
        repaired.findings
    );
    let after = admin.fsck(FsckOptions::default()).await.unwrap();
    assert!(
        after.findings.iter().all(|f| matches!(f, Finding::IndexMissing { .. })),
        "only what is not provably safe is left: {:?}",
        after.findings
    );

    // The typed check repairs the rest but the two holders.
    let fixed = store
        .check_indexes(IndexCheckOptions {
            repair: true,
            ..IndexCheckOptions::default()
        })
        .await
        .unwrap();
    assert!(fixed.repaired >= 1, "{fixed:?}");
    let again = store.check_indexes(IndexCheckOptions::default()).await.unwrap();
    assert!(
        again
            .findings
            .iter()
            .all(|f| matches!(f, IndexFinding::Duplicate { .. })),
        "{:?}",
        again.findings
    );
    store.delete(("t", "d")).await.unwrap();
    store
        .check_indexes(IndexCheckOptions {
            repair: true,
            ..IndexCheckOptions::default()
        })
        .await
        .unwrap();
    assert!(store
        .check_indexes(IndexCheckOptions::default())
        .await
        .unwrap()
        .is_clean());
    assert_indexes_match(env.backend(), &env.table, Member::INDEXES, "after the repairs").await;

    // get --raw shows the entity's index rows; stats counts them.
    let Some(Read::Whole(got)) = admin.get("t", "a").await.unwrap() else {
        panic!("a whole entity")
    };
    assert_eq!(
        got.raw.len(),
        1 + 3,
        "the main row and its email, city and level rows: {:?}",
        got.raw
    );
    let stats = admin.stats(None, None).await.unwrap();
    assert_eq!((stats.entities, stats.index_rows), (3, 9), "{stats:?}");
}

pub async fn index_tools_build_an_index_over_existing_rows(env: &Env) {
    let old = env.tables.store_in::<PlainMember>(&env.table);
    let many: Vec<PlainMember> = (0..1200)
        .map(|i| plain(&format!("m{i:04}"), &format!("m{i}@x.com"), ["Lviv", "Kyiv"][i % 2]))
        .collect();
    old.create_batch(&many).await.unwrap();
    let store = env.tables.store_in::<Member>(&env.table);
    assert!(
        Member::find_by_city(&store, "t", "Lviv").await.unwrap().is_empty(),
        "not built yet"
    );

    // One page, then continued after its position.
    let first: Vec<BuildStep> = store
        .build_index(Member::BY_CITY, BuildIndexOptions::default())
        .take(1)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(first[0].entities, 1000);
    let resumed = BuildIndexOptions {
        after: Some(first[0].position.clone()),
        ..BuildIndexOptions::default()
    };
    let rest: Vec<BuildStep> = store.build_index(Member::BY_CITY, resumed).try_collect().await.unwrap();
    assert_eq!(rest.last().map(|s| s.entities), Some(200));
    assert_eq!(Member::find_by_city(&store, "t", "Lviv").await.unwrap().len(), 600);

    // The other indexes, with a writer changing an entity while a build's page is written.
    let gate = GateBackend::new(env.backend().clone());
    let held = Tables::with_backend(gate.clone()).store_in::<Member>(&env.table);
    let hold = gate.arm(Point::BeforeWrite);
    let build = tokio::spawn(async move {
        held.build_index(Member::BY_EMAIL, BuildIndexOptions::default())
            .try_collect::<Vec<BuildStep>>()
            .await
    });
    hold.reached.await.expect("the build is about to write");
    old.mutate(("t", "m0000"), |m| m.email = "moved@x.com".into())
        .await
        .unwrap();
    let _ = hold.release.send(());
    build.await.unwrap().unwrap();
    store
        .build_index(Member::BY_LEVEL_SCORE, BuildIndexOptions::default())
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    store
        .build_index(Member::BY_NICKNAME, BuildIndexOptions::default())
        .try_collect::<Vec<_>>()
        .await
        .unwrap();
    let rows = all_rows(env.backend(), &env.table).await;
    // The concurrent write is kept, and no index row says otherwise.
    let wrong: Vec<String> = divergence(Member::INDEXES, &rows);
    assert!(wrong.is_empty(), "{wrong:?}");
    assert_eq!(
        Member::get_by_email(&store, "t", "moved@x.com")
            .await
            .unwrap()
            .map(|m| m.id)
            .as_deref(),
        Some("m0000")
    );
}

pub async fn index_tools_drop_an_index_no_longer_declared(env: &Env) {
    let store = env.tables.store_in::<Member>(&env.table);
    for i in 0..5 {
        store
            .create(&mut Member::new("t", &format!("m{i}"), &format!("m{i}@x.com"), "Lviv"))
            .await
            .unwrap();
    }
    // A type that no longer declares `city` (the same table, its other indexes kept).
    let plain = env.tables.store_in::<PlainMember>(&env.table);
    let err = store.drop_index("city").await.unwrap_err();
    assert!(matches!(err, unified_tables::Error::InvalidValue { .. }), "{err}");
    let dropped = plain.drop_index("city").await.unwrap();
    assert_eq!(dropped, 5);
    let left = all_rows(env.backend(), &env.table).await;
    assert!(
        !left.iter().any(|r| r.row_key.starts_with("~ix|city|")),
        "no row of the dropped index is left"
    );
    assert_eq!(
        left.iter().filter(|r| r.row_key.starts_with("~ix|email|")).count(),
        5,
        "other indexes kept"
    );
}
