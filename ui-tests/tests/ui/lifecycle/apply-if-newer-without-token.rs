use unified_tables::{TableEntity, Tables};

#[derive(TableEntity)]
struct Usage {
    #[table(partition_key)]
    account: String,
    #[table(row_key)]
    blob: String,
    bytes: u64,
}

async fn record(db: Tables) {
    let _ = db.store::<Usage>().apply_if_newer(("a", "b"), "0042", |u| u.bytes = 1).await;
}

fn main() {
    let _ = record;
}
