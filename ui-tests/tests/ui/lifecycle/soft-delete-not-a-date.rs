use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Post {
    #[table(partition_key)]
    room: String,
    #[table(row_key)]
    id: String,
    #[table(soft_delete)]
    deleted: Option<bool>,
}

fn main() {}
