use unified_tables::{TableEntity, Tables};

#[derive(TableEntity)]
struct Ticket {
    #[table(partition_key)]
    queue: String,
    #[table(row_key)]
    id: String,
    #[index(global)]
    reporter: String,
}

fn main() {
    let tickets = Tables::memory().store::<Ticket>();
    let _ = tickets.index(Ticket::BY_REPORTER).find("q", "ann");
}
