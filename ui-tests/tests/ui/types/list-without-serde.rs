use unified_tables::TableEntity;

struct Preferences {
    theme: String,
}

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    history: Vec<Preferences>,
}

fn main() {}
