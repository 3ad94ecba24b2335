//! Blob names: `{table}/{partitionKey}/{rowKey}/{column}/{sha256}`, each
//! segment percent-escaped (`.` too, so no segment is `.` or `..`), an empty
//! key written as `%`.

/// Escapes one segment as `Uri.EscapeDataString` does, with `.` escaped too.
pub fn escape_segment(segment: &str) -> String {
    if segment.is_empty() {
        return "%".to_owned();
    }
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The blob name of a value.
pub fn blob_name(table: &str, partition_key: &str, row_key: &str, column: &str, sha256: &str) -> String {
    format!(
        "{}{}/{sha256}",
        row_prefix(table, partition_key, row_key),
        escape_segment(column)
    )
}

/// The prefix (with its trailing `/`) of every blob of one row.
pub fn row_prefix(table: &str, partition_key: &str, row_key: &str) -> String {
    format!(
        "{}/{}/{}/",
        escape_segment(table),
        escape_segment(partition_key),
        escape_segment(row_key)
    )
}

/// The prefix of every blob of one partition.
pub fn partition_prefix(table: &str, partition_key: &str) -> String {
    format!("{}/{}/", escape_segment(table), escape_segment(partition_key))
}

/// Whether a name has the exact offload shape `{t}/{pk}/{rk}/{col}/{64 lower-hex}`.
pub fn is_offload_shape(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    parts.len() == 5
        && parts[..4].iter().all(|p| !p.is_empty())
        && parts[4].len() == 64
        && parts[4]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_never_fold() {
        assert_eq!(escape_segment("."), "%2E");
        assert_eq!(escape_segment(".."), "%2E%2E");
        assert_eq!(escape_segment(""), "%");
        assert_eq!(escape_segment("a/b c"), "a%2Fb%20c");
        assert_eq!(escape_segment("ü"), "%C3%BC");
        let sha = "a".repeat(64);
        let name = blob_name("Docs", "", ".", "Body", &sha);
        assert_eq!(name, format!("Docs/%/%2E/Body/{sha}"));
        assert!(is_offload_shape(&name));
        assert!(!is_offload_shape("Docs/p/r/Body/xyz"));
    }
}
