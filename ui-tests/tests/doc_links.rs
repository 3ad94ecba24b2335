//! Every documentation link a compile error prints leads somewhere: the page
//! exists (`derive.TableEntity.html` is `tables/docs/table_entity.md`, which
//! `tables/src/lib.rs` includes on the derive's re-export) and the `#anchor`
//! is a heading on it, as rustdoc names headings.
//!
//! Reads the expected `.stderr` files of the compile-fail tests and the
//! sources whose messages carry a full link (the derive's and the runtime
//! crate's `on_unimplemented` notes), and the markdown the pages are built
//! from. No network.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const BASE: &str = "https://docs.rs/unified-tables/latest/unified_tables/";

/// Ids rustdoc gives its own parts of a page: a heading with one of these
/// slugs gets `-1` appended, so a link to it would miss.
const RUSTDOC_IDS: &[&str] = &[
    "main",
    "main-content",
    "search",
    "settings",
    "help",
    "fields",
    "variants",
    "implementations",
    "trait-implementations",
    "synthetic-implementations",
    "blanket-implementations",
    "implementors",
    "methods",
    "required-methods",
    "provided-methods",
    "modules",
    "structs",
    "enums",
    "traits",
    "functions",
    "macros",
    "derives",
    "reexports",
    "constants",
    "statics",
    "types",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ui-tests sits in the workspace")
        .to_path_buf()
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// The page and anchor of every link to the crate's docs in `text`.
fn links(text: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices(BASE) {
        let rest = &text[start + BASE.len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "._-/#".contains(c)))
            .unwrap_or(rest.len());
        let link = rest[..end].trim_end_matches(['.', '/']);
        if link.is_empty() {
            continue; // the crate root, as a base to append to
        }
        match link.split_once('#') {
            Some((page, anchor)) => found.push((page.to_owned(), Some(anchor.to_owned()))),
            None => found.push((link.to_owned(), None)),
        }
    }
    found
}

/// The markdown file a documentation page is built from.
fn markdown_of(page: &str) -> Option<PathBuf> {
    let docs = workspace().join("tables/docs");
    if let Some(name) = page.strip_prefix("derive.").and_then(|p| p.strip_suffix(".html")) {
        return Some(docs.join(format!("{}.md", snake_case(name))));
    }
    if page == "index.html" {
        return Some(docs.join("crate.md"));
    }
    if let Some(chapter) = page.strip_prefix("guide/").and_then(|p| p.strip_suffix("/index.html")) {
        return Some(docs.join(format!("guide/{chapter}.md")));
    }
    None
}

/// Whether `tables/src/lib.rs` includes `docs/{file}` among the attributes of
/// the re-export of derive `name` (the page rustdoc renders for it).
fn derive_page_includes(name: &str, file: &str) -> bool {
    let lib = fs::read_to_string(workspace().join("tables/src/lib.rs")).expect("tables/src/lib.rs");
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    let export = format!("pub use unified_tables_derive::{name};");
    let include = format!("include_str!(\"../docs/{file}\")");
    lines.iter().enumerate().any(|(i, line)| {
        *line == export
            && lines[..i]
                .iter()
                .rev()
                .take_while(|l| l.starts_with("#[") || l.starts_with("//"))
                .any(|l| l.contains(&include))
    })
}

fn snake_case(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// A heading's text as rendered: code spans kept verbatim (without the
/// backticks), link targets dropped, emphasis markers removed.
fn heading_text(markdown: &str) -> String {
    let mut text = String::new();
    let mut chars = markdown.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' => {
                for c in chars.by_ref() {
                    if c == '`' {
                        break;
                    }
                    text.push(c);
                }
            }
            '*' | '[' => {}
            ']' if chars.peek() == Some(&'(') => {
                for c in chars.by_ref() {
                    if c == ')' {
                        break;
                    }
                }
            }
            c => text.push(c),
        }
    }
    text.trim().to_owned()
}

