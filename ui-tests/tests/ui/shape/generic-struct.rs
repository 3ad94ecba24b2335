use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Envelope<T> {
    #[table(partition_key)]
    topic: String,
    #[table(row_key)]
    id: String,
    payload: T,
}

fn main() {}
