//! Typed query options: projections from the typed columns, options whose
//! scope is chosen at run time, a stream polled in place.

use unified_tables::AnyPartition;
use unified_tables::{Error, QueryOptions};

use crate::model::{Customer, Document, Everything, Geo};
use crate::{noise, Env};

pub async fn typed_projections_read_only_the_chosen_fields(env: &Env) {
    let store = env.tables.store_in::<Everything>(&env.table);
    let mut e = Everything::sample("p", "r");
    e.maybe_extra = Some(e.extra.clone());
    store.create(&mut e).await.unwrap();

    // Scalars, an optional scalar, JSON-stored values (a Vec, a map, a
    // #[table(json)] struct), one column of a flattened record, a key.
    let got = store
        .query(QueryOptions::partition("p").select(Everything::projection(|c| {
            [
                c.text.col(),
                c.big.col(),
                c.maybe_big.col(),
                c.tags.col(),
                c.scores.col(),
                c.extra.col(),
                c.maybe_extra.col(),
                c.status.col(),
                c.address.city.col(),
                c.pk.col(),
            ]
        })))
        .await
        .unwrap()
        .remove(0);
    assert_eq!((got.pk.as_str(), got.rk.as_str()), ("p", "r"), "keys always come back");
    assert!(got.etag.is_some(), "the ETag always comes back");
    assert_eq!(
        (got.text.as_str(), got.big, got.maybe_big, got.status),
        (e.text.as_str(), e.big, e.maybe_big, e.status)
    );
    assert_eq!(
        (&got.tags, &got.scores),
        (&e.tags, &e.scores),
        "JSON-stored values read whole"
    );
    assert_eq!((&got.extra, &got.maybe_extra), (&e.extra, &e.maybe_extra));
    assert_eq!(got.address.city, e.address.city);
    assert_eq!(
        (got.address.zip.as_deref(), got.address.geo.as_ref()),
        (None, None),
        "the record's other columns were not read"
    );
    assert_eq!(
        (
            got.small,
            got.flag,
            got.double,
            got.maybe_text.as_deref(),
            got.maybe_status
        ),
        (0, false, 0.0, None, None),
        "unselected fields are at their defaults"
    );

    // A whole flattened record, nested records included; one nested column.
    let got = store
        .query(QueryOptions::partition("p").select(Everything::projection(|c| {
            [c.extra.col(), c.address.col(), c.billing.city.col()]
        })))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        got.address, e.address,
        "c.address.col() reads every column of the record"
    );
    assert_eq!(got.billing, None);
    assert_eq!(got.text, "");
    let got = store
        .query(
            QueryOptions::partition("p").select(Everything::projection(|c| [c.extra.col(), c.address.geo.lat.col()])),
        )
        .await
        .unwrap()
        .remove(0);
    assert_eq!(got.address.geo, Some(Geo { lat: 49.84, lon: 0.0 }));
    assert_eq!(got.address.city, "");

    // The string form: names and dotted paths, checked when the query runs.
    let got = store
        .query(QueryOptions::partition("p").select_raw(&["extra", "address.city"]))
        .await
        .unwrap()
        .remove(0);
    assert_eq!((got.address.city.as_str(), got.address.zip.as_deref()), ("Lviv", None));
    let err = store
        .query(QueryOptions::partition("p").select_raw(&["extra", "adress"]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::Config { message: m, .. } if m.contains("adress")),
        "{err}"
    );
}

pub async fn typed_projections_of_large_values_and_files_read_rows_whole(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "doc");
    d.title = "T".into();
    d.body = noise(1_300_000, 51);
    d.notes = Some("n".repeat(70_000));
    store.create(&mut d).await.unwrap();
    for large in [
        Document::projection(|c| vec![c.notes.col()]),
        Document::projection(|c| vec![c.title.col(), c.attachment.col()]),
    ] {
        let got = store.query(QueryOptions::partition("p").select(large)).await.unwrap();
        assert_eq!(got.len(), 1, "continuation rows are not entities");
        assert!(
            got[0].same(&d),
            "a query selecting a large value or file reads its rows whole"
        );
    }
    let got = store
        .query(QueryOptions::partition("p").select(Document::projection(|c| [c.title.col()])))
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        (got[0].title.as_str(), got[0].body.as_str(), got[0].notes.as_deref()),
        ("T", "", None),
        "without a large value selected, only the chosen cells are read"
    );
}

pub async fn a_stream_polled_in_place_filters_and_projects(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    for (i, email) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
        let mut c = Customer::new("p", email, &format!("name {email}"));
        c.visits = i as u32;
        c.balance = 10.0;
        store.create(&mut c).await.unwrap();
    }
    store.create(&mut Customer::new("q", "z", "elsewhere")).await.unwrap();
    let options = QueryOptions::partition("p")
        .filter(Customer::filter(|c| c.visits.ge(2u32)))
        .select(Customer::projection(|c| [c.name.col()]));
    let mut stream = store.stream(options);
    let mut seen = Vec::new();
    while let Some(customer) = stream.next().await {
        let customer = customer.unwrap();
        assert_eq!((customer.visits, customer.balance), (0, 0.0), "not selected");
        assert!(customer.etag.is_some() && customer.timestamp.is_some(), "always read");
        seen.push((customer.email, customer.name));
    }
    if !env.sorts_results() {
        // A stream without a limit yields the service's order (none on
        // Cosmos DB for Table): every match once.
        seen.sort();
    }
    assert_eq!(
        seen,
        vec![
            ("c".to_owned(), "name c".to_owned()),
            ("d".to_owned(), "name d".to_owned()),
            ("e".to_owned(), "name e".to_owned()),
        ]
    );
    assert!(stream.next().await.is_none(), "an ended stream stays ended");
    let mut stream = store.stream(QueryOptions::all().take(2));
    let mut n = 0;
    while let Some(customer) = stream.try_next().await.unwrap() {
        assert_eq!(customer.region, "p");
        n += 1;
    }
    assert_eq!(n, 2);

    // A refused request is the stream's one item, with its own error kind; then it ends.
    let cursor = store
        .page(QueryOptions::partition("p").take(2))
        .await
        .unwrap()
        .cursor
        .expect("more pages");
    let mut stream = store.stream(QueryOptions::partition("p").take(2).after(cursor));
    let first = stream.next().await.expect("the error");
    assert!(matches!(first, Err(Error::InvalidCursor(_))), "{first:?}");
    assert!(stream.next().await.is_none());
}

pub async fn a_scope_chosen_at_run_time_reads_what_it_names(env: &Env) {
    let store = env.tables.store_in::<Customer>(&env.table);
    for (pk, rk) in [("p", "ab"), ("p", "ac"), ("p", "b"), ("q", "ab")] {
        store.create(&mut Customer::new(pk, rk, rk)).await.unwrap();
    }
    let scope = |region: Option<&str>| -> QueryOptions<Customer, AnyPartition> {
        match region {
            Some(r) => QueryOptions::partition(r).row_key_prefix("a").into(),
            None => QueryOptions::all(),
        }
    };
    let keys =
        |rows: Vec<Customer>| -> Vec<(String, String)> { rows.into_iter().map(|c| (c.region, c.email)).collect() };
    assert_eq!(
        keys(store.query(scope(Some("p"))).await.unwrap()),
        vec![("p".to_owned(), "ab".to_owned()), ("p".to_owned(), "ac".to_owned())],
        "the converted options keep their partition and prefix"
    );
    assert_eq!(store.query(scope(None)).await.unwrap().len(), 4);
    assert_eq!(store.count(scope(Some("q"))).await.unwrap(), 1);
}
