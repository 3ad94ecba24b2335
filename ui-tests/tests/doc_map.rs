//! The crate page's map ("Where to go next" in `tables/docs/crate.md`) names
//! every public module, guide chapter and backend decorator: the modules
//! are read from `tables/public-api.txt` (the checked public surface), the
//! decorators from `tables/src/backend/`, as the types whose `Backend` or
//! `BlobBackend` impl carries `#[deny(clippy::missing_trait_methods)]`.
//! A module or decorator added without a line on the map fails here.

use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("ui-tests sits in the workspace")
        .to_path_buf()
}

/// The map: the crate page from its "Where to go next" heading on.
fn map() -> String {
    let page = fs::read_to_string(workspace().join("tables/docs/crate.md")).expect("tables/docs/crate.md");
    let start = page
        .find("# Where to go next")
        .expect("crate.md has a \"Where to go next\" section");
    page[start..].to_owned()
}

fn public_api() -> String {
    fs::read_to_string(workspace().join("tables/public-api.txt")).expect("tables/public-api.txt")
}

/// Every public module below the crate root, as `a::b`.
fn modules(api: &str) -> Vec<String> {
    api.lines()
        .filter_map(|line| line.strip_prefix("mod unified_tables::"))
        .map(str::to_owned)
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("a source directory").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The names of the types whose backend impls are guarded as decorators.
fn decorators() -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&workspace().join("tables/src/backend"), &mut files);
    let mut names = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("a source file");
        let mut guarded = false;
        for line in text.lines().map(str::trim) {
            if line == "#[deny(clippy::missing_trait_methods)]" {
                guarded = true;
                continue;
            }
            if guarded && line.starts_with("impl") {
                // `impl<B: Backend> Backend for CountingBackend<B> {`
                let name = line
                    .split(" for ")
                    .nth(1)
                    .and_then(|rest| rest.split(|c: char| !c.is_alphanumeric() && c != '_').next())
                    .unwrap_or_else(|| panic!("{}: an impl without ` for `: {line}", file.display()));
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_owned());
                }
            }
            if !line.starts_with("#[") {
                guarded = false;
            }
        }
    }
    names.sort();
    names
}

#[test]
fn the_crate_page_maps_every_module_guide_chapter_and_decorator() {
    let map = map();
    let api = public_api();
    let modules = modules(&api);
    assert!(
        modules.iter().any(|m| m == "guide::getting_started") && modules.iter().any(|m| m == "backend::throttle"),
        "public-api.txt lists the modules: {modules:?}"
    );
    let missing: Vec<&String> = modules.iter().filter(|m| !map.contains(&format!("`{m}`"))).collect();
    assert!(
        missing.is_empty(),
        "the map in tables/docs/crate.md (\"Where to go next\") does not name these modules of \
         tables/public-api.txt; add a line for each: {missing:?}"
    );

    let decorators = decorators();
    for expected in [
        "CountingBackend",
        "FaultyBackend",
        "ThrottledBackend",
        "RetryingReads",
        "PooledBackend",
    ] {
        assert!(decorators.iter().any(|d| d == expected), "{expected} in {decorators:?}");
    }
    for d in &decorators {
        assert!(
            api.lines()
                .any(|l| l.starts_with("struct unified_tables::backend::") && l.ends_with(&format!("::{d}"))),
            "decorator {d} is not a public struct under `backend` in tables/public-api.txt"
        );
    }
    let missing: Vec<&String> = decorators.iter().filter(|d| !map.contains(d.as_str())).collect();
    assert!(
        missing.is_empty(),
        "the map in tables/docs/crate.md (\"Where to go next\") does not name these decorators: {missing:?}"
    );
}

#[test]
fn the_map_check_notices_a_missing_module() {
    let map = map().replace("`backend::throttle`", "`backend::throttled`");
    let modules = modules(&public_api());
    assert!(modules.iter().any(|m| !map.contains(&format!("`{m}`"))));
}
