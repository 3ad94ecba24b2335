use unified_tables::{Store, TableEntity};

#[derive(TableEntity)]
struct Setting {
    #[table(partition_key)]
    scope: String,
    #[table(row_key)]
    name: String,
    value: String,
}

async fn remove(store: Store<Setting>, setting: Setting) {
    let _ = store.delete_entity(&setting).await;
}

fn main() {}
