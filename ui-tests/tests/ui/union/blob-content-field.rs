use unified_tables::{BlobContent, TableUnion};

#[derive(TableUnion)]
enum Event {
    Attached {
        #[blob_content]
        file: Option<BlobContent>,
    },
}

fn main() {}
