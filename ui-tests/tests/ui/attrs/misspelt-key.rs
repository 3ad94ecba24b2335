use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(rowkey)]
    email: String,
}

fn main() {}
