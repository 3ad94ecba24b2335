use unified_tables::{TableRecord, TableUnion};

#[derive(TableRecord)]
struct Promoted {
    #[protected("admin")]
    role: String,
}

#[derive(TableUnion)]
enum Event {
    Promoted(Promoted),
}

fn main() {}
