use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    #[table(also = ["Shop.Events.Placed, Shop"])]
    Placed,
    #[table(also = ["Shop.Events.Placed, Shop"])]
    Replaced,
}

fn main() {}
