use unified_tables::{ETag, TableUnion};

#[derive(TableUnion)]
enum Event {
    Placed {
        amount: f64,
        #[table(etag)]
        etag: Option<ETag>,
    },
}

fn main() {}
