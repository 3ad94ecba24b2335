//! The overview of errors on `Error` (tables/docs/errors.md) names every
//! variant of the enum, so a new variant cannot go undocumented there.

use std::path::Path;

fn workspace_file(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_error_overview_names_every_variant() {
    let source = workspace_file("tables/src/error/mod.rs");
    let start = source.find("pub enum Error {").expect("the enum");
    let body = &source[start..];
    let body = &body[..body.find("\n}\n").expect("the enum's end")];
    let variants: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("    "))
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|l| l.split(|c: char| !c.is_ascii_alphanumeric()).next().unwrap_or(""))
        .collect();
    assert!(variants.len() > 20, "variants found: {variants:?}");
    let overview = workspace_file("tables/docs/errors.md");
    let missing: Vec<&&str> = variants
        .iter()
        .filter(|v| !overview.contains(&format!("`{v}`")))
        .collect();
    assert!(missing.is_empty(), "tables/docs/errors.md does not name {missing:?}");
}
