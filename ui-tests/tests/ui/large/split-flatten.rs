use unified_tables::{TableEntity, TableRecord};

#[derive(TableRecord)]
struct Address {
    city: String,
    street: String,
}

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    #[table(flatten, split = "text")]
    address: Address,
}

fn main() {}
