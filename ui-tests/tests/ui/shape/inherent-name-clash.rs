use unified_tables::TableEntity;

// The derive adds `Order::filter`; a type with its own says
// `#[table(no_inherent)]` to keep it.
#[derive(TableEntity)]
struct Order {
    #[table(partition_key)]
    customer: String,
    #[table(row_key)]
    number: String,
}

impl Order {
    fn filter(&self) -> bool {
        true
    }
}

fn main() {}
