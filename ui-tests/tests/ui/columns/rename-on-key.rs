use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key, rename = "Region")]
    region: String,
    #[table(row_key)]
    email: String,
}

fn main() {}
