use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    #[table(also = ["OldPlaced", ""])]
    Placed,
}

fn main() {}
