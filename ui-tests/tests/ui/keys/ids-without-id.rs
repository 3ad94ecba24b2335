use unified_tables::TableEntity;

#[derive(TableEntity)]
#[table(ids = "as_written")]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
}

fn main() {}
