use unified_tables::TableEntity;

#[derive(TableEntity)]
struct Document {
    #[table(partition_key)]
    folder: String,
    #[table(row_key)]
    name: String,
    #[index(project(all))]
    title: String,
    #[table(split = "gzip")]
    body: String,
}

fn main() {}