/// Rustdoc's id for a heading: alphanumerics, `-` and `_` kept (ASCII
/// lowercased), ASCII whitespace turned into `-`, everything else dropped.
fn anchor(text: &str) -> String {
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(if c.is_ascii() { c.to_ascii_lowercase() } else { c })
            } else if c.is_whitespace() && c.is_ascii() {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// The anchors of a markdown page's headings (outside code blocks), each
/// with how many headings produce it.
fn anchors(markdown: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let mut fence: Option<&str> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => {
                fence = Some(m);
                continue;
            }
            (Some(open), Some(m)) if open == m => {
                fence = None;
                continue;
            }
            _ => {}
        }
        if fence.is_some() {
            continue;
        }
        let level = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&level) && line[level..].starts_with(' ') {
            *out.entry(anchor(&heading_text(&line[level..]))).or_insert(0) += 1;
        }
    }
    out
}

#[test]
fn every_documentation_link_in_a_compile_error_leads_to_a_heading() {
    let root = workspace();
    let mut sources = Vec::new();
    files(&root.join("ui-tests/tests/ui"), "stderr", &mut sources);
    let stderr_files = sources.len();
    files(&root.join("tables-derive/src"), "rs", &mut sources);
    files(&root.join("tables/src"), "rs", &mut sources);
    assert!(stderr_files > 0, "no .stderr files found under ui-tests/tests/ui");

    let mut checked = BTreeSet::new();
    let mut problems = Vec::new();
    for source in &sources {
        let text = fs::read_to_string(source).expect("readable");
        let shown = source.strip_prefix(&root).unwrap_or(source).display().to_string();
        for (page, anchor) in links(&text) {
            if !checked.insert((page.clone(), anchor.clone())) {
                continue;
            }
            let Some(md) = markdown_of(&page) else {
                problems.push(format!("{shown}: no markdown file is known for page `{page}`"));
                continue;
            };
            let Ok(markdown) = fs::read_to_string(&md) else {
                problems.push(format!(
                    "{shown}: page `{page}` links to {}, which does not exist",
                    md.display()
                ));
                continue;
            };
            if let Some(name) = page.strip_prefix("derive.").and_then(|p| p.strip_suffix(".html")) {
                let file = format!("{}.md", snake_case(name));
                if !derive_page_includes(name, &file) {
                    problems.push(format!(
                        "{shown}: page `{page}` is built from tables/docs/{file}, but tables/src/lib.rs does not \
                         include it on `pub use unified_tables_derive::{name};`"
                    ));
                }
            }
            let Some(anchor) = anchor else { continue };
            let headings = anchors(&markdown);
            let file = md.strip_prefix(&root).unwrap_or(&md).display().to_string();
            match headings.get(&anchor) {
                None => problems.push(format!(
                    "{shown}: `{page}#{anchor}` names no heading of {file} (its headings: {})",
                    headings.keys().cloned().collect::<Vec<_>>().join(", ")
                )),
                Some(n) if *n > 1 => problems.push(format!(
                    "{shown}: `#{anchor}` is the anchor of {n} headings of {file}; rustdoc suffixes all but the first"
                )),
                Some(_) if RUSTDOC_IDS.contains(&anchor.as_str()) => problems.push(format!(
                    "{shown}: `#{anchor}` is an id rustdoc uses for its own part of the page; rename the heading in {file}"
                )),
                Some(_) => {}
            }
        }
    }
    assert!(
        checked.iter().any(|(_, a)| a.is_some()),
        "no links with an anchor found: has the link format changed?"
    );
    assert!(
        problems.is_empty(),
        "broken documentation links:\n{}",
        problems.join("\n")
    );
}

#[test]
fn anchors_are_computed_as_rustdoc_computes_them() {
    let cases = [
        (
            "`#[table(split = \"text\" | \"gzip\" | \"binary\")]` and `#[table(offload = \"never\")]`",
            "tablesplit--text--gzip--binary-and-tableoffload--never",
        ),
        ("`#[protected(\"role,role\")]`", "protectedrolerole"),
        ("`#[table(ids = \"as_written\")]`", "tableids--as_written"),
        ("`#[table(also = [\"...\", ..])]`", "tablealso---"),
        ("Variant attributes", "variant-attributes"),
        ("[`TableRecord`](crate::TableRecord) payloads", "tablerecord-payloads"),
    ];
    for (heading, expected) in cases {
        assert_eq!(anchor(&heading_text(heading)), expected, "{heading}");
    }
    let page = "# Top\n```\n# not a heading\n```\n## `#[alias(\"Old\")]`\n## Top\n";
    let found = anchors(page);
    assert_eq!(found.get("top"), Some(&2));
    assert_eq!(found.get("aliasold"), Some(&1));
    assert!(!found.contains_key("not-a-heading"));
}
