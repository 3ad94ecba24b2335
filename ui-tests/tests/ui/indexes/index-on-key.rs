use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[unique]
    #[table(row_key)]
    email: String,
}

fn main() {}
