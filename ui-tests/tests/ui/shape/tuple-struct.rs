use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer(String, String);

fn main() {}
