use unified_tables::{TableEntity, TableEnum};

#[derive(TableEnum)]
enum Status {
    Open,
    Closed,
}

#[derive(TableEntity)]
struct Ticket {
    #[table(partition_key)]
    queue: String,
    #[table(row_key)]
    number: String,
    status: Status,
    hits: u64,
    subject: String,
    owner: Option<String>,
    labels: Vec<String>,
    #[table(split = "text")]
    body: String,
    #[table(skip)]
    cache: u32,
    #[protected("admin")]
    limit: i64,
}

fn main() {
    let hits: u64 = 3;
    let _ = Ticket::filter(|c| c.limit.ge(hits));
}
