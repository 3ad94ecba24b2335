//! Local secondary indexes: every write verb keeps the index rows in the
//! entity's transaction, a unique value has one holder, racing writers
//! never leave two, and listings never show index rows.

use futures::TryStreamExt;
use unified_tables::{ConvergeOptions, ConvergeStep, Converged};
use unified_tables::{DateTime, ETag, Error, Key, QueryOptions, SoftDelete, TableEntity, TableEnum, Tables};

use crate::gate::{GateBackend, Point};
use crate::index_model::{all_rows, assert_indexes_match};
use crate::Env;

#[derive(TableEnum, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Junior,
    Senior,
}

/// A member of a team: a unique e-mail, a city index that carries the
/// name, a sparse nickname index and a composite (level, score) index.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(index(name = "level_score", fields(level, score)))]
pub struct Member {
    #[table(partition_key)]
    pub team: String,
    #[table(row_key)]
    pub id: String,
    #[unique]
    pub email: String,
    #[index(project(name))]
    pub city: String,
    #[index]
    pub nickname: Option<String>,
    pub name: String,
    pub level: Level,
    pub score: i64,
    pub note: String,
    #[table(etag)]
    pub etag: Option<ETag>,
}

impl Member {
    pub fn new(team: &str, id: &str, email: &str, city: &str) -> Member {
        Member {
            team: team.into(),
            id: id.into(),
            email: email.into(),
            city: city.into(),
            nickname: None,
            name: format!("member {id}"),
            level: Level::Junior,
            score: 0,
            note: String::new(),
            etag: None,
        }
    }
}

/// A soft-deletable post with a local index.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Post {
    #[table(partition_key)]
    pub room: String,
    #[table(row_key)]
    pub id: String,
    #[index]
    pub author: String,
    #[table(soft_delete)]
    pub deleted_at: Option<DateTime>,
}

async fn check(env: &Env, when: &str) {
    assert_indexes_match(env.backend(), &env.table, Member::INDEXES, when).await;
}

fn ids(members: &[Member]) -> Vec<&str> {
    members.iter().map(|m| m.id.as_str()).collect()
}

