use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    Noted {
        #[table(split = "text")]
        body: String,
    },
}

fn main() {}
