use unified_tables::TableEntity;

#[derive(TableEntity)]
#[alias("People")]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
}

fn main() {}
