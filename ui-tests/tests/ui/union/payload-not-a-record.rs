use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    Noted(String),
}

fn main() {}
