use unified_tables::TableEntity;

#[derive(TableEntity)]
struct User {
    #[table(partition_key)]
    name: String,
    #[table(row_key)]
    kind: String,
    #[unique(global)]
    email: String,
}

fn main() {}
