use unified_tables::{ETag, TableEntity};

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    #[table(etag)]
    etag: Option<ETag>,
    #[table(etag)]
    version: Option<ETag>,
}

fn main() {}
