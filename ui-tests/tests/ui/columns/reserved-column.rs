use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Reading {
    #[table(partition_key)]
    sensor: String,
    #[table(row_key)]
    sequence: String,
    #[table(rename = "Timestamp")]
    taken_at: String,
}

fn main() {}
