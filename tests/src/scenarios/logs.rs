//! Append logs and versioned streams.

use unified_tables::{Error, QueryOptions};

use crate::model::Event;
use crate::Env;

pub async fn append_logs_read_newest_first(env: &Env) {
    let store = env.tables.store_in::<Event>(&env.table);
    for i in 0..12 {
        store
            .append("room", &mut Event::new(&format!("main {i}")), None)
            .await
            .unwrap();
        store
            .append("room", &mut Event::new(&format!("s1 {i}")), Some("session-1"))
            .await
            .unwrap();
    }
    let mut e = Event::new("other room");
    store.append("hall", &mut e, None).await.unwrap();
    assert_eq!(e.stream, "hall");
    assert!(
        unified_tables::keys::reverse_ticked_instant(&e.key).is_some(),
        "the key decodes to an instant: {}",
        e.key
    );

    env.reset_counts();
    let newest = store.recent("room", 5, None).await.unwrap();
    assert_eq!(env.counts().queries, 1, "one bounded scan");
    let texts: Vec<&str> = newest.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(texts, vec!["main 11", "main 10", "main 9", "main 8", "main 7"]);
    let session = store.recent("room", 3, Some("session-1")).await.unwrap();
    assert_eq!(
        session.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(),
        vec!["s1 11", "s1 10", "s1 9"]
    );
    assert!(session.iter().all(|e| e.key.starts_with("session-1~")));
    assert_eq!(
        store.recent("room", 100, None).await.unwrap().len(),
        12,
        "sub-streams stay apart"
    );
    assert!(store.recent("room", 0, None).await.unwrap().is_empty());
    // A sub-stream may contain `~`: keys split on the last one, so the
    // sub-stream `a` never reads the events of `a~b`, nor `a~1` those of `a~1~2`.
    for sub in ["a", "a~b", "a~1", "a~1~2"] {
        store.append("room", &mut Event::new(sub), Some(sub)).await.unwrap();
    }
    for sub in ["a", "a~b", "a~1", "a~1~2"] {
        let texts: Vec<String> = store
            .recent("room", 10, Some(sub))
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.text)
            .collect();
        assert_eq!(texts, [sub], "sub-stream {sub}");
    }
}

pub async fn versioned_streams_answer_each_read_in_one_bounded_call(env: &Env) {
    let store = env.tables.store_in::<Event>(&env.table);
    for v in [1u32, 2, 3, 5, 8] {
        store
            .append_version("order-42", v, &mut Event::new(&format!("v{v}")))
            .await
            .unwrap();
    }
    store
        .append_version("order-7", 1, &mut Event::new("other"))
        .await
        .unwrap();
    let err = store
        .append_version("order-42", 3, &mut Event::new("again"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }), "{err}");

    env.reset_counts();
    assert_eq!(store.latest("order-42").await.unwrap().unwrap().text, "v8");
    assert_eq!(store.at_version("order-42", 5).await.unwrap().unwrap().text, "v5");
    assert!(store.at_version("order-42", 4).await.unwrap().is_none());
    assert_eq!(store.at_or_before("order-42", 4).await.unwrap().unwrap().text, "v3");
    assert_eq!(store.at_or_before("order-42", 100).await.unwrap().unwrap().text, "v8");
    assert!(store.at_or_before("order-42", 0).await.unwrap().is_none());
    let history: Vec<String> = store
        .history("order-42", 3)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.text)
        .collect();
    assert_eq!(history, vec!["v8", "v5", "v3"]);
    assert_eq!(env.counts().entity_requests(), 7, "each read is one request");
    assert!(store.latest("nothing").await.unwrap().is_none());
    assert_eq!(store.count(QueryOptions::partition("order-42")).await.unwrap(), 5);
}
