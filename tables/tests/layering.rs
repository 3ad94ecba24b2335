//! The layering of `tables/src`, held against the floor table of
//! `ARCHITECTURE.md`: every module is on a floor, a module imports only
//! from its own floor and the floors below, and no two modules import each
//! other, directly or round a circle.
//!
//! What counts as an import: every `use` of a path that starts `crate::`,
//! `super::` or `self::`, and every such path written inline (`$crate::` in
//! a macro too). A path is charged to the module file that defines its
//! longest prefix; a name the crate root re-exports (`crate::Error`) to
//! where the root takes it from. Test code (`#[cfg(test)]` items, and
//! `tests.rs` / `*_tests.rs` files) is left out. A module using what its
//! parent (`mod.rs`) holds is part of how Rust modules are written: it is
//! checked against the floors but is not a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Runs the check on the crate's own sources and floor table.
#[test]
fn every_import_points_down_the_floor_table_and_none_goes_round() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let architecture = fs::read_to_string(manifest.join("../ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let floors = floor_table(&architecture).unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"));
    let report = check(&manifest.join("src"), &floors);
    println!(
        "layering: {} modules on {} floors, {} imports between modules",
        report.modules,
        floors.len(),
        report.edges
    );
    assert!(
        report.findings.is_empty(),
        "tables/src breaks the floor table of ARCHITECTURE.md:\n  {}",
        report.findings.join("\n  ")
    );
}

/// A planted upward import fails the check naming both modules and floors.
#[test]
fn an_upward_import_is_named_with_both_modules() {
    let tree = Planted::new(
        "upward",
        &[
            ("lib.rs", "mod low;\nmod high;\npub use high::Top;\n"),
            ("low.rs", "use crate::high::Top;\npub(crate) fn f(_: Top) {}\n"),
            ("high.rs", "pub struct Top;\n"),
        ],
    );
    let floors = floor_table(TABLE).unwrap();
    let report = check(&tree.0, &floors);
    assert_eq!(
        report.findings,
        vec!["`low` (floor `low`) imports `high` (floor `high`), a floor above it"],
        "{report:?}"
    );
    // The same import through the root's re-export is charged to the module.
    let tree = Planted::new(
        "reexport",
        &[
            ("lib.rs", "mod low;\nmod high;\npub use high::Top;\n"),
            ("low.rs", "pub(crate) fn f(_: crate::Top) {}\n"),
            ("high.rs", "pub struct Top;\n"),
        ],
    );
    assert_eq!(check(&tree.0, &floors).findings.len(), 1);
}

/// A planted circle inside one floor fails the check naming its modules;
/// test code and comments are not imports.
#[test]
fn a_circle_is_named_and_test_code_does_not_count() {
    let tree = Planted::new(
        "circle",
        &[
            ("lib.rs", "mod high;\nmod low;\n"),
            ("low.rs", "pub(crate) fn f() {}\n"),
            ("high/mod.rs", "mod a;\nmod b;\nuse a::A;\n"),
            ("high/a.rs", "use super::b::B;\npub(crate) struct A(B);\n"),
            ("high/b.rs", "pub(crate) struct B(Box<super::a::A>);\n"),
        ],
    );
    let floors = floor_table(&TABLE.replace("`high.rs`", "`high/`")).unwrap();
    assert_eq!(
        check(&tree.0, &floors).findings,
        vec!["a circle of imports: `high::a`, `high::b` (`high::a` imports `high::b`; `high::b` imports `high::a`)"]
    );
    let tree = Planted::new(
        "tests",
        &[
            ("lib.rs", "mod high;\nmod low;\n"),
            (
                "low.rs",
                "// crate::high is named in a comment\nconst S: &str = \"crate::high::Top\";\n\
                 #[cfg(test)]\nmod tests { use crate::high::Top; fn f() { let _ = \"}\"; } }\n\
                 #[cfg(test)]\nmod low_tests;\n",
            ),
            ("low_tests.rs", "use crate::high::Top;\n"),
            ("high.rs", "pub struct Top;\n"),
        ],
    );
    let floors = floor_table(TABLE).unwrap();
    assert_eq!(check(&tree.0, &floors).findings, Vec::<String>::new());
}

