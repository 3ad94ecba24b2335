use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event<T> {
    Placed(T),
}

fn main() {}
