use unified_tables::{TableEntity, Tables};

#[derive(TableEntity)]
struct Post {
    #[table(partition_key)]
    room: String,
    #[table(row_key)]
    id: String,
}

async fn remove(db: Tables) {
    let _ = db.store::<Post>().soft_delete(("room", "1")).await;
}

fn main() {
    let _ = remove;
}