/// A module on no floor, a floor naming a path that does not exist, and a
/// `foo.rs` beside a folder `foo/` are findings (the table cannot drift
/// from the tree, and a folder's module is its `mod.rs`).
#[test]
fn the_table_and_the_tree_name_the_same_files() {
    let tree = Planted::new(
        "drift",
        &[
            ("lib.rs", "mod low;\nmod stray;\n"),
            ("low.rs", "mod inner;\n"),
            ("low/inner.rs", ""),
            ("stray.rs", ""),
        ],
    );
    let floors = floor_table(TABLE).unwrap();
    assert_eq!(
        check(&tree.0, &floors).findings,
        vec![
            "`high.rs` is in the floor table but not in the tree",
            "`low.rs` sits beside the folder `low/`: make it `low/mod.rs`",
            "`low::inner` (low/inner.rs) is on no floor of the table",
            "`stray` (stray.rs) is on no floor of the table",
        ]
    );
}

const TABLE: &str = "### `tables/src/`\n\n| floor | paths | holds |\n| --- | --- | --- |\n\
                     | low | `low.rs` | x |\n| high | `high.rs` | y |\n| root | `lib.rs` | z |\n\n";

/// A floor: its name and the paths (under `src/`) it holds; `x/` is a folder.
#[derive(Debug)]
struct Floor {
    name: String,
    paths: Vec<String>,
}

/// Reads the floor table: the first table after the `tables/src/` heading,
/// lowest floor first; the paths are the backticked words of its second column.
fn floor_table(markdown: &str) -> Result<Vec<Floor>, String> {
    let start = markdown
        .lines()
        .position(|l| l.starts_with('#') && l.contains("`tables/src/`"))
        .ok_or("no heading naming `tables/src/`")?;
    let mut floors = Vec::new();
    for line in markdown.lines().skip(start + 1).skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(name), Some(paths)) = (cells.get(1), cells.get(2)) else {
            return Err(format!("a row without two columns: {line}"));
        };
        if name.starts_with("---") || *name == "floor" {
            continue;
        }
        let paths: Vec<String> = paths.split('`').skip(1).step_by(2).map(str::to_owned).collect();
        if paths.is_empty() {
            return Err(format!("floor `{name}` names no path"));
        }
        floors.push(Floor {
            name: name.to_string(),
            paths,
        });
    }
    if floors.is_empty() {
        return Err("the table has no floor".into());
    }
    Ok(floors)
}

#[derive(Debug, Default)]
struct Report {
    modules: usize,
    edges: usize,
    findings: Vec<String>,
}

/// One module file: its path under `src/` and its module path (`store::read`).
struct Module {
    file: String,
    path: String,
}

