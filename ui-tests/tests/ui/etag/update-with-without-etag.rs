use unified_tables::{Concurrency, Store, TableEntity};

#[derive(TableEntity)]
struct Setting {
    #[table(partition_key)]
    scope: String,
    #[table(row_key)]
    name: String,
    value: String,
}

async fn save(store: Store<Setting>, mut setting: Setting) {
    let _ = store.update_with(&mut setting, Concurrency::Strict).await;
}

fn main() {}
