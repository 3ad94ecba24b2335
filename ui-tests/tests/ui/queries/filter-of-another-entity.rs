use unified_tables::{QueryOptions, Store, TableEntity};

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    visits: u32,
}

#[derive(TableEntity)]
struct Invoice {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    number: String,
    total: f64,
}

async fn frequent(invoices: Store<Invoice>) {
    let frequent = Customer::filter(|c| c.visits.ge(10u32));
    let _ = invoices.query(QueryOptions::partition("eu").filter(frequent)).await;
}

fn main() {
    let _ = frequent;
}
