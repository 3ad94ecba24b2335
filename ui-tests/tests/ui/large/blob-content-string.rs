use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Document {
    #[table(partition_key)]
    folder: String,
    #[table(row_key)]
    name: String,
    #[blob_content]
    body: String,
}

fn main() {}
