// The derive's error is the only error: flattening the record adds none.
use unified_tables::{TableEntity, TableRecord};

#[derive(TableRecord)]
struct Address {
    #[table(rename = "Street_Line")]
    street: String,
}

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    #[table(flatten)]
    address: Address,
}

fn main() {}
