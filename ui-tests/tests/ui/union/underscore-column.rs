use unified_tables::TableUnion;

#[derive(TableUnion)]
enum Event {
    Placed {
        #[table(rename = "_TypeName")]
        kind: String,
    },
}

fn main() {}