pub async fn indexes_every_verb_keeps_a_local_index_right(env: &Env) {
    let store = env.tables.store_in::<Member>(&env.table);
    let mut a = Member::new("t", "a", "a@x.com", "Lviv");
    let mut b = Member::new("t", "b", "b@x.com", "Kyiv");
    env.reset_counts();
    store.create(&mut a).await.unwrap();
    assert_eq!(
        env.counts().entity_requests(),
        1,
        "a create and its index rows are one transaction"
    );
    store.create(&mut b).await.unwrap();
    check(env, "after two creates").await;
    assert_eq!(ids(&Member::find_by_city(&store, "t", "Lviv").await.unwrap()), ["a"]);
    assert_eq!(
        Member::get_by_email(&store, "t", "b@x.com")
            .await
            .unwrap()
            .map(|m| m.id)
            .as_deref(),
        Some("b")
    );

    // update (conditional), replace, upsert of a new and of an existing entity
    a.city = "Odesa".into();
    a.nickname = Some("ace".into());
    env.reset_counts();
    store.update(&mut a).await.unwrap();
    assert_eq!(
        env.counts().entity_requests(),
        2,
        "a write that changes an index reads the stored row first"
    );
    check(env, "after update").await;
    assert!(Member::find_by_city(&store, "t", "Lviv").await.unwrap().is_empty());
    b.email = "b2@x.com".into();
    store.replace(&mut b).await.unwrap();
    check(env, "after replace").await;
    assert!(Member::get_by_email(&store, "t", "b@x.com").await.unwrap().is_none());
    let mut c = Member::new("t", "c", "c@x.com", "Lviv");
    store.upsert(&mut c).await.unwrap();
    c.level = Level::Senior;
    c.score = 7;
    store.upsert(&mut c).await.unwrap();
    check(env, "after upserts").await;

    // patch: of an indexed column, of a projected one, of neither (no read)
    store.patch(("t", "c"), Member::update().city("Dnipro")).await.unwrap();
    store.patch(("t", "c"), Member::update().name("Cee")).await.unwrap();
    check(env, "after patches of indexed and projected columns").await;
    env.reset_counts();
    store.patch(("t", "c"), Member::update().note("hello")).await.unwrap();
    assert_eq!(
        env.counts().entity_requests(),
        1,
        "a patch of no indexed column is one merge"
    );
    let err = store
        .patch(("t", "c"), Member::update().email("a@x.com"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::UniqueViolation { index, .. } if index == "email"),
        "{err}"
    );
    check(env, "after a refused patch").await;

    // the compare-and-swap verbs
    store.mutate(("t", "a"), |m| m.score = 3).await.unwrap();
    let moved = store
        .try_transition(("t", "b"), |m| m.level == Level::Junior, |m| m.level = Level::Senior)
        .await
        .unwrap();
    assert!(moved.updated().is_some());
    store
        .mutate_or_create(
            ("t", "d"),
            || Member::new("t", "d", "d@x.com", "Lviv"),
            |m| m.score += 1,
        )
        .await
        .unwrap();
    store
        .mutate_or_create(
            ("t", "d"),
            || Member::new("t", "d", "d@x.com", "Lviv"),
            |m| m.nickname = Some("dee".into()),
        )
        .await
        .unwrap();
    store
        .get_or_create(("t", "e"), || Member::new("t", "e", "e@x.com", "Rivne"))
        .await
        .unwrap();
    check(env, "after the compare-and-swap verbs").await;
    let seniors = store
        .index(Member::BY_LEVEL_SCORE)
        .find("t", (Level::Senior, 0))
        .await
        .unwrap();
    assert_eq!(ids(&seniors), ["b"]);

    // deletes
    assert!(store.delete(("t", "e")).await.unwrap());
    let d = store.get(("t", "d")).await.unwrap().unwrap();
    store.delete_entity(&d).await.unwrap();
    check(env, "after deletes").await;

    // batches
    let many: Vec<Member> = (0..150)
        .map(|i| {
            Member::new(
                "u",
                &format!("m{i:03}"),
                &format!("m{i}@x.com"),
                if i % 2 == 0 { "Lviv" } else { "Kyiv" },
            )
        })
        .collect();
    assert_eq!(store.create_batch(&many).await.unwrap(), 150);
    check(env, "after create_batch").await;
    let moved: Vec<Member> = many
        .iter()
        .map(|m| Member {
            city: "Kharkiv".into(),
            ..m.clone()
        })
        .collect();
    store.upsert_batch(&moved[..120]).await.unwrap();
    check(env, "after upsert_batch").await;
    assert_eq!(Member::find_by_city(&store, "u", "Kharkiv").await.unwrap().len(), 120);

    // listings show entities only
    assert_eq!(store.query(QueryOptions::partition("u")).await.unwrap().len(), 150);
    assert_eq!(store.count(QueryOptions::partition("u")).await.unwrap(), 150);
    assert_eq!(store.count(QueryOptions::all()).await.unwrap(), 150 + 3);
    let streamed: Vec<Member> = store.stream(QueryOptions::partition("t")).try_collect().await.unwrap();
    let mut streamed = ids(&streamed);
    if !env.sorts_results() {
        // A stream without a limit yields in the service's order there.
        streamed.sort();
    }
    assert_eq!(streamed, ["a", "b", "c"]);

    // convergence sees entities only, and leaves converged rows alone
    let steps: Vec<ConvergeStep> = store.converge(ConvergeOptions::default()).try_collect().await.unwrap();
    assert_eq!(steps.len(), 153, "{steps:?}");
    assert!(steps.iter().all(|s| s.outcome == Converged::Unchanged), "{steps:?}");

    // a partition delete removes the entities and their index rows, counting entities
    assert_eq!(store.delete_partition("u").await.unwrap(), 150);
    check(env, "after delete_partition").await;
    let left: Vec<_> = all_rows(env.backend(), &env.table)
        .await
        .into_iter()
        .filter(|r| r.partition_key == "u")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

pub async fn indexes_soft_delete_keeps_index_rows_and_lookups_follow_the_view(env: &Env) {
    let store = env.tables.store_in::<Post>(&env.table);
    for (id, author) in [("1", "ann"), ("2", "ann"), ("3", "bob")] {
        let mut p = Post {
            room: "r".into(),
            id: id.into(),
            author: author.into(),
            deleted_at: None,
        };
        store.create(&mut p).await.unwrap();
    }
    assert!(store.soft_delete(("r", "2")).await.unwrap());
    assert_indexes_match(env.backend(), &env.table, Post::INDEXES, "after soft delete").await;
    let live: Vec<String> = Post::find_by_author(&store, "r", "ann")
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(
        live,
        ["1"],
        "a lookup of the live view leaves the soft-deleted entity out"
    );
    let all = store.including_deleted();
    assert_eq!(Post::find_by_author(&all, "r", "ann").await.unwrap().len(), 2);
    assert!(store.restore(("r", "2")).await.unwrap());
    assert_eq!(Post::find_by_author(&store, "r", "ann").await.unwrap().len(), 2);
    let p = store.get(("r", "2")).await.unwrap().unwrap();
    assert!(p.deleted_at().is_none());
    assert_indexes_match(env.backend(), &env.table, Post::INDEXES, "after restore").await;
}

pub async fn indexes_a_unique_value_has_one_holder(env: &Env) {
    let store = env.tables.store_in::<Member>(&env.table);
    store
        .create(&mut Member::new("t", "a", "x@x.com", "Lviv"))
        .await
        .unwrap();

    // A create of another entity with the value: refused, nothing stored.
    let err = store
        .create(&mut Member::new("t", "b", "x@x.com", "Kyiv"))
        .await
        .unwrap_err();
    match &err {
        Error::UniqueViolation {
            index, value, holder, ..
        } => {
            assert_eq!((index.as_str(), value.as_str()), ("email", "\"x@x.com\""));
            assert_eq!(**holder, Key::new("t", "a"));
        }
        other => panic!("expected UniqueViolation, got {other}"),
    }
    assert!(
        err.to_string().contains("email") && err.to_string().contains("x@x.com"),
        "{err}"
    );
    assert!(
        store.get(("t", "b")).await.unwrap().is_none(),
        "nothing of the refused create is stored"
    );
    check(env, "after a refused create").await;

    // A create of the holder itself: refused because it exists, and its own
    // index row stays (the value is still taken, by it).
    let err = store
        .create(&mut Member::new("t", "a", "x@x.com", "Lviv"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");
    check(env, "after a create of an entity that exists").await;
    let err = store
        .upsert(&mut Member::new("t", "b", "x@x.com", "Kyiv"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");

    // An update onto the value: refused; the entity keeps its own.
    let mut b = Member::new("t", "b", "y@x.com", "Kyiv");
    store.create(&mut b).await.unwrap();
    b.email = "x@x.com".into();
    let err = store.update(&mut b).await.unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
    assert_eq!(store.get(("t", "b")).await.unwrap().unwrap().email, "y@x.com");
    let err = store
        .mutate(("t", "b"), |m| m.email = "x@x.com".into())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");

    // Once the holder moves away, the value is free.
    store.mutate(("t", "a"), |m| m.email = "z@x.com".into()).await.unwrap();
    store.mutate(("t", "b"), |m| m.email = "x@x.com".into()).await.unwrap();
    assert_eq!(
        Member::get_by_email(&store, "t", "x@x.com")
            .await
            .unwrap()
            .map(|m| m.id)
            .as_deref(),
        Some("b")
    );
    // A delete frees it too.
    store.delete(("t", "b")).await.unwrap();
    store
        .create(&mut Member::new("t", "c", "x@x.com", "Kyiv"))
        .await
        .unwrap();
    check(env, "after the value moved").await;

    // Another partition is another index: the same value is free there.
    store
        .create(&mut Member::new("other", "a", "x@x.com", "Kyiv"))
        .await
        .unwrap();

    // A batch with a taken value fails naming the index; the transactions before it stay.
    let batch = vec![
        Member::new("t", "d", "d@x.com", "Lviv"),
        Member::new("t", "e", "x@x.com", "Lviv"),
    ];
    let err = store.create_batch(&batch).await.unwrap_err();
    match &err {
        Error::BatchFailed { source, .. } => assert!(matches!(**source, Error::UniqueViolation { .. }), "{err}"),
        other => panic!("expected BatchFailed, got {other}"),
    }
    check(env, "after a refused batch").await;

    // A stale index row (its entity holds another value) does not block the value.
    let stale = unified_tables::index::rows::index_row(
        &Member::INDEXES[1],
        &Member::new("t", "ghost", "free@x.com", "Lviv")
            .to_row(&Default::default())
            .unwrap(),
    )
    .unwrap()
    .unwrap();
    assert_eq!(Member::INDEXES[1].name, "email");
    env.put_raw(stale).await;
    store
        .create(&mut Member::new("t", "f", "free@x.com", "Lviv"))
        .await
        .unwrap();
    let f = store
        .get(("t", "f"))
        .await
        .unwrap()
        .expect("the create that took the value over stored its entity");
    assert_eq!(f.email, "free@x.com");
    check(env, "after a stale index row was taken over").await;
    let entities: Vec<Member> = store.query(QueryOptions::all()).await.unwrap();
    assert_eq!(
        all_rows(env.backend(), &env.table).await.len(),
        entities.len() * 4,
        "each entity with its e-mail, city and level_score rows, and nothing else"
    );
}

pub async fn indexes_racing_writers_on_one_unique_value_leave_one_holder(env: &Env) {
    let gate = GateBackend::new(env.backend().clone());
    let held = Tables::with_backend(gate.clone()).store_in::<Member>(&env.table);
    let store = env.tables.store_in::<Member>(&env.table);
    store
        .create(&mut Member::new("t", "a", "a@x.com", "Lviv"))
        .await
        .unwrap();
    store
        .create(&mut Member::new("t", "b", "b@x.com", "Lviv"))
        .await
        .unwrap();

    // Two creates of one value: the first is held just before it is sent while the second lands.
    let hold = gate.arm(Point::BeforeWrite);
    let first = tokio::spawn({
        let held = held.clone();
        async move { held.create(&mut Member::new("t", "c", "race@x.com", "Lviv")).await }
    });
    hold.reached.await.expect("the first create is about to be sent");
    store
        .create(&mut Member::new("t", "d", "race@x.com", "Kyiv"))
        .await
        .unwrap();
    let _ = hold.release.send(());
    let err = first.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
    assert!(store.get(("t", "c")).await.unwrap().is_none());
    check(env, "after racing creates").await;

    // Two updates onto one value, the first held after it read and before it sends.
    let hold = gate.arm(Point::BeforeWrite);
    let first = tokio::spawn({
        let held = held.clone();
        async move { held.mutate(("t", "a"), |m| m.email = "both@x.com".into()).await }
    });
    hold.reached.await.expect("the first update is about to be sent");
    store
        .mutate(("t", "b"), |m| m.email = "both@x.com".into())
        .await
        .unwrap();
    let _ = hold.release.send(());
    let err = first.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
    let holders: Vec<Member> = store
        .query(QueryOptions::partition("t"))
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.email == "both@x.com")
        .collect();
    assert_eq!(ids(&holders), ["b"], "one holder");
    check(env, "after racing updates").await;

    // Two writers moving one entity's indexed value: the loser re-reads, no row is left behind.
    let hold = gate.arm(Point::BeforeWrite);
    let first = tokio::spawn({
        let held = held.clone();
        async move { held.mutate(("t", "a"), |m| m.city = "Odesa".into()).await }
    });
    hold.reached.await.expect("the first move is about to be sent");
    store.mutate(("t", "a"), |m| m.city = "Rivne".into()).await.unwrap();
    let _ = hold.release.send(());
    first.await.unwrap().unwrap();
    assert_eq!(store.get(("t", "a")).await.unwrap().unwrap().city, "Odesa");
    check(env, "after racing moves").await;
    assert!(Member::find_by_city(&store, "t", "Rivne").await.unwrap().is_empty());

    // Many writers at once on one value: exactly one wins.
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .create(&mut Member::new("t", &format!("n{i}"), "many@x.com", "Lviv"))
                    .await
            })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(Error::UniqueViolation { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(won, 1);
    check(env, "after many racing creates").await;
}

pub async fn indexes_keys_under_the_reserved_prefix_are_refused(env: &Env) {
    let store = env.tables.store_in::<Member>(&env.table);
    let err = store
        .create(&mut Member::new("t", "~ix|email|x", "a@x.com", "Lviv"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidKey { reason, .. } if reason.contains("reserved")),
        "{err}"
    );
    let err = store
        .create(&mut Member::new("~ix|t", "a", "a@x.com", "Lviv"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidKey { .. }), "{err}");
    assert!(all_rows(env.backend(), &env.table).await.is_empty(), "nothing stored");
    // An indexed value too long for a key is refused naming its column.
    let err = store
        .create(&mut Member::new("t", "a", &"x".repeat(1100), "Lviv"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidValue { column, .. } if column == "Email"),
        "{err}"
    );
}

/// The columns of a [`Member`], as a union payload.
#[derive(unified_tables::TableRecord, Debug, Clone, PartialEq)]
pub struct MemberRow {
    pub email: String,
    pub city: String,
    pub name: String,
    pub level: Level,
    pub score: i64,
}

#[derive(unified_tables::TableUnion, Debug, Clone, PartialEq)]
pub enum MemberEvent {
    Joined(MemberRow),
}

fn joined(email: &str, city: &str) -> MemberEvent {
    MemberEvent::Joined(MemberRow {
        email: email.into(),
        city: city.into(),
        name: "n".into(),
        level: Level::Junior,
        score: 1,
    })
}

pub async fn indexes_union_writes_keep_the_index_rows_of_the_table(env: &Env) {
    use unified_tables::UnionWrite;
    let rows = env
        .tables
        .union_store::<MemberEvent>(&env.table)
        .with_indexes(Member::INDEXES);
    let store = env.tables.store_in::<Member>(&env.table);
    rows.insert(("t", "a"), &joined("a@x.com", "Lviv")).await.unwrap();
    rows.upsert(("t", "b"), &joined("b@x.com", "Lviv")).await.unwrap();
    rows.upsert(("t", "b"), &joined("b@x.com", "Kyiv")).await.unwrap();
    check(env, "after union writes").await;
    assert_eq!(ids(&Member::find_by_city(&store, "t", "Kyiv").await.unwrap()), ["b"]);
    let err = rows.insert(("t", "c"), &joined("a@x.com", "Lviv")).await.unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
    rows.insert_batch(vec![
        UnionWrite::item(("t", "c"), &joined("c@x.com", "Rivne")),
        UnionWrite::item(("t", "d"), &joined("d@x.com", "Rivne")),
    ])
    .await
    .unwrap();
    rows.upsert_batch(vec![UnionWrite::item(("t", "c"), &joined("c2@x.com", "Rivne"))])
        .await
        .unwrap();
    check(env, "after union batches").await;
    assert!(rows.delete(("t", "d")).await.unwrap());
    check(env, "after a union delete").await;
    // An index row removed behind the store's back: a batch drops its removal, as a single write does.
    use unified_tables::backend::{Backend, IfMatch, WriteOp};
    let city = Member::INDEXES
        .iter()
        .find(|d| d.name == "city")
        .expect("the city index");
    let stored = env.backend().get(&env.table, "t", "c").await.unwrap().expect("c");
    let drifted = unified_tables::index::rows::index_row(city, &stored)
        .unwrap()
        .expect("c's city row");
    let removal = WriteOp::Delete {
        partition_key: drifted.partition_key,
        row_key: drifted.row_key,
        condition: IfMatch::Any,
    };
    env.backend().execute(&env.table, removal).await.unwrap();
    rows.upsert_batch(vec![UnionWrite::item(("t", "c"), &joined("c2@x.com", "Odesa"))])
        .await
        .expect("a batch over a drifted index row");
    check(env, "after a union batch over a drifted index row").await;
    assert_eq!(ids(&Member::find_by_city(&store, "t", "Odesa").await.unwrap()), ["c"]);
    let err = rows
        .insert_batch(vec![UnionWrite::item(("t", "e"), &joined("c2@x.com", "Lviv"))])
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::BatchFailed { source, .. } if matches!(**source, Error::UniqueViolation { .. })),
        "{err}"
    );
    check(env, "after a refused union batch").await;
}

pub async fn indexes_an_import_writes_the_index_rows_it_is_given(env: &Env) {
    use unified_tables::admin::{Admin, ExportOptions, ImportMode, ImportOptions};
    let store = env.tables.store_in::<Member>(&env.table);
    for i in 0..5 {
        store
            .create(&mut Member::new("t", &format!("m{i}"), &format!("m{i}@x.com"), "Lviv"))
            .await
            .unwrap();
    }
    let dir = crate::scenarios::admin::scratch_dir("ixexport");
    let exported = Admin::new(&env.tables, &env.table)
        .unwrap()
        .export(&dir, ExportOptions::default())
        .await
        .unwrap();
    assert_eq!(exported.entities, 5, "index rows are not exported");

    let target = env.another_table();
    let admin = Admin::new(&env.tables, &target).unwrap();
    let options = ImportOptions {
        indexes: Member::INDEXES,
        ..ImportOptions::default()
    };
    let report = admin.import(&dir, options).await.unwrap();
    assert_eq!(report.written, 5);
    assert_indexes_match(env.backend(), &target, Member::INDEXES, "after an import").await;
    let copy = env.tables.store_in::<Member>(&target);
    assert_eq!(Member::find_by_city(&copy, "t", "Lviv").await.unwrap().len(), 5);

    // Replaced entities move their index rows; a taken unique value stops the import.
    store.mutate(("t", "m0"), |m| m.city = "Kyiv".into()).await.unwrap();
    let dir2 = crate::scenarios::admin::scratch_dir("ixexport");
    Admin::new(&env.tables, &env.table)
        .unwrap()
        .export(&dir2, ExportOptions::default())
        .await
        .unwrap();
    let replace = ImportOptions {
        mode: ImportMode::Replace,
        indexes: Member::INDEXES,
        ..ImportOptions::default()
    };
    admin.import(&dir2, replace).await.unwrap();
    assert_indexes_match(env.backend(), &target, Member::INDEXES, "after a replacing import").await;
    copy.create(&mut Member::new("t", "z", "taken@x.com", "Lviv"))
        .await
        .unwrap();
    store
        .create(&mut Member::new("t", "y", "taken@x.com", "Lviv"))
        .await
        .unwrap();
    let dir3 = crate::scenarios::admin::scratch_dir("ixexport");
    Admin::new(&env.tables, &env.table)
        .unwrap()
        .export(&dir3, ExportOptions::default())
        .await
        .unwrap();
    let skip = ImportOptions {
        mode: ImportMode::Skip,
        indexes: Member::INDEXES,
        ..ImportOptions::default()
    };
    let err = admin.import(&dir3, skip).await.unwrap_err();
    assert!(matches!(err, Error::UniqueViolation { .. }), "{err}");
    assert_indexes_match(env.backend(), &target, Member::INDEXES, "after a refused import").await;
}

/// A transaction of an entity and its index rows whose answer is lost (or
/// times out after it was applied) is settled by its main row's write token:
/// the write succeeds once, the index rows are exactly those the entity
/// needs, and a unique value is not refused as its own echo.
pub async fn indexes_lost_answers_settle_the_index_rows_once(env: &Env) {
    use crate::scenarios::exactly_once::{faulty_tables, lost, timed_out};
    use unified_tables::backend::faulty::{FaultTarget, FaultTiming};
    let (faulty, tables) = faulty_tables(env);
    let store = tables.store_in::<Member>(&env.table);
    store.ensure_created().await.unwrap();

    // create: the entity and its index rows in one transaction, the answer lost
    let mut a = Member::new("t", "a", "a@x.com", "Lviv");
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, lost);
    store.create(&mut a).await.unwrap();
    assert_eq!(faulty.pending(), 0);
    check(env, "after a create whose answer was lost").await;

    // update changing the unique and an indexed value: a read, then the transaction, timed out after it applied
    a.email = "a2@x.com".into();
    a.city = "Kyiv".into();
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, timed_out);
    store.update(&mut a).await.unwrap();
    assert_eq!(faulty.pending(), 0);
    check(env, "after an update whose answer was lost").await;
    let got = Member::get_by_email(&store, "t", "a2@x.com").await.unwrap();
    assert_eq!(got.map(|m| m.id).as_deref(), Some("a"));
    assert!(Member::get_by_email(&store, "t", "a@x.com").await.unwrap().is_none());

    // a batch of indexed entities, one transaction's answer lost
    let many: Vec<Member> = (0..30)
        .map(|i| Member::new("u", &format!("m{i:02}"), &format!("m{i}@x.com"), "Lviv"))
        .collect();
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, lost);
    assert_eq!(store.create_batch(&many).await.unwrap(), 30);
    assert_eq!(faulty.pending(), 0);
    check(env, "after a batch whose answer was lost").await;
    assert_eq!(Member::find_by_city(&store, "u", "Lviv").await.unwrap().len(), 30);

    // delete: the entity and its index rows, the answer lost
    faulty.fail_next(FaultTarget::Transaction, FaultTiming::After, lost);
    assert!(store.delete(("t", "a")).await.unwrap());
    assert_eq!(faulty.pending(), 0);
    check(env, "after a delete whose answer was lost").await;
    assert!(Member::get_by_email(&store, "t", "a2@x.com").await.unwrap().is_none());
}
