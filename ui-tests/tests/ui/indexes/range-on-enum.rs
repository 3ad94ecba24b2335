use unified_tables::{TableEntity, TableEnum, Tables};

#[derive(TableEnum, Clone, Copy)]
enum Status {
    Open,
    Closed,
}

#[derive(TableEntity)]
struct Ticket {
    #[table(partition_key)]
    queue: String,
    #[table(row_key)]
    id: String,
    #[index]
    status: Status,
}

fn main() {
    let tickets = Tables::memory().store::<Ticket>();
    let _ = tickets.index(Ticket::BY_STATUS).range("q", Status::Open..Status::Closed);
}
