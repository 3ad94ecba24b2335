use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Account {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    id: String,
    #[index]
    #[protected("admin")]
    credit_limit: i64,
}

fn main() {}
