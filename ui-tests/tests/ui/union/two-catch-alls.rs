use unified_tables::{Row, TableUnion};

#[derive(TableUnion)]
enum Event {
    Placed,
    #[table(other)]
    Unknown(Row),
    #[table(other)]
    Unread(Row),
}

fn main() {}
