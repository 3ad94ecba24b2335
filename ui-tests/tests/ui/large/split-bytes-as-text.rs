use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Document {
    #[table(partition_key)]
    folder: String,
    #[table(row_key)]
    name: String,
    #[table(split = "text")]
    scan: Vec<u8>,
}

fn main() {}
