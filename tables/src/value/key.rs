//! The keys of one entity and the composite ids built from them.

/// The keys of one entity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The partition key.
    pub partition_key: String,
    /// The row key.
    pub row_key: String,
}

impl Key {
    /// A key from its two parts, as given.
    pub fn new(partition_key: impl Into<String>, row_key: impl Into<String>) -> Key {
        Key {
            partition_key: partition_key.into(),
            row_key: row_key.into(),
        }
    }

    /// Splits a composite id on its first `|`; an id without one is used for both keys.
    ///
    /// ```
    /// use unified_tables::Key;
    /// assert_eq!(Key::from_id("a|b|c"), Key::new("a", "b|c"));
    /// assert_eq!(Key::from_id("solo"), Key::new("solo", "solo"));
    /// assert_eq!(Key::from_id("|row"), Key::new("", "row"));
    /// ```
    pub fn from_id(id: &str) -> Key {
        match id.split_once('|') {
            Some((pk, rk)) => Key::new(pk, rk),
            None => Key::new(id, id),
        }
    }

    /// The composite id: `pk|rk`, or just `pk` when both keys are equal.
    pub fn to_id(&self) -> String {
        if self.partition_key == self.row_key {
            self.partition_key.clone()
        } else {
            format!("{}|{}", self.partition_key, self.row_key)
        }
    }
}

impl<A: Into<String>, B: Into<String>> From<(A, B)> for Key {
    fn from((pk, rk): (A, B)) -> Key {
        Key::new(pk, rk)
    }
}

/// Normalizes a composite id as the .NET library does: trim Unicode
/// whitespace at both ends, replace each space with `-`, lower-case.
///
/// ```
/// assert_eq!(unified_tables::normalize_id("  Part | Row1 "), "part-|-row1");
/// // Character by character: a final capital sigma lower-cases to `σ`.
/// assert_eq!(unified_tables::normalize_id("ΟΔΟΣ"), "οδοσ");
/// ```
pub fn normalize_id(id: &str) -> String {
    // Each character on its own, as .NET's ToLowerInvariant does: no
    // context rules (a final capital sigma becomes `σ`, never `ς`).
    id.trim()
        .chars()
        .flat_map(|c| if c == ' ' { '-'.to_lowercase() } else { c.to_lowercase() })
        .collect()
}

/// The composite id of a row read back: the stored `Id` when it splits into
/// exactly the row's keys, otherwise rebuilt from the keys. As in .NET, the
/// keys rebuild it only when both are non-empty; otherwise a stored `Id` is
/// kept as it is.
///
/// ```
/// use unified_tables::restore_id;
/// assert_eq!(restore_id(Some("a|b"), "a", "b"), "a|b");
/// assert_eq!(restore_id(Some("stale"), "a", "b"), "a|b");
/// assert_eq!(restore_id(Some("kept"), "", "b"), "kept");
/// assert_eq!(restore_id(None, "a", "a"), "a");
/// ```
pub fn restore_id(stored: Option<&str>, partition_key: &str, row_key: &str) -> String {
    // As .NET: the keys rebuild the id only when both are non-empty.
    if partition_key.is_empty() || row_key.is_empty() {
        return stored.map_or_else(|| Key::new(partition_key, row_key).to_id(), str::to_owned);
    }
    if let Some(id) = stored {
        let k = Key::from_id(id);
        if k.partition_key == partition_key && k.row_key == row_key {
            return id.to_owned();
        }
    }
    Key::new(partition_key, row_key).to_id()
}
