use unified_tables::{TableEntity, TableRecord};

#[derive(TableRecord)]
struct Address {
    city: String,
}

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    id: String,
    #[index]
    #[table(flatten)]
    address: Address,
}

fn main() {}
