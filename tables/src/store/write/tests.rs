//! The pipeline's one entry, checked on the sources: outside this folder no
//! file calls the functions behind [`Store::commit`](crate::store::Store::commit)
//! (its sends, its exchange, the reservation of write tokens), and no file
//! of the store or of the operator's tools (`admin/`) writes to the backend itself.

use std::path::{Path, PathBuf};

/// The functions behind the entry, and the names they had before it.
const INTERNAL: [&str; 6] = [
    "send_ops",
    "exchange_ops",
    "reserve_token",
    "put_token",
    "send_settled",
    "send_tracked",
];

/// The backend's write requests, which only `settle.rs` makes.
const BACKEND_WRITES: [&str; 2] = ["execute", "transaction"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Whether `code` calls `name` (as a function or method, not a longer name).
fn calls(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + name.len()..].trim_start();
        // A method (`.execute`) may follow any receiver; a function name
        // must not be the end of a longer one.
        let starts_a_name = name.starts_with('.') || !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
        starts_a_name && after.starts_with('(')
    })
}

/// The violations in the source of the file `file` (a path under `src/`),
/// one `file:line: what` each.
fn violations(file: &str, source: &str) -> Vec<String> {
    if file.starts_with("store/write/") {
        return Vec::new();
    }
    // The store's verbs and the operator's tools write entity tables; the
    // pool's descriptor, a reshard's verbatim copy and locks are not entity writes.
    let in_store = file.starts_with("store/") || file.starts_with("admin/");
    let mut found = Vec::new();
    let mut in_tests = false;
    for (i, line) in source.lines().enumerate() {
        in_tests |= line.trim_start().starts_with("#[cfg(test)]");
        let code = line.split("//").next().unwrap_or_default();
        for name in INTERNAL {
            if calls(code, name) {
                found.push(format!(
                    "{file}:{}: calls `{name}`, an internal of the write pipeline: build a `Write` and call `Store::commit`",
                    i + 1
                ));
            }
        }
        for name in BACKEND_WRITES {
            if in_store && !in_tests && calls(code, &format!(".{name}")) {
                found.push(format!(
                    "{file}:{}: writes to the backend (`{name}`) outside the write pipeline: call `Store::commit`",
                    i + 1
                ));
            }
        }
    }
    found
}

#[test]
fn every_table_write_enters_through_commit() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 100, "the crate's sources are under {}", src.display());
    let mut found = Vec::new();
    for path in &files {
        let file = path
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        let source = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{file}: {e}"));
        found.extend(violations(&file, &source));
    }
    assert!(
        found.is_empty(),
        "writes that bypass `Store::commit`:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_bypass_is_named_by_file_and_line() {
    let source = "fn f() {\n    // reserve_token(row) in a comment is no call\n    store.reserve_token(&mut row);\n    self.shared.backend\n        .execute(&self.table, op)\n}\n#[cfg(test)]\nmod tests { fn seed() { backend.execute(\"T\", op); } }\n";
    assert_eq!(
        violations("store/union/write.rs", source),
        [
            "store/union/write.rs:3: calls `reserve_token`, an internal of the write pipeline: build a `Write` and call `Store::commit`",
            "store/union/write.rs:5: writes to the backend (`execute`) outside the write pipeline: call `Store::commit`",
        ]
    );
    // The write module itself, and a longer name, are not bypasses.
    assert!(violations("store/write/settle.rs", source).is_empty());
    assert!(violations("admin/import.rs", "self.send_ops_later(x);\nlet reserve_tokens = 1;\n").is_empty());
    // Outside the store, only the pipeline's internals are looked for.
    assert!(violations("tables/pool.rs", "backend.execute(POOL_TABLE, op)").is_empty());
    assert_eq!(violations("admin/fsck.rs", "backend.execute(&self.table, op)").len(), 1);
}
