use unified_tables::{DateTime, TableEntity};

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    #[table(timestamp)]
    timestamp: DateTime,
}

fn main() {}
