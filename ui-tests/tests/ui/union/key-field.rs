use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    Placed {
        #[table(partition_key)]
        order: String,
        amount: f64,
    },
}

fn main() {}
