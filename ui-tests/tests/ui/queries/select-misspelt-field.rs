use unified_tables::{QueryOptions, TableEntity};

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    name: String,
}

fn main() {
    let _ = QueryOptions::partition("eu").select(Customer::projection(|c| [c.nmae.col()]));
}
