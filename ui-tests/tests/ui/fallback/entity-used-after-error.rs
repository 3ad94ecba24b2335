// The derive's error is the only error: code using the entity adds none.
use unified_tables::{TableEntity, Tables};

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    email: String,
}

fn save(customer: &Customer) {
    let _row = customer.to_row(&Default::default());
    let _store = Tables::memory().store::<Customer>();
}

fn main() {}
