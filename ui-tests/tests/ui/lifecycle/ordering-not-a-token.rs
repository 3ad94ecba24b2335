use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Usage {
    #[table(partition_key)]
    account: String,
    #[table(row_key)]
    blob: String,
    #[table(ordering)]
    sequencer: String,
}

fn main() {}
