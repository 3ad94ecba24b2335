use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Account {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    number: String,
    #[protected(admin, accountant)]
    credit_limit: f64,
}

fn main() {}
