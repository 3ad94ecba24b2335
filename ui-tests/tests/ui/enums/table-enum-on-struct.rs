use unified_tables::TableEnum;

#[derive(TableEnum)]
struct Status {
    open: bool,
}

fn main() {}
