//! A caller's ETag is a version, never the wildcard: `*` (which the service
//! reads as any version) and the empty ETag are refused before anything is
//! sent, by every verb that writes or reads on condition of a caller's
//! ETag, identically on every backend. Below the stores, the backends
//! answer `If-Match: *` as the service does.

use unified_tables::backend::blob::{BlobCondition, GetOptions, PutOptions, ReadCondition};
use unified_tables::backend::{Backend, IfMatch, UpdateMode, WriteOp};
use unified_tables::{Concurrency, ETag, Error, ErrorKind, Row, Store, TableEntity, UnionWrite, Value};

use crate::model::{Account, Document, Item};
use crate::scenarios::union::events;
use crate::Env;

/// ETags that are not versions: the wildcard, the empty ETag, and the
/// wildcard with the spaces an HTTP header drops.
const NOT_VERSIONS: [&str; 3] = ["*", "", " * "];

/// Every request of `env` since the last reset: table, entity and blob.
fn requests(env: &Env) -> u64 {
    let c = env.counts();
    c.tables + c.entity_requests() + c.blob_requests()
}

/// The refusal every conditional verb gives a caller's ETag that is not a version.
#[track_caller]
fn assert_refused<T: std::fmt::Debug>(env: &Env, what: &str, bad: &str, result: Result<T, Error>) {
    match result {
        Err(Error::InvalidValue { column, reason }) if column == "ETag" => {
            assert!(reason.contains("not a version"), "{what} {bad:?}: {reason}");
            assert!(reason.contains("nothing was sent"), "{what} {bad:?}: {reason}");
        }
        other => panic!("{what} with ETag {bad:?}: expected a refusal naming the ETag, got {other:?}"),
    }
    assert_eq!(requests(env), 0, "{what} with ETag {bad:?}: nothing is sent");
}

/// `update`, `update_with` (every mode that uses the ETag) and
/// `delete_entity` of `stored`, each with every ETag that is not a version:
/// refused, nothing sent, the stored row unchanged.
async fn refuse_on_every_entity_verb<T>(env: &Env, store: &Store<T>, stored: &T, change: impl Fn(&mut T))
where
    T: TableEntity + unified_tables::HasETag + Clone + std::fmt::Debug,
{
    let key = stored.key();
    let before = store.get(key.clone()).await.unwrap().expect("stored");
    for bad in NOT_VERSIONS {
        let mut e = stored.clone();
        change(&mut e);
        e.set_etag(Some(ETag::new(bad)));
        env.reset_counts();
        assert_refused(env, "update", bad, store.update(&mut e).await);
        env.reset_counts();
        assert_refused(
            env,
            "update_with(Strict)",
            bad,
            store.update_with(&mut e, Concurrency::Strict).await,
        );
        env.reset_counts();
        assert_refused(
            env,
            "update_with(Auto)",
            bad,
            store.update_with(&mut e, Concurrency::Auto).await,
        );
        env.reset_counts();
        assert_refused(env, "delete_entity", bad, store.delete_entity(&e).await);
        assert_eq!(
            e.etag().map(ETag::as_str),
            Some(bad),
            "a refused call leaves the entity as it was"
        );
    }
    let after = store.get(key).await.unwrap().expect("still stored");
    assert_eq!(after.etag(), before.etag(), "nothing was written");
}

