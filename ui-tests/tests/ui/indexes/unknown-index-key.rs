use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Ticket {
    #[table(partition_key)]
    queue: String,
    #[table(row_key)]
    id: String,
    #[index(globl)]
    owner: String,
}

fn main() {}
