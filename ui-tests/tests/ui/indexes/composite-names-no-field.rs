use unified_tables::TableEntity;

#[derive(TableEntity)]
#[table(index(name = "status_opened", fields(status, opend)))]
struct Ticket {
    #[table(partition_key)]
    queue: String,
    #[table(row_key)]
    id: String,
    status: String,
    opened: String,
}

fn main() {}
