use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    #[alias("Name")]
    first_name: String,
    #[alias("Name")]
    last_name: String,
}

fn main() {}