/// `update`, `update_with`, `delete_entity`, `patch` and `merge_columns_if`
/// refuse `*` and the empty ETag before sending, for plain types, types that
/// read before writing (protected fields, large values) and union rows; the
/// unconditional verbs still overwrite.
pub async fn a_wildcard_or_empty_etag_is_refused_by_every_conditional_verb(env: &Env) {
    // A plain type: one request per verb, no read.
    let items = env.tables.store_in::<Item>(&env.table);
    let mut item = Item::new("w", 1);
    items.create(&mut item).await.unwrap();
    refuse_on_every_entity_verb(env, &items, &item, |i| i.n = 99).await;
    assert_eq!(items.get(("w", "00001")).await.unwrap().unwrap().n, 1);
    for bad in NOT_VERSIONS {
        env.reset_counts();
        let patched = items
            .patch(("w", "00001"), Item::update().n(99).with_etag(ETag::new(bad)))
            .await;
        assert_refused(env, "patch", bad, patched);
    }
    assert_eq!(items.get(("w", "00001")).await.unwrap().unwrap().n, 1);

    // A type with protected fields reads the row before writing.
    let accounts = env.tables.store_in::<Account>(&env.table);
    let mut account = Account::new("a", "alice");
    accounts.create(&mut account).await.unwrap();
    refuse_on_every_entity_verb(env, &accounts, &account, |a| a.note = "changed".into()).await;
    assert_eq!(accounts.get(("acct", "a")).await.unwrap().unwrap().note, "");

    // A type with large values reads first and deletes its parts with the row.
    let docs = env.tables.store_in::<Document>(&env.table);
    let mut doc = Document::new("d", "1");
    doc.body = "b".repeat(100_000);
    docs.create(&mut doc).await.unwrap();
    refuse_on_every_entity_verb(env, &docs, &doc, |d| d.title = "changed".into()).await;
    let kept = docs.get(("d", "1")).await.unwrap().unwrap();
    assert!(kept.same(&doc), "the document and its parts are unchanged");

    // A union row's system columns.
    let union = events(env).await;
    union
        .insert_batch(vec![
            UnionWrite::marker(("tx", "flag")).column("_Attempts", Value::Int32(1))
        ])
        .await
        .unwrap();
    for bad in NOT_VERSIONS {
        env.reset_counts();
        let merged = union
            .merge_columns_if(("tx", "flag"), [("_Attempts", Value::Int32(9))], &ETag::new(bad))
            .await;
        assert_refused(env, "merge_columns_if", bad, merged);
    }
    let marker = union.get(("tx", "flag")).await.unwrap().unwrap();
    assert_eq!(marker.column("_Attempts"), Some(&Value::Int32(1)));

    // The unconditional verbs are how to write whatever version is stored.
    let mut stale = item.clone();
    stale.n = 7;
    stale.etag = Some(ETag::new("*"));
    items
        .update_with(&mut stale, Concurrency::LastWriterWins)
        .await
        .unwrap();
    assert_eq!(items.get(("w", "00001")).await.unwrap().unwrap().n, 7);
    assert!(items.delete(("w", "00001")).await.unwrap());
}

/// `replace`, `delete_if_match`, `get_if_changed` and a `put_with` whose
/// condition is `IfMatch` refuse `*` and the empty ETag before sending: no
/// blob is written, created or deleted.
pub async fn a_wildcard_or_empty_etag_is_refused_by_the_conditional_blob_verbs(env: &Env) {
    let docs = env.tables.blobs(&format!("wild-{}", env.table.to_lowercase()));
    let v1 = docs.create("a.txt", b"v1".to_vec()).await.unwrap();
    for bad in NOT_VERSIONS {
        env.reset_counts();
        assert_refused(env, "replace", bad, docs.replace("a.txt", b"x".to_vec(), bad).await);
        env.reset_counts();
        let missing = docs.replace("none.txt", b"x".to_vec(), bad).await;
        assert_refused(env, "replace of a missing blob", bad, missing);
        env.reset_counts();
        let options = PutOptions {
            condition: BlobCondition::IfMatch(bad.to_owned()),
            ..PutOptions::default()
        };
        assert_refused(
            env,
            "put_with",
            bad,
            docs.put_with("a.txt", b"x".to_vec(), options).await,
        );
        env.reset_counts();
        assert_refused(env, "delete_if_match", bad, docs.delete_if_match("a.txt", bad).await);
        env.reset_counts();
        assert_refused(env, "get_if_changed", bad, docs.get_if_changed("a.txt", bad).await);
    }
    let read = docs.get("a.txt").await.unwrap().expect("still stored");
    assert_eq!((read.bytes.as_slice(), read.etag()), (&b"v1"[..], v1.etag.as_str()));
    assert!(docs.get("none.txt").await.unwrap().is_none(), "nothing was created");
    // The unconditional calls write and delete whatever version is stored.
    docs.put("a.txt", b"v2".to_vec()).await.unwrap();
    assert!(docs.delete("a.txt").await.unwrap());
}

