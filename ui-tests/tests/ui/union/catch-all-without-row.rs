use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    Placed,
    #[table(other)]
    Unknown,
}

fn main() {}
