//! A newcomer's program: a union stream and a file's content polled in
//! place, in a crate that depends on nothing from `futures`.

use unified_tables::{BlobContent, Error, TableEntity, TableRecord, TableUnion, UnionQuery, UnionStore};

#[derive(TableRecord, Debug, Clone)]
struct Placed {
    total: f64,
}

#[derive(TableUnion, Debug, Clone)]
enum Event {
    Placed(Placed),
    Cancelled,
}

#[derive(TableEntity)]
struct Document {
    #[table(partition_key)]
    folder: String,
    #[table(row_key)]
    name: String,
    #[blob_content]
    scan: Option<BlobContent>,
}

async fn totals(events: UnionStore<Event>) -> Result<f64, Error> {
    let mut total = 0.0;
    let mut s = events.stream(UnionQuery::partition("order-1"));
    while let Some(entry) = s.next().await {
        if let Some(Event::Placed(p)) = entry?.item {
            total += p.total;
        }
    }
    let mut s = events.stream(UnionQuery::partition("order-2"));
    while let Some(entry) = s.try_next().await? {
        total += entry.key.row_key.len() as f64;
    }
    Ok(total)
}

async fn size(doc: Document) -> Result<usize, Error> {
    let mut size = 0;
    if let Some(scan) = &doc.scan {
        let mut chunks = scan.open();
        while let Some(chunk) = chunks.next().await {
            size += chunk?.len();
        }
        let mut chunks = scan.open();
        while let Some(chunk) = chunks.try_next().await? {
            size += chunk.len();
        }
    }
    Ok(size)
}

fn assert_unpin_send<S: Unpin + Send>(_: &S) {}

fn main() {
    let _ = (totals, size);
    let db = unified_tables::Tables::memory();
    assert_unpin_send(&db.union_store::<Event>("Events").stream(UnionQuery::partition("p")));
    assert_unpin_send(&BlobContent::from_bytes(vec![1, 2, 3], "application/octet-stream").open());
    let _ = Event::Cancelled;
    let _ = Document { folder: String::new(), name: String::new(), scan: None };
}
