use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    region: String,
    email: String,
}

fn main() {}
