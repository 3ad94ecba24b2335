use unified_tables::TableEntity;

struct Connection;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    #[table(skip)]
    connection: Connection,
}

fn main() {}
