use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Note {
    #[table(id)]
    id: String,
    #[table(partition_key)]
    folder: String,
    body: String,
}

fn main() {}
