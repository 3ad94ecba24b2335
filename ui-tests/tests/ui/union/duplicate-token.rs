use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    Placed,
    #[table(tag = "Placed")]
    Replaced,
}

fn main() {}
