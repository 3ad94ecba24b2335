use unified_tables::{DateTime, ETag, TableEntity};

#[derive(TableEntity)]
struct Ticket {
    #[table(partition_key)]
    queue: String,
    #[table(row_key)]
    number: String,
    subject: String,
    #[table(etag)]
    etag: Option<ETag>,
    #[table(timestamp)]
    timestamp: Option<DateTime>,
}

fn main() {
    let _ = Ticket::update().timestamp(DateTime::UNIX_EPOCH);
}
