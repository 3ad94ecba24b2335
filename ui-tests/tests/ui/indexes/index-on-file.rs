use unified_tables::{BlobContent, TableEntity};

#[derive(TableEntity)]
struct Document {
    #[table(partition_key)]
    folder: String,
    #[table(row_key)]
    name: String,
    #[unique]
    #[blob_content]
    scan: Option<BlobContent>,
}

fn main() {}
