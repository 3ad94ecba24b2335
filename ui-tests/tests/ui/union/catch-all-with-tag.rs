use unified_tables::{Row, TableUnion};

#[derive(TableUnion)]
enum Event {
    Placed,
    #[table(other, tag = "Unknown")]
    Unknown(Row),
}

fn main() {}
