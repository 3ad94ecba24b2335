use unified_tables::TableRecord;

#[derive(TableRecord)]
struct Address {
    #[table(partition_key)]
    country: String,
    city: String,
}

fn main() {}
