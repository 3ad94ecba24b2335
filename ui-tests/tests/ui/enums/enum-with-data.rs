use unified_tables::TableEnum;

#[derive(TableEnum)]
enum Payment {
    Cash,
    Card { last_digits: String },
}

fn main() {}
