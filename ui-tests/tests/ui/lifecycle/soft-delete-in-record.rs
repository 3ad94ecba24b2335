use unified_tables::{DateTime, TableRecord};

#[derive(TableRecord)]
struct Audit {
    #[table(soft_delete)]
    deleted_at: Option<DateTime>,
}

fn main() {}
