use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key, row_key)]
    email: String,
}

fn main() {}
