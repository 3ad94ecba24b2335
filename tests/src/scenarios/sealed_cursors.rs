//! Sealed cursors: a handle with a cursor key hands out cursors that show
//! none of the query (partition key, filter text, keys of the next page),
//! resume exactly as unsealed ones do, and are refused when sealed under
//! another key, altered, or given to a handle that does not seal (and an
//! unsealed cursor to one that does).

use base64::Engine as _;
use unified_tables::{Cursor, CursorKey, Error, QueryOptions, TableEntity, Tables};

use crate::Env;

/// A note of an owner: the partition key, the row keys and the label the
/// filter compares are the secrets a cursor must not show.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct SealedNote {
    #[table(partition_key)]
    pub owner: String,
    #[table(row_key)]
    pub id: String,
    pub label: String,
}

const OWNER: &str = "owner-secret 'ü' 🙂";
const LABEL: &str = "needle-label-value";

fn row_key(i: usize) -> String {
    format!("row-secret-{i:03}-é")
}

async fn seed(env: &Env) {
    let store = env.tables.store_in::<SealedNote>(&env.table);
    for i in 0..9 {
        let label = if i % 3 == 2 { "other" } else { LABEL };
        store
            .create(&mut SealedNote {
                owner: OWNER.into(),
                id: row_key(i),
                label: label.into(),
            })
            .await
            .unwrap();
    }
}

fn options() -> QueryOptions<SealedNote> {
    QueryOptions::partition(OWNER)
        .filter(SealedNote::filter(|c| c.label.eq(LABEL)))
        .take(2)
}

/// Every page of the query through `tables`: the row keys of each, and the cursors.
async fn pages(tables: &Tables, env: &Env) -> (Vec<Vec<String>>, Vec<Cursor>) {
    let store = tables.store_in::<SealedNote>(&env.table);
    let (mut pages, mut cursors) = (Vec::new(), Vec::new());
    let mut options = options();
    loop {
        let page = store.page(options.clone()).await.unwrap();
        pages.push(page.items.iter().map(|n| n.id.clone()).collect());
        match page.cursor {
            Some(cursor) => {
                // Sent to a client as text and back.
                let text = cursor.to_string();
                cursors.push(cursor);
                options = options.after(text.parse().unwrap());
            }
            None => break,
        }
        assert!(pages.len() < 20, "the query ends");
    }
    (pages, cursors)
}

/// The bytes of every base64 part of a cursor's text (it splits on `.`).
fn decoded(text: &str) -> Vec<Vec<u8>> {
    text.split('.')
        .filter_map(|part| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(part).ok())
        .collect()
}

