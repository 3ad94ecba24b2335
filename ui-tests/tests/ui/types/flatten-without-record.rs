use unified_tables::TableEntity;

struct Address {
    city: String,
    street: String,
}

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    #[table(flatten)]
    address: Address,
}

fn main() {}