fn check(src: &Path, floors: &[Floor]) -> Report {
    let mut report = Report::default();
    let mut files = Vec::new();
    walk(src, src, &mut files);
    let modules: BTreeMap<String, Module> = files
        .into_iter()
        .filter(|f| {
            let stem = f.rsplit('/').next().unwrap_or(f).trim_end_matches(".rs");
            stem != "tests" && !stem.ends_with("_tests")
        })
        .map(|file| {
            let mut parts: Vec<&str> = file.trim_end_matches(".rs").split('/').collect();
            if matches!(parts.last(), Some(&"mod") | Some(&"lib")) {
                parts.pop();
            }
            let path = parts.join("::");
            (path.clone(), Module { file, path })
        })
        .collect();
    report.modules = modules.len();

    for floor in floors {
        for p in &floor.paths {
            let exists = if let Some(dir) = p.strip_suffix('/') {
                modules.values().any(|m| m.file.starts_with(&format!("{dir}/")))
            } else {
                modules.values().any(|m| &m.file == p)
            };
            if !exists {
                report
                    .findings
                    .push(format!("`{p}` is in the floor table but not in the tree"));
            }
        }
    }
    // One module style: a folder's module is its `mod.rs`, never a `foo.rs` beside `foo/`.
    for m in modules.values() {
        if let Some(stem) = m.file.strip_suffix(".rs") {
            if modules
                .values()
                .any(|other| other.file.starts_with(&format!("{stem}/")))
            {
                report.findings.push(format!(
                    "`{}` sits beside the folder `{stem}/`: make it `{stem}/mod.rs`",
                    m.file
                ));
            }
        }
    }
    let floor_of = |file: &str| -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (i, floor) in floors.iter().enumerate() {
            for p in &floor.paths {
                let hit = if p.ends_with('/') {
                    file.starts_with(p.as_str())
                } else {
                    file == p
                };
                if hit && best.is_none_or(|(_, len)| p.len() > len) {
                    best = Some((i, p.len()));
                }
            }
        }
        best.map(|(i, _)| i)
    };
    for m in modules.values() {
        if floor_of(&m.file).is_none() {
            report
                .findings
                .push(format!("`{}` ({}) is on no floor of the table", m.path, m.file));
        }
    }

    let longest = |segments: &[String]| -> usize {
        (0..=segments.len())
            .rev()
            .find(|&n| modules.contains_key(&segments[..n].join("::")))
            .unwrap_or(0)
    };
    // Each module's code, and what it re-exports (`pub use`): a name it
    // re-exports is charged to the module that defines it, and a re-export
    // is an import only where the module's own code uses the name.
    struct Parsed {
        imports: Vec<Vec<String>>,
        reexports: BTreeMap<String, Vec<String>>,
    }
    let mut parsed: BTreeMap<String, Parsed> = BTreeMap::new();
    for m in modules.values() {
        let text = code_of(&fs::read_to_string(src.join(&m.file)).unwrap_or_default());
        let own: Vec<String> = if m.path.is_empty() {
            Vec::new()
        } else {
            m.path.split("::").map(str::to_owned).collect()
        };
        let rest = without_uses(&text);
        let mut imports = Vec::new();
        let mut reexports = BTreeMap::new();
        for u in uses(&text) {
            let Some(path) = absolute(&own, |p| modules.contains_key(p), u.segments) else {
                continue;
            };
            if u.public {
                if words(&rest).contains(u.name.as_str()) {
                    imports.push(path.clone());
                }
                reexports.insert(u.name, path);
            } else {
                imports.push(path);
            }
        }
        for segments in inline_paths(&text) {
            if let Some(path) = absolute(&own, |p| modules.contains_key(p), segments) {
                imports.push(path);
            }
        }
        parsed.insert(m.path.clone(), Parsed { imports, reexports });
    }
    // The module that defines what a path names, through re-exports.
    let charge = |path: &[String]| -> String {
        let mut path = path.to_vec();
        for _ in 0..16 {
            let n = longest(&path);
            let module = path[..n].join("::");
            let next = path
                .get(n)
                .and_then(|name| parsed.get(&module).and_then(|p| p.reexports.get(name)));
            match next {
                Some(target) if *target != path[..=n] => {
                    let mut target = target.clone();
                    target.extend(path[n + 1..].iter().cloned());
                    path = target;
                }
                _ => return module,
            }
        }
        path.join("::")
    };
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, p) in &parsed {
        let targets = p
            .imports
            .iter()
            .map(|path| charge(path))
            .filter(|t| t != module && !t.is_empty())
            .collect();
        edges.insert(module.clone(), targets);
    }
    report.edges = edges.values().map(BTreeSet::len).sum();

    for (from, targets) in &edges {
        let Some(low) = floor_of(&modules[from].file) else {
            continue;
        };
        for to in targets {
            let Some(high) = floor_of(&modules[to].file) else {
                continue;
            };
            if high > low {
                report.findings.push(format!(
                    "`{from}` (floor `{}`) imports `{to}` (floor `{}`), a floor above it",
                    floors[low].name, floors[high].name
                ));
            }
        }
    }

    // Circles: strongly connected parts of the graph, leaving out a
    // module's use of its ancestors.
    let graph: BTreeMap<&str, Vec<&str>> = edges
        .iter()
        .map(|(from, targets)| {
            let up = |to: &str| to.is_empty() || from.starts_with(&format!("{to}::"));
            (
                from.as_str(),
                targets.iter().map(String::as_str).filter(|t| !up(t)).collect(),
            )
        })
        .collect();
    for circle in circles(&graph) {
        let inside: Vec<String> = circle
            .iter()
            .flat_map(|&from| {
                graph[from]
                    .iter()
                    .filter(|to| circle.contains(to))
                    .map(move |to| format!("`{from}` imports `{to}`"))
            })
            .collect();
        report.findings.push(format!(
            "a circle of imports: {} ({})",
            circle.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", "),
            inside.join("; ")
        ));
    }
    report
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.push(rel);
        }
    }
}

