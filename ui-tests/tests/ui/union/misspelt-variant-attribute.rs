use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    #[table(tga = "OrderPlaced")]
    Placed,
}

fn main() {}
