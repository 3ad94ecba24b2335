use unified_tables::{TableRecord, TableUnion};

#[derive(TableRecord)]
struct Placed {
    amount: f64,
}

#[derive(TableRecord)]
struct Audit {
    by: String,
}

#[derive(TableUnion)]
enum Event {
    Placed(Placed, Audit),
}

fn main() {}
