use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    #[table(rename = "_Name")]
    name: String,
}

fn main() {}
