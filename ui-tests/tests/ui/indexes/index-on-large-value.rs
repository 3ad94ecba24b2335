use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Document {
    #[table(partition_key)]
    folder: String,
    #[table(row_key)]
    name: String,
    #[index]
    #[table(split = "text")]
    body: String,
}

fn main() {}
