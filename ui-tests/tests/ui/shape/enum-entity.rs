use unified_tables::TableEntity;

#[derive(TableEntity)]
enum Status {
    Open,
    Closed,
}

fn main() {}
