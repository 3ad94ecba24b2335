use unified_tables::{DateTime, TableEntity};

#[derive(TableEntity)]
struct Post {
    #[table(partition_key)]
    room: String,
    #[table(row_key)]
    id: String,
    #[table(soft_delete)]
    deleted_at: Option<DateTime>,
    #[table(soft_delete)]
    removed_at: Option<DateTime>,
}

fn main() {}