/// A path's segments from the crate root, or `None` for a path outside
/// the crate. A path may start with a child module's name (`use read::X`
/// in `store/mod.rs`), `self`, `super` (repeated) or `crate`.
fn absolute(own: &[String], is_module: impl Fn(&str) -> bool, mut segments: Vec<String>) -> Option<Vec<String>> {
    let mut base: Vec<String> = match segments.first().map(String::as_str) {
        Some("crate") | Some("$crate") => {
            segments.remove(0);
            Vec::new()
        }
        Some("self") => {
            segments.remove(0);
            own.to_vec()
        }
        Some("super") => {
            let mut base = own.to_vec();
            while segments.first().is_some_and(|s| s == "super") {
                segments.remove(0);
                base.pop()?;
            }
            base
        }
        Some(first) => {
            let mut child = own.to_vec();
            child.push(first.to_owned());
            if !is_module(&child.join("::")) {
                return None;
            }
            own.to_vec()
        }
        None => return None,
    };
    base.extend(segments);
    Some(base)
}

/// The code of a file without comments, without the text of string and
/// character literals, and without `#[cfg(test)]` items.
fn code_of(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || (next == Some('#') && raw_start(&chars, i + 1)))
            && !chars
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            let mut hashes = 0;
            i += 1;
            while chars[i] == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1;
            loop {
                if i >= chars.len() {
                    break;
                }
                if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    without_test_items(&out)
}

fn raw_start(chars: &[char], mut i: usize) -> bool {
    while chars.get(i) == Some(&'#') {
        i += 1;
    }
    chars.get(i) == Some(&'"')
}

/// Removes each item marked `#[cfg(test)]`: up to its `;`, or its whole
/// braced body (the text has no literals left to hold a stray brace).
fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let end = match (item.find(';'), item.find('{')) {
            (Some(semi), Some(open)) if semi < open => semi + 1,
            (_, Some(open)) => {
                let mut depth = 0;
                let mut end = item.len();
                for (k, ch) in item[open..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = open + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(semi), None) => semi + 1,
            (None, None) => item.len(),
        };
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// One path a `use` declaration brings in.
struct Use {
    segments: Vec<String>,
    /// The name it brings in: its last segment, or its `as` name.
    name: String,
    /// `pub use` or `pub(…) use`: a re-export.
    public: bool,
}

/// The code without its `use` declarations.
fn without_uses(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut from = 0;
    while let Some(at) = code[from..].find("use ").map(|k| from + k) {
        if code[..at].chars().next_back().is_some_and(|c| is_ident(c) || c == ':') {
            out.push_str(&code[from..at + 4]);
            from = at + 4;
            continue;
        }
        out.push_str(&code[from..at]);
        from = code[at..].find(';').map_or(code.len(), |len| at + len + 1);
    }
    out.push_str(&code[from..]);
    out
}

/// The words (identifiers) of the code.
fn words(code: &str) -> BTreeSet<&str> {
    code.split(|c: char| !is_ident(c)).filter(|w| !w.is_empty()).collect()
}

/// The paths of the `use` declarations, braces expanded, each with the name
/// it brings in (its last segment, or its `as` name).
fn uses(code: &str) -> Vec<Use> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("use ").map(|k| from + k) {
        from = at + 4;
        if code[..at].chars().next_back().is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        let Some(len) = code[at..].find(';') else { break };
        // One space between words, none around `::`, braces and commas.
        let words = code[at + 4..at + len].split_whitespace().collect::<Vec<_>>().join(" ");
        let mut tree = String::with_capacity(words.len());
        let mut chars = words.chars().peekable();
        while let Some(c) = chars.next() {
            if c == ' ' && (tree.ends_with([':', '{', ',', '}']) || chars.peek().is_some_and(|n| ":{},".contains(*n))) {
                continue;
            }
            tree.push(c);
        }
        let before = code[..at].trim_end();
        let public = before.ends_with("pub")
            || before
                .rfind("pub(")
                .is_some_and(|p| before.ends_with(')') && !before[p..].contains(['{', '}', ';']));
        let mut found = Vec::new();
        expand(&tree, &[], &mut found);
        out.extend(found.into_iter().map(|(segments, name)| Use { segments, name, public }));
        from = at + len;
    }
    out
}

