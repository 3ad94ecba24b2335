use unified_tables::{TableEntity, TableRecord};

#[derive(TableRecord)]
struct Billing {
    plan: String,
    #[protected("admin")]
    credit_limit: i64,
}

#[derive(TableEntity)]
struct Account {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    id: String,
    #[index(global, project(billing))]
    country: String,
    #[table(flatten)]
    billing: Billing,
}

fn main() {}
