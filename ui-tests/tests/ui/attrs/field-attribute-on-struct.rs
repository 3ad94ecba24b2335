use unified_tables::TableEntity;

#[derive(TableEntity)]
#[table(partition_key)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
}

fn main() {}
