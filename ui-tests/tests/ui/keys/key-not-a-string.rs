use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Order {
    #[table(partition_key)]
    customer: String,
    #[table(row_key)]
    number: u64,
    total: f64,
}

fn main() {}
