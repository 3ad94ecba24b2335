use unified_tables::TableUnion;

#[derive(TableUnion)]
#[table(name = "Events")]
enum Event {
    Placed,
}

fn main() {}
