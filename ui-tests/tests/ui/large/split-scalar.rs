use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Counter {
    #[table(partition_key)]
    scope: String,
    #[table(row_key)]
    name: String,
    #[table(split = "text")]
    value: i64,
}

fn main() {}
