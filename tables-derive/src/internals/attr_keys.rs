//! An attribute's key and argument read as text, and the answer to a key
//! that is not one: the nearest valid key and the list of them.

use syn::Attribute;

/// The attribute key as written, e.g. `rename` or `serde::rename`.
pub(super) fn path_text(path: &syn::Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

/// "unknown #[table(renamed)] on a field: did you mean ..., valid keys are ...".
pub(super) fn unknown(key: &str, valid: &[&str], place: &str) -> String {
    let list = valid.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    match closest(key, valid) {
        Some(best) => {
            format!("unknown #[table({key})] {place}: did you mean #[table({best})]? (expected one of {list})")
        }
        None => format!("unknown #[table({key})] {place}: expected one of {list}"),
    }
}

/// The valid key a misspelt `key` most likely meant.
fn closest<'a>(key: &str, valid: &[&'a str]) -> Option<&'a str> {
    let key = key.to_ascii_lowercase();
    valid
        .iter()
        .map(|v| (edit_distance(&key, v), *v))
        .filter(|(d, v)| *d <= (v.len() / 3).max(1) || (v.len() >= 3 && (key.contains(v) || v.contains(key.as_str()))))
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v)
}

/// Levenshtein distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb { prev } else { 1 + prev.min(cur).min(row[j]) };
            prev = cur;
        }
    }
    row[b.len()]
}

/// The argument of `#[alias(FullName)]` / `#[protected(admin, accountant)]`
/// written without quotes, to show the quoted form.
pub(super) fn unquoted_arg(attr: &Attribute) -> Option<String> {
    let list = attr.meta.require_list().ok()?;
    let text = list.tokens.to_string().replace(' ', "");
    (!text.is_empty() && !text.contains('"')).then_some(text)
}
