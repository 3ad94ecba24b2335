use unified_tables::{QueryOptions, TableEntity};

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    name: String,
    #[table(skip)]
    cached_score: u32,
}

fn main() {
    let _ = QueryOptions::partition("eu").select(Customer::projection(|c| [c.name.col(), c.cached_score.col()]));
}
