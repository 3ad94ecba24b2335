use unified_tables::{Row, TableUnion};

#[derive(TableUnion)]
enum Event {
    #[table(other)]
    Unknown(Row),
}

fn main() {}
