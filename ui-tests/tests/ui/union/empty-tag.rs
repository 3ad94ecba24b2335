use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    #[table(tag = "")]
    Placed,
}

fn main() {}
