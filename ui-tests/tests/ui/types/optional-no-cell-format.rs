use unified_tables::TableEntity;

struct Address {
    city: String,
}

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    address: Option<Address>,
}

fn main() {}
