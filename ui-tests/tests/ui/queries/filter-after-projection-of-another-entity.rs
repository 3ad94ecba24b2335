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

async fn totals(invoices: Store<Invoice>) {
    let options = QueryOptions::partition("eu")
        .select(Invoice::projection(|c| [c.total.col()]))
        .filter(Customer::filter(|c| c.visits.ge(10u32)));
    let _ = invoices.query(options).await;
}

fn main() {
    let _ = totals;
}
