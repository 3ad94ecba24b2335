use unified_tables::TableEntity;

struct Transcript {
    lines: Vec<String>,
}

#[derive(TableEntity)]
struct Call {
    #[table(partition_key)]
    line: String,
    #[table(row_key)]
    started: String,
    #[table(split = "gzip")]
    transcript: Transcript,
}

fn main() {}
