use unified_tables::TableUnion;

#[derive(TableUnion)]
struct Event {
    amount: f64,
}

fn main() {}
