use unified_tables::TableEntity;

#[derive(TableEntity)]
#[table(table_name = "Customers")]
struct Customer {
    #[table(partition_key)]
    region: String,
    #[table(row_key)]
    email: String,
}

fn main() {}
