//! The README's quick start is the code of `examples/quickstart.rs`: the
//! README block, without its hidden `# ` lines, is the example without its
//! one line that reads a connection string (the README's doc test runs the
//! block in memory instead).

use std::path::Path;

fn workspace_file(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The body of the README's Rust block that holds `async fn main`.
fn readme_quickstart() -> Vec<String> {
    let readme = workspace_file("README.md");
    let mut blocks = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in readme.lines() {
        match (&mut current, line.trim_start().starts_with("```")) {
            (None, true) if line.trim() == "```rust" => current = Some(Vec::new()),
            (Some(_), true) => blocks.push(current.take().expect("open")),
            (Some(block), false) => block.push(line.to_owned()),
            _ => {}
        }
    }
    blocks
        .into_iter()
        .find(|b| b.iter().any(|l| l.contains("async fn main")))
        .expect("the README has a Rust block with `async fn main`")
}

#[test]
fn the_readme_quick_start_is_the_quickstart_example() {
    let shown: Vec<String> = readme_quickstart()
        .into_iter()
        .filter(|l| !(l.trim_start().starts_with("# ") || l.trim() == "#"))
        .collect();
    let example: Vec<String> = workspace_file("examples/quickstart.rs")
        .lines()
        .filter(|l| l.trim() != "use unified_tables_examples::tables_from_env;")
        .map(str::to_owned)
        .collect();
    assert_eq!(
        shown.join("\n").trim(),
        example.join("\n").trim(),
        "README.md's quick start and examples/quickstart.rs differ: copy the example into the README"
    );
}
