use unified_tables::{DateTime, TableUnion};

#[derive(TableUnion)]
enum Event {
    Placed {
        #[table(created_at)]
        at: Option<DateTime>,
    },
}

fn main() {}
