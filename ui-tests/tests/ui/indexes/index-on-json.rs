use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    id: String,
    #[index]
    tags: Vec<String>,
}

fn main() {}
