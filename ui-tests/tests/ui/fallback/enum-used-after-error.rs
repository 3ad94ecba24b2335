// The derive's error is the only error: storing the enum in a field adds none.
use unified_tables::{TableEntity, TableEnum};

#[derive(TableEnum)]
enum Status {
    Open,
    #[table(renamed = "OnHold")]
    Paused,
}

#[derive(TableEntity)]
struct Ticket {
    #[table(partition_key)]
    queue: String,
    #[table(row_key)]
    number: String,
    status: Status,
}

fn main() {}
