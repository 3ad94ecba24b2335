use unified_tables::{QueryOptions, Store, TableEntity};

#[derive(TableEntity)]
struct Order {
    #[table(partition_key)]
    customer: String,
    #[table(row_key)]
    number: String,
    total: f64,
}

async fn this_year(orders: Store<Order>) {
    let _ = orders.query(QueryOptions::all().row_key_prefix("2024-")).await;
}

fn main() {
    let _ = this_year;
}
