use unified_tables::TableEntity;

#[derive(TableEntity)]
struct T {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
}

fn main() {
    let _ = unified_tables::Tables::memory().store::<T>();
}
