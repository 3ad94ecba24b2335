use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    Limited {
        #[protected("admin")]
        limit: i64,
    },
}

fn main() {}
