use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
    nickname: String,
    #[alias("Nickname")]
    name: String,
}

fn main() {}
