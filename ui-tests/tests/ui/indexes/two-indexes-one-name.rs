use unified_tables::TableEntity;

#[derive(TableEntity)]
#[table(index(name = "email", fields(email, name)))]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    id: String,
    #[unique]
    email: String,
    name: String,
}

fn main() {}