fn shows(text: &str, secret: &str) -> bool {
    let needle = secret.as_bytes();
    text.contains(secret)
        || decoded(text)
            .iter()
            .any(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
}

/// The secrets of the query: the partition key, the filter's value, and every row key.
fn secrets() -> Vec<String> {
    let mut all = vec![OWNER.to_owned(), "owner-secret".to_owned(), LABEL.to_owned()];
    all.extend((0..9).map(row_key));
    all.push("row-secret".to_owned());
    all
}

pub async fn sealed_cursors_show_nothing_of_the_query_and_resume_as_unsealed_ones(env: &Env) {
    seed(env).await;
    let sealing = env.tables.clone().with_cursor_key(CursorKey::from_bytes([7; 32]));

    let (plain_pages, plain_cursors) = pages(&env.tables, env).await;
    let (sealed_pages, sealed_cursors) = pages(&sealing, env).await;
    let expected: Vec<String> = (0..9).filter(|i| i % 3 != 2).map(row_key).collect();
    if env.sorts_results() {
        assert_eq!(
            sealed_pages, plain_pages,
            "a sealed cursor resumes where an unsealed one does"
        );
        let read: Vec<String> = sealed_pages.concat();
        assert_eq!(read, expected, "every match once, in key order");
    } else {
        // Cosmos DB for Table cuts each page anew (any size up to 2, empty
        // ones included) and keeps no order: both walks read every match
        // once, in pages within the asked size.
        assert!(sealed_pages.iter().chain(&plain_pages).all(|p| p.len() <= 2));
        for (how, walk) in [("sealed", &sealed_pages), ("unsealed", &plain_pages)] {
            let mut read: Vec<String> = walk.concat();
            read.sort();
            assert_eq!(read, expected, "{how}: every match once");
        }
    }
    assert!(!sealed_cursors.is_empty(), "the query takes more than one page");

    // An unsealed cursor shows the partition key and the filter's value (as documented).
    for cursor in &plain_cursors {
        let text = cursor.to_string();
        assert!(shows(&text, OWNER) && shows(&text, LABEL), "{text}");
    }
    // A sealed one shows none of the query, in its text or its decoded bytes.
    for cursor in &sealed_cursors {
        let text = cursor.to_string();
        for secret in secrets() {
            assert!(!shows(&text, &secret), "a sealed cursor shows `{secret}`: {text}");
        }
        assert!(!format!("{cursor:?}").contains("row-secret"));
    }
    // Two cursors of the same position differ (a fresh nonce each), and both resume.
    let (_, again) = pages(&sealing, env).await;
    assert_ne!(again[0].to_string(), sealed_cursors[0].to_string());
}

pub async fn sealed_cursors_are_refused_under_another_key_altered_or_mixed_with_unsealed(env: &Env) {
    seed(env).await;
    let key = CursorKey::from_bytes([7; 32]);
    let sealing = env.tables.clone().with_cursor_key(key.clone());
    let other = env.tables.clone().with_cursor_key(CursorKey::from_bytes([8; 32]));
    let store = |tables: &Tables| tables.store_in::<SealedNote>(&env.table);

    let sealed = store(&sealing)
        .page(options())
        .await
        .unwrap()
        .cursor
        .expect("a next page");
    let plain = store(&env.tables)
        .page(options())
        .await
        .unwrap()
        .cursor
        .expect("a next page");
    let refused = |err: Error, says: &str| match err {
        Error::InvalidCursor(reason) => assert!(reason.contains(says), "`{reason}` should say `{says}`"),
        other => panic!("expected InvalidCursor, got {other}"),
    };

    // Sealed under another key.
    let err = store(&other).page(options().after(sealed.clone())).await.unwrap_err();
    refused(err, "another cursor key");
    // An unsealed cursor to a sealing handle, a sealed one to a handle without the key.
    let err = store(&sealing).page(options().after(plain.clone())).await.unwrap_err();
    refused(err, "not sealed");
    let err = store(&env.tables)
        .page(options().after(sealed.clone()))
        .await
        .unwrap_err();
    refused(err, "sealed");
    // Altered: one character of the sealed part changed.
    let text = sealed.to_string();
    let at = text.len() / 2;
    let mut altered = text.clone();
    altered.replace_range(at..at + 1, if &text[at..at + 1] == "A" { "B" } else { "A" });
    let err = store(&sealing)
        .page(options().after(altered.parse().unwrap()))
        .await
        .unwrap_err();
    refused(err, "altered");
    // Cut short.
    let err = store(&sealing)
        .page(options().after(text[..text.len() - 4].parse().unwrap()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidCursor(_)), "{err}");
    // Still bound to its query: another page size refuses it.
    let err = store(&sealing)
        .page(options().take(3).after(sealed.clone()))
        .await
        .unwrap_err();
    refused(err, "another query");
    // The same key on another handle (another process) resumes it.
    let resumed = env
        .tables
        .clone()
        .with_cursor_key(key)
        .store_in::<SealedNote>(&env.table)
        .page(options().after(sealed))
        .await
        .unwrap();
    assert!(!resumed.items.is_empty() || resumed.cursor.is_some());
}

/// A union store's pages through a handle with a key: sealed cursors that
/// show none of the partition or row keys, resume the same pages as
/// unsealed ones, and are refused by a handle without the key.
pub async fn sealed_cursors_seal_union_pages(env: &Env) {
    use crate::scenarios::union::{placed, OrderEvent};
    use unified_tables::UnionQuery;

    let store = env.tables.union_store::<OrderEvent>(&env.table);
    for i in 0..5 {
        store.insert((OWNER, row_key(i)), &placed(i as f64)).await.unwrap();
    }
    let sealing = env.tables.clone().with_cursor_key(CursorKey::from_bytes([7; 32]));
    let read = |tables: Tables| async move {
        let store = tables.union_store::<OrderEvent>(&env.table);
        let (mut pages, mut cursors) = (Vec::<Vec<String>>::new(), Vec::new());
        let mut query = UnionQuery::partition(OWNER).take(2);
        loop {
            let page = store.page(query.clone()).await.unwrap();
            pages.push(page.entries.iter().map(|e| e.key.row_key.clone()).collect());
            match page.cursor {
                Some(cursor) => {
                    let text = cursor.to_string();
                    cursors.push(cursor);
                    query = UnionQuery::partition(OWNER).take(2).after(text.parse().unwrap());
                }
                None => break,
            }
            assert!(pages.len() < 20, "the query ends");
        }
        (pages, cursors)
    };
    let (plain_pages, _) = read(env.tables.clone()).await;
    let (sealed_pages, sealed_cursors) = read(sealing).await;
    let expected: Vec<String> = (0..5).map(row_key).collect();
    if env.sorts_results() {
        assert_eq!(sealed_pages, plain_pages);
        assert_eq!(sealed_pages.concat(), expected);
    } else {
        // Cosmos DB for Table cuts each page anew (any size up to 2, empty
        // ones included) and keeps no order: both walks read every entry
        // once, in pages within the asked size.
        assert!(sealed_pages.iter().chain(&plain_pages).all(|p| p.len() <= 2));
        for walk in [&sealed_pages, &plain_pages] {
            let mut read = walk.concat();
            read.sort();
            assert_eq!(read, expected);
        }
    }
    assert!(!sealed_cursors.is_empty());
    for cursor in &sealed_cursors {
        let text = cursor.to_string();
        for secret in secrets().iter().filter(|s| s.as_str() != LABEL) {
            assert!(!shows(&text, secret), "a sealed union cursor shows `{secret}`: {text}");
        }
    }
    let err = store
        .page(UnionQuery::partition(OWNER).take(2).after(sealed_cursors[0].clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidCursor(reason) if reason.contains("sealed")),
        "{err}"
    );
}
