use unified_tables::{QueryOptions, Store, TableEntity};

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    name: String,
}

#[derive(TableEntity)]
struct Invoice {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    number: String,
    total: f64,
}

async fn names(invoices: Store<Invoice>) {
    let _ = invoices
        .query(QueryOptions::partition("eu").select(Customer::projection(|c| [c.name.col()])))
        .await;
}

fn main() {
    let _ = names;
}
