use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(partition_key)]
    country: String,
    #[table(row_key)]
    email: String,
}

fn main() {}
