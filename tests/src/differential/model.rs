//! The reference model: a map from key to value and version, with the
//! semantics the README gives each verb, written without the library.

use std::collections::BTreeMap;

use super::ops::{FilterSpec, PatchSpec};
use super::{Spec, K};

/// What the model holds: every stored value with the version that wrote it.
/// Versions are unique over the whole run, so a key deleted and created
/// again never repeats one.
#[derive(Debug, Default, Clone)]
pub struct Model {
    rows: BTreeMap<K, (Spec, u64)>,
    last_version: u64,
}

impl Model {
    /// The stored value and version of a key.
    pub fn get(&self, key: K) -> Option<&(Spec, u64)> {
        self.rows.get(&key)
    }

    /// Whether the key is stored.
    pub fn has(&self, key: K) -> bool {
        self.rows.contains_key(&key)
    }

    /// The version stored at a key.
    pub fn version(&self, key: K) -> Option<u64> {
        self.rows.get(&key).map(|(_, v)| *v)
    }

    /// Stores a value (insert or replace); returns its new version.
    pub fn put(&mut self, key: K, spec: Spec) -> u64 {
        self.last_version += 1;
        self.rows.insert(key, (spec, self.last_version));
        self.last_version
    }

    /// Removes a key; returns whether it was stored.
    pub fn remove(&mut self, key: K) -> bool {
        self.rows.remove(&key).is_some()
    }

    /// The rows of a partition matching the filter, in row-key order.
    pub fn partition(&self, pk: &str, filter: Option<FilterSpec>) -> Vec<(K, Spec)> {
        self.rows
            .iter()
            .filter(|(k, (spec, _))| k.0 == pk && filter.is_none_or(|f| matches(spec, f)))
            .map(|(k, (spec, _))| (*k, spec.clone()))
            .collect()
    }

    /// Removes every row of a partition; returns how many there were.
    pub fn clear_partition(&mut self, pk: &str) -> usize {
        let before = self.rows.len();
        self.rows.retain(|k, _| k.0 != pk);
        before - self.rows.len()
    }
}

/// Whether a value matches a filter, as the service evaluates it (a row
/// without the property never matches a comparison on it).
pub fn matches(spec: &Spec, filter: FilterSpec) -> bool {
    match filter {
        FilterSpec::NAtLeast(x) => spec.n >= x,
        FilterSpec::City(city) => spec.city == city,
        FilterSpec::Flagged => spec.flag,
        FilterSpec::LevelIs(x) => spec.level == Some(x),
        FilterSpec::NBelowOrUnflagged(x) => spec.n < x || !spec.flag,
    }
}

/// The mutate intent on a model value.
pub fn bumped(spec: &Spec, delta: i64) -> Spec {
    let mut s = spec.clone();
    s.n += delta;
    s.tags.push(format!("m{delta}"));
    s
}

/// The transition on a model value.
pub fn flagged(spec: &Spec) -> Spec {
    Spec {
        flag: true,
        n: spec.n + 1,
        ..spec.clone()
    }
}

/// A partial update on a model value: only the named fields change.
pub fn patched(spec: &Spec, patch: &PatchSpec) -> Spec {
    let mut s = spec.clone();
    if let Some(v) = &patch.name {
        s.name = v.clone();
    }
    if let Some(v) = patch.n {
        s.n = v;
    }
    if let Some(v) = patch.flag {
        s.flag = v;
    }
    if let Some(v) = &patch.city {
        s.city = v.clone();
    }
    s
}
