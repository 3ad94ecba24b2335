use unified_tables::TableEnum;

#[derive(TableEnum)]
enum Status {
    Open,
    #[table(name = "OnHold")]
    Paused,
}

fn main() {}
