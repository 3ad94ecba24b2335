//! Projected index rows: `project(..)` copies every cell of each field it
//! names, whatever the field's form (a collection or a `#[table(json)]`
//! value as JSON, a flattened record's columns, a long string packed with
//! gzip), so a reader of the index rows reads the fields back; a write of
//! a projected field keeps the copy current.

use unified_tables::layout::{is_index_row, INDEX_OF};
use unified_tables::{ETag, EncodeOptions, Row, Store, TableEntity};

use crate::index_model::all_rows;
use crate::model::{Address, Extra, Geo};
use crate::Env;

/// A card whose owner index (local) and title index (global) carry fields
/// of every stored form; `note` is projected by neither.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Card {
    #[table(partition_key)]
    pub deck: String,
    #[table(row_key)]
    pub id: String,
    #[index(project(tags, extra, address, story))]
    pub owner: String,
    #[index(global, project(tags, extra, address, story))]
    pub title: String,
    pub tags: Vec<String>,
    #[table(json)]
    pub extra: Extra,
    #[table(flatten)]
    pub address: Address,
    pub story: String,
    pub note: String,
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// What a reader of the index rows decodes from one: the projected fields.
#[derive(TableEntity, Debug, Clone, PartialEq)]
#[table(no_write_token)]
pub struct CardView {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub tags: Vec<String>,
    #[table(json)]
    pub extra: Extra,
    #[table(flatten)]
    pub address: Address,
    pub story: String,
}

fn card(id: &str) -> Card {
    Card {
        deck: "d".into(),
        id: id.into(),
        owner: "ann".into(),
        title: format!("title {id}"),
        tags: vec!["a".into(), "b'c".into()],
        extra: Extra {
            note: "n".into(),
            counts: vec![1, 2, 3],
        },
        address: Address {
            city: "Lviv".into(),
            zip: Some("79000".into()),
            geo: Some(Geo { lat: 49.8, lon: 24.0 }),
        },
        // Longer than one cell holds as text: stored packed (`Story__GZip`).
        story: "once upon a time ".repeat(2_500),
        note: "not projected".into(),
        etag: None,
    }
}

/// The index rows of `index` in the table.
async fn index_rows(env: &Env, index: &str) -> Vec<Row> {
    all_rows(env.backend(), &env.table)
        .await
        .into_iter()
        .filter(|r| is_index_row(r) && r.get(INDEX_OF).and_then(|v| v.as_str()) == Some(index))
        .collect()
}

/// Every cell of the projected fields that the entity's row holds is in
/// the index row, with its value; the unprojected field is not; and the
/// fields decode from the index row as they were written.
fn assert_projected(index_row: &Row, entity: &Card, when: &str) {
    let stored = entity.to_row(&EncodeOptions::default()).expect("the entity encodes");
    for cell in [
        "Tags__Json",
        "Extra__Json",
        "Address_City",
        "Address_Zip",
        "Address_Geo_Lat",
        "Story__GZip",
    ] {
        assert!(stored.get(cell).is_some(), "{when}: the entity's row holds `{cell}`");
    }
    for (name, value) in stored.properties.iter() {
        let projected = ["Tags", "Extra", "Address_", "Story"]
            .iter()
            .any(|p| name.starts_with(p));
        if projected {
            assert_eq!(
                index_row.get(name),
                Some(value),
                "{when}: the index row carries `{name}`"
            );
        }
    }
    assert!(index_row.get("Note").is_none(), "{when}: `note` is not projected");
    let view = CardView::from_row(index_row.clone()).expect("the projected fields decode");
    assert_eq!(
        (&view.tags, &view.extra, &view.address, &view.story),
        (&entity.tags, &entity.extra, &entity.address, &entity.story),
        "{when}: the fields read back from the index row"
    );
}

async fn assert_both(env: &Env, store: &Store<Card>, entity: &Card, when: &str) {
    store.settle_indexes().await;
    for index in ["owner", "title"] {
        let rows = index_rows(env, index).await;
        assert_eq!(rows.len(), 1, "{when}: one row of index `{index}`");
        assert_projected(&rows[0], entity, &format!("{when}, index `{index}`"));
    }
}

pub async fn index_projections_copy_every_cell_of_each_field(env: &Env) {
    let store = env.tables.store_in::<Card>(&env.table);
    let mut c = card("1");
    store.create(&mut c).await.unwrap();
    assert_both(env, &store, &c, "after a create").await;

    // A write of projected fields of each form keeps the copies current.
    c.tags.push("d".into());
    c.extra.counts.push(4);
    c.address.geo = Some(Geo { lat: 50.4, lon: 30.5 });
    c.story = "and then ".repeat(4_000);
    store.update(&mut c).await.unwrap();
    assert_both(env, &store, &c, "after an update").await;

    // A patch of a projected field in its JSON form changes the index rows too.
    c.tags = vec!["patched".into()];
    store
        .patch(("d", "1"), Card::update().tags(c.tags.clone()))
        .await
        .unwrap();
    assert_both(env, &store, &c, "after a patch of a JSON-stored field").await;
    let read = store.get(("d", "1")).await.unwrap().expect("the card");
    assert_eq!(read.tags, c.tags);
}