/// Below the stores, both backends answer `If-Match: *` as the service
/// does, also when it comes as an ETag: any version of an existing row or
/// blob matches, a missing row is 404 (a missing blob 412), in single
/// requests and in transactions. So a verb that let the wildcard through
/// would write on every backend, and the suite would see it.
pub async fn the_backends_answer_if_match_star_as_any_version(env: &Env) {
    let b = env.backend();
    b.create_table(&env.table).await.unwrap();
    let star = || IfMatch::ETag(ETag::new("*"));
    let value = |v: i32| Row::new("p", "r").with("V", Value::Int32(v));
    let stored_v = || async { b.get(&env.table, "p", "r").await.unwrap().map(|r| r.get("V").cloned()) };
    b.execute(&env.table, WriteOp::Insert(value(1))).await.unwrap();

    let updated = b
        .execute(
            &env.table,
            WriteOp::Update {
                row: value(2),
                mode: UpdateMode::Replace,
                condition: star(),
            },
        )
        .await
        .expect("`*` matches any version");
    assert!(updated.etag.is_some());
    assert_eq!(stored_v().await, Some(Some(Value::Int32(2))));
    b.transaction(
        &env.table,
        vec![
            WriteOp::Update {
                row: value(3),
                mode: UpdateMode::Merge,
                condition: star(),
            },
            WriteOp::Insert(Row::new("p", "s")),
        ],
    )
    .await
    .expect("`*` matches any version in a transaction");
    assert_eq!(stored_v().await, Some(Some(Value::Int32(3))));
    let missing = b
        .execute(
            &env.table,
            WriteOp::Update {
                row: Row::new("p", "absent"),
                mode: UpdateMode::Merge,
                condition: star(),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound, "{missing}");
    assert!(
        b.get(&env.table, "p", "absent").await.unwrap().is_none(),
        "nothing created"
    );
    let delete = |rk: &str| WriteOp::Delete {
        partition_key: "p".into(),
        row_key: rk.into(),
        condition: star(),
    };
    b.execute(&env.table, delete("r"))
        .await
        .expect("`*` deletes any version");
    assert_eq!(stored_v().await, None);
    let gone = b.execute(&env.table, delete("r")).await.unwrap_err();
    assert_eq!(gone.kind(), ErrorKind::NotFound, "{gone}");

    let blobs = env.blobs.clone().expect("a blob backend");
    let container = format!("star-{}", env.table.to_lowercase());
    blobs.create_container(&container).await.unwrap();
    blobs
        .put(&container, "a", b"1".to_vec(), PutOptions::default())
        .await
        .unwrap();
    let if_star = PutOptions {
        condition: BlobCondition::IfMatch("*".into()),
        ..PutOptions::default()
    };
    blobs
        .put(&container, "a", b"2".to_vec(), if_star.clone())
        .await
        .expect("`*` matches any version of a blob");
    let missing = blobs.put(&container, "b", b"2".to_vec(), if_star).await.unwrap_err();
    assert_eq!(missing.service_code().map(|(s, _)| s), Some(412), "{missing}");
    let read = GetOptions {
        range: None,
        condition: ReadCondition::IfMatch("*".into()),
    };
    let (_, bytes) = blobs.get_with(&container, "a", read).await.unwrap().expect("read");
    assert_eq!(bytes, b"2");
    assert!(blobs
        .delete(&container, "a", BlobCondition::IfMatch("*".into()))
        .await
        .expect("`*` deletes any version of a blob"));
    let gone = blobs
        .delete(&container, "a", BlobCondition::IfMatch("*".into()))
        .await
        .unwrap_err();
    assert_eq!(gone.service_code().map(|(s, _)| s), Some(412), "{gone}");
    assert!(
        blobs.get(&container, "b", None).await.unwrap().is_none(),
        "nothing created"
    );
}