fn expand(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim().trim_start_matches("::");
    if tree.is_empty() {
        return;
    }
    let split = |path: &str| -> Vec<String> { path.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect() };
    if let Some(open) = tree.find('{') {
        let mut inner_prefix = prefix.to_vec();
        inner_prefix.extend(split(&tree[..open]));
        let inner = tree[open + 1..].strip_suffix('}').unwrap_or(&tree[open + 1..]);
        let (mut depth, mut start) = (0, 0);
        for (k, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..k], &inner_prefix, out);
                    start = k + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &inner_prefix, out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path, Some(alias.to_owned())),
        None => (tree, None),
    };
    let mut segments = prefix.to_vec();
    segments.extend(split(path));
    // `a::{self}` is `a`; `a::*` charges what `a` holds to `a`.
    if segments.last().is_some_and(|s| s == "self" || s == "*") && segments.len() > 1 {
        segments.pop();
    }
    let name = alias.or_else(|| segments.last().cloned()).unwrap_or_default();
    out.push((segments, name));
}

/// The paths written in the code outside `use`: `crate::a::b`, `super::a`,
/// `self::a`, `$crate::a`.
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    let mut in_use = false;
    while i < bytes.len() {
        let starts_word = i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == ':');
        if starts_word && bytes[i..].starts_with(&['u', 's', 'e', ' ']) {
            in_use = true;
        }
        if bytes[i] == ';' {
            in_use = false;
        }
        if starts_word && !in_use {
            for head in ["$crate::", "crate::", "super::", "self::"] {
                let h: Vec<char> = head.chars().collect();
                if bytes[i..].starts_with(&h) {
                    let mut j = i;
                    while j < bytes.len() && (is_ident(bytes[j]) || bytes[j] == ':' || bytes[j] == '$') {
                        j += 1;
                    }
                    let text: String = bytes[i..j].iter().collect();
                    let segments: Vec<String> = text.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect();
                    out.push(segments);
                    i = j;
                    break;
                }
            }
        }
        i += 1;
    }
    out
}

/// The strongly connected parts of more than one module (Tarjan), each sorted.
fn circles<'a>(graph: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a, 'g> {
        graph: &'g BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(s: &mut State<'a, '_>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in s.graph.get(v).map(Vec::as_slice).unwrap_or(&[]) {
            if !s.graph.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut part = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                part.push(w);
                if w == v {
                    break;
                }
            }
            if part.len() > 1 {
                part.sort();
                s.found.push(part);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for &v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found.sort();
    s.found
}

/// A source tree written to a fresh temporary folder, removed when dropped.
struct Planted(PathBuf);

impl Planted {
    fn new(name: &str, files: &[(&str, &str)]) -> Planted {
        let dir = std::env::temp_dir().join(format!("layering-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for (file, text) in files {
            let path = dir.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        Planted(dir)
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
