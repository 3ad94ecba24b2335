use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    #[table(also = [Placed])]
    Placed,
}

fn main() {}
