//! The properties of a row: its cells by column name, kept in a flat list
//! in the order they were inserted.
//!
//! A row has a few dozen cells at most (the service allows 252), built
//! once and read once: a list searched from where the last search ended
//! costs less than a tree of owned names, since a row is usually read in
//! the order it was written.

use std::fmt;

use super::{names_are_distinct, ColumnName, Value};

/// Whether two names are the same, rejecting most others by their length
/// and their first and last byte before comparing the whole.
#[inline]
fn same_name(a: &[u8], b: &[u8]) -> bool {
    match (a.first(), b.first(), a.last(), b.last()) {
        (Some(a0), Some(b0), Some(a1), Some(b1)) => a.len() == b.len() && a0 == b0 && a1 == b1 && a == b,
        _ => a.is_empty() && b.is_empty(),
    }
}

/// One cell; a cell taken out leaves its slot empty until the next insert.
#[derive(Clone, Debug)]
struct Slot {
    name: ColumnName,
    value: Option<Value>,
}

/// The typed cells of a [`Row`](crate::Row), by column name.
///
/// Has the map operations of a `BTreeMap<String, Value>` (`get`, `insert`,
/// `remove`, `iter`, `keys`, `retain`, `extend`, ...), with the names as
/// [`ColumnName`]s. Iterates in insertion order; equality does not depend
/// on the order.
///
/// ```
/// use unified_tables::{Properties, Value};
/// let mut p = Properties::new();
/// p.insert("B", Value::Int32(2));
/// p.insert("A", Value::Bool(true));
/// assert_eq!(p.get("A"), Some(&Value::Bool(true)));
/// assert_eq!(p.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["B", "A"]);
/// assert_eq!(p.remove("B"), Some(Value::Int32(2)));
/// assert_eq!(p.len(), 1);
/// ```
#[derive(Clone, Default)]
pub struct Properties {
    slots: Vec<Slot>,
    live: usize,
    /// Where the next search starts: just after the last cell found.
    cursor: usize,
    /// Names cells are expected to be inserted with (the schema's literals).
    names: &'static [&'static str],
    /// Where the next search of `names` starts.
    next_name: usize,
    /// Every cell so far was inserted under one of `names`, in their order,
    /// and the names are distinct: a cell under a later one of them cannot
    /// be present yet, so its insert needs no search.
    in_order: bool,
}

impl Properties {
    /// No cells.
    pub const fn new() -> Properties {
        Properties {
            slots: Vec::new(),
            live: 0,
            cursor: 0,
            names: &[],
            next_name: 0,
            in_order: false,
        }
    }

    /// No cells, with room for `n`.
    pub fn with_capacity(n: usize) -> Properties {
        Properties {
            slots: Vec::with_capacity(n),
            ..Properties::new()
        }
    }

    /// The same properties, told the names their cells are expected to
    /// have (a schema's literals, in the order they are inserted):
    /// [`insert`](Properties::insert) of one of them as `&str` borrows the
    /// static text instead of copying it.
    ///
    /// ```
    /// use unified_tables::{Properties, Value};
    /// static NAMES: [&str; 2] = ["Title", "Total"];
    /// let mut p = Properties::with_capacity(2).expecting(&NAMES);
    /// p.insert(String::from("Total").as_str(), Value::Int64(5));
    /// assert_eq!(p.get("Total"), Some(&Value::Int64(5)));
    /// ```
    pub fn expecting(self, names: &'static [&'static str]) -> Properties {
        self.expecting_distinct(names, false)
    }

    /// [`expecting`](Properties::expecting) of `names` that the caller knows
    /// to be distinct (generated code checks its list at compile time):
    /// then, while the cells come in the order of the names, an insert
    /// under the next name does not search the row for a cell to replace.
    #[doc(hidden)]
    pub fn expecting_distinct(mut self, names: &'static [&'static str], distinct: bool) -> Properties {
        debug_assert!(
            !distinct || names_are_distinct(names),
            "expected names repeat: {names:?}"
        );
        self.names = names;
        self.next_name = 0;
        self.in_order = distinct && self.slots.is_empty();
        self
    }

    /// The number of cells.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether there are no cells.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Removes every cell.
    pub fn clear(&mut self) {
        self.slots.clear();
        self.live = 0;
        self.cursor = 0;
    }

    /// The slot holding a live cell named `name`, searched from the cursor.
    #[inline]
    fn find(&self, name: &str) -> Option<usize> {
        let n = self.slots.len();
        let start = if self.cursor < n { self.cursor } else { 0 };
        let name = name.as_bytes();
        let hit = |s: &Slot| s.value.is_some() && same_name(s.name.as_bytes(), name);
        (start..n)
            .find(|&i| hit(&self.slots[i]))
            .or_else(|| (0..start).find(|&i| hit(&self.slots[i])))
    }

    /// The slot holding a live cell named `{column}{suffix}`, found without
    /// joining the name.
    fn find_suffixed(&self, column: &str, suffix: &str) -> Option<usize> {
        let (column, suffix) = (column.as_bytes(), suffix.as_bytes());
        let len = column.len() + suffix.len();
        let hit = |s: &Slot| {
            let name = s.name.as_bytes();
            s.value.is_some() && name.len() == len && name.starts_with(column) && name.ends_with(suffix)
        };
        let n = self.slots.len();
        let start = if self.cursor < n { self.cursor } else { 0 };
        (start..n)
            .find(|&i| hit(&self.slots[i]))
            .or_else(|| (0..start).find(|&i| hit(&self.slots[i])))
    }

    /// The value of the column `{column}{suffix}` (a JSON or compressed
    /// form of `column`), if present.
    pub fn get_suffixed(&self, column: &str, suffix: &str) -> Option<&Value> {
        self.find_suffixed(column, suffix)
            .and_then(|i| self.slots[i].value.as_ref())
    }

    /// Removes the column `{column}{suffix}` and returns its value.
    pub fn remove_suffixed(&mut self, column: &str, suffix: &str) -> Option<Value> {
        let i = self.find_suffixed(column, suffix)?;
        let value = self.slots[i].value.take();
        self.emptied(i);
        value
    }

    /// The value of a column, if present.
    #[inline]
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.find(name).and_then(|i| self.slots[i].value.as_ref())
    }

    /// The name as stored and the value of a column, if present.
    pub fn get_key_value(&self, name: &str) -> Option<(&ColumnName, &Value)> {
        let slot = &self.slots[self.find(name)?];
        slot.value.as_ref().map(|v| (&slot.name, v))
    }

    /// The value of a column to change in place, if present.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        let i = self.find(name)?;
        self.cursor = i + 1;
        self.slots[i].value.as_mut()
    }

    /// Whether the column is present.
    pub fn contains_key(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    /// Sets a cell; returns the value it replaces. A name given as `&str`
    /// is borrowed when it is one of the [expected
    /// names](Properties::expecting), else copied.
    #[inline]
    pub fn insert(&mut self, name: impl ToColumnName, value: Value) -> Option<Value> {
        if self.in_order {
            if let Some(next) = name.borrowed().and_then(|text| self.next_if_same(text)) {
                self.push(ColumnName::from_static(next), value);
                return None;
            }
            self.in_order = false;
        }
        if let Some(i) = self.find(name.text()) {
            self.cursor = i + 1;
            return self.slots[i].value.replace(value);
        }
        let name = name.to_column_name(self);
        self.push(name, value);
        None
    }

    #[inline]
    fn push(&mut self, name: ColumnName, value: Value) {
        self.slots.push(Slot {
            name,
            value: Some(value),
        });
        self.live += 1;
    }

    /// The expected name that is the very text `name` (same address, as
    /// generated code passes it), among the next few (cells of absent
    /// values are skipped), counted as used.
    #[inline]
    fn next_if_same(&mut self, name: &str) -> Option<&'static str> {
        let ahead = self.names.get(self.next_name..)?;
        let same = |next: &&str| std::ptr::eq(next.as_ptr(), name.as_ptr()) && next.len() == name.len();
        let at = ahead.iter().take(4).position(same)?;
        self.next_name += at + 1;
        Some(ahead[at])
    }

    /// `name` as one of the expected names, or a copy of it.
    #[inline]
    pub(super) fn intern(&mut self, name: &str) -> ColumnName {
        match self.next_if_same(name) {
            Some(next) => ColumnName::from_static(next),
            None => self.intern_by_text(name),
        }
    }

    /// [`intern`](Properties::intern) of a name that is not the next expected one.
    #[inline(never)]
    fn intern_by_text(&mut self, name: &str) -> ColumnName {
        let names = self.names;
        // Cells come in the order of the names, a few skipped (absent
        // values): only the next few are tried. A name not among them is
        // copied, which for a short name costs about as much as the search.
        let from = self.next_name.min(names.len());
        let to = (from + 3).min(names.len());
        let at = (from..to).find(|&i| same_name(names[i].as_bytes(), name.as_bytes()));
        match at {
            Some(i) => {
                self.next_name = i + 1;
                ColumnName::from_static(names[i])
            }
            None => ColumnName::copied(name),
        }
    }

    /// Inserts the cell `{column}{suffix}` (a JSON or compressed form of a
    /// column) under the next expected name when that is its name; else
    /// gives the value back, for the caller to insert under the joined name.
    pub(crate) fn insert_expected_suffixed(&mut self, column: &str, suffix: &str, value: Value) -> Result<(), Value> {
        let is_it = |n: &&str| n.len() == column.len() + suffix.len() && n.starts_with(column) && n.ends_with(suffix);
        let Some(next) = self.names.get(self.next_name).copied().filter(is_it) else {
            self.in_order = false;
            return Err(value);
        };
        self.next_name += 1;
        if self.in_order {
            self.push(ColumnName::from_static(next), value);
        } else {
            self.insert(ColumnName::from_static(next), value);
        }
        Ok(())
    }

    /// Removes a cell and returns its value.
    #[inline]
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let i = self.find(name)?;
        let value = self.slots[i].value.take();
        self.emptied(i);
        value
    }

    /// Removes a cell and returns its name and value.
    pub fn remove_entry(&mut self, name: &str) -> Option<(ColumnName, Value)> {
        let i = self.find(name)?;
        let value = self.slots[i].value.take()?;
        let name = self.slots[i].name.clone();
        self.emptied(i);
        Some((name, value))
    }

    /// Slot `i` was just emptied.
    #[inline]
    fn emptied(&mut self, i: usize) {
        self.live -= 1;
        self.cursor = i + 1;
        if self.live == 0 {
            self.slots.clear();
            self.cursor = 0;
        }
    }

    /// Keeps only the cells for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&ColumnName, &mut Value) -> bool) {
        for slot in &mut self.slots {
            if let Some(v) = &mut slot.value {
                if !keep(&slot.name, v) {
                    slot.value = None;
                    self.live -= 1;
                }
            }
        }
        self.slots.retain(|s| s.value.is_some());
        self.cursor = 0;
    }

    /// Moves every cell of `other` into this one (replacing cells of the
    /// same name), leaving `other` empty.
    pub fn append(&mut self, other: &mut Properties) {
        for (name, value) in std::mem::take(other) {
            self.insert(name, value);
        }
    }

    /// The cells, in insertion order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.slots.iter())
    }

    /// The cells with their values to change, in insertion order.
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        IterMut(self.slots.iter_mut())
    }

    /// The column names, in insertion order.
    pub fn keys(&self) -> impl Iterator<Item = &ColumnName> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in insertion order.
    pub fn values(&self) -> impl Iterator<Item = &Value> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// The values to change, in insertion order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Value> + '_ {
        self.iter_mut().map(|(_, v)| v)
    }
}

/// The cells of [`Properties`], by reference.
#[derive(Debug)]
pub struct Iter<'a>(std::slice::Iter<'a, Slot>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a ColumnName, &'a Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.by_ref().find_map(|s| s.value.as_ref().map(|v| (&s.name, v)))
    }
}

/// The cells of [`Properties`], values mutable.
#[derive(Debug)]
pub struct IterMut<'a>(std::slice::IterMut<'a, Slot>);

impl<'a> Iterator for IterMut<'a> {
    type Item = (&'a ColumnName, &'a mut Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.by_ref().find_map(|s| s.value.as_mut().map(|v| (&s.name, v)))
    }
}

/// The cells of [`Properties`], by value.
#[derive(Debug)]
pub struct IntoIter(std::vec::IntoIter<Slot>);

impl Iterator for IntoIter {
    type Item = (ColumnName, Value);
    fn next(&mut self) -> Option<Self::Item> {
        self.0.by_ref().find_map(|s| s.value.map(|v| (s.name, v)))
    }
}

impl IntoIterator for Properties {
    type Item = (ColumnName, Value);
    type IntoIter = IntoIter;
    fn into_iter(self) -> IntoIter {
        IntoIter(self.slots.into_iter())
    }
}

impl<'a> IntoIterator for &'a Properties {
    type Item = (&'a ColumnName, &'a Value);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Properties {
    type Item = (&'a ColumnName, &'a mut Value);
    type IntoIter = IterMut<'a>;
    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}

impl<K: ToColumnName> Extend<(K, Value)> for Properties {
    fn extend<I: IntoIterator<Item = (K, Value)>>(&mut self, cells: I) {
        for (k, v) in cells {
            self.insert(k, v);
        }
    }
}

impl<K: ToColumnName> FromIterator<(K, Value)> for Properties {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(cells: I) -> Properties {
        let mut p = Properties::new();
        p.extend(cells);
        p
    }
}

impl<K: ToColumnName, const N: usize> From<[(K, Value); N]> for Properties {
    fn from(cells: [(K, Value); N]) -> Properties {
        cells.into_iter().collect()
    }
}

impl PartialEq for Properties {
    fn eq(&self, other: &Properties) -> bool {
        self.live == other.live && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl fmt::Debug for Properties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// What names a column where a [`Properties`] takes one: `&str` (copied,
/// or borrowed when it is one of the row's [expected
/// names](Properties::expecting)), `String`, `&String`, or a
/// [`ColumnName`] (kept as it is).
pub trait ToColumnName: sealed::Sealed {
    /// The name, as `properties` keeps it.
    #[doc(hidden)]
    fn to_column_name(self, properties: &mut Properties) -> ColumnName;
    /// The name's text.
    #[doc(hidden)]
    fn text(&self) -> &str;
    /// The text, for a name given by reference (`&str`): it may be the very
    /// text of one of the row's expected names.
    #[doc(hidden)]
    #[inline]
    fn borrowed(&self) -> Option<&str> {
        None
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for &str {}
    impl Sealed for String {}
    impl Sealed for &String {}
    impl Sealed for super::ColumnName {}
    impl Sealed for &super::ColumnName {}
    impl Sealed for std::sync::Arc<str> {}
    impl Sealed for Box<str> {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_found_replaced_and_removed_by_name() {
        let mut p = Properties::new();
        assert_eq!(p.insert("A", Value::Int32(1)), None);
        assert_eq!(p.insert(String::from("B"), Value::Int32(2)), None);
        assert_eq!(p.insert("A", Value::Int32(3)), Some(Value::Int32(1)));
        assert_eq!(p.len(), 2);
        assert_eq!(p.get("A"), Some(&Value::Int32(3)));
        assert_eq!(p.remove("A"), Some(Value::Int32(3)));
        assert_eq!(p.remove("A"), None);
        assert!(!p.contains_key("A"));
        assert_eq!(p.insert("A", Value::Int32(4)), None);
        assert_eq!(p.keys().map(ColumnName::as_str).collect::<Vec<_>>(), ["B", "A"]);
        p.retain(|k, _| k == "A");
        assert_eq!(p.len(), 1);
        assert_eq!(
            p.into_iter().collect::<Vec<_>>(),
            [(ColumnName::from("A"), Value::Int32(4))]
        );
    }

    #[test]
    fn equality_ignores_the_order_of_insertion() {
        let a: Properties = [("X", Value::Bool(true)), ("Y", Value::Int64(2))].into();
        let b: Properties = [("Y", Value::Int64(2)), ("X", Value::Bool(true))].into();
        let c: Properties = [("Y", Value::Int64(2))].into();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(c, a);
    }

    #[test]
    fn expected_names_are_borrowed_and_others_copied() {
        static NAMES: [&str; 2] = ["Title", "Total"];
        let mut p = Properties::new().expecting(&NAMES);
        let owned = String::from("Total");
        p.insert(&owned, Value::Int32(1));
        p.insert("Other", Value::Int32(2));
        let (name, _) = p.get_key_value("Total").unwrap();
        assert!(std::ptr::eq(name.as_str(), NAMES[1]));
        assert_eq!(p.get("Other"), Some(&Value::Int32(2)));
    }

    static ORDERED: [&str; 4] = ["A", "B", "C", "D__Form"];

    #[test]
    fn cells_under_distinct_expected_names_in_order_are_pushed_and_borrowed() {
        let mut p = Properties::with_capacity(4).expecting_distinct(&ORDERED, true);
        p.insert(ORDERED[0], Value::Int32(1));
        // B is absent (a None); C comes next.
        p.insert(ORDERED[2], Value::Int32(3));
        assert!(p.insert_expected_suffixed("D", "__Form", Value::Int32(4)).is_ok());
        assert_eq!(p.len(), 3);
        assert!(p
            .keys()
            .all(|k| ORDERED.iter().any(|n| std::ptr::eq(n.as_ptr(), k.as_str().as_ptr()))));
        assert_eq!(p.get("D__Form"), Some(&Value::Int32(4)));
        // An earlier expected name again, still in order so far: replaced, not pushed.
        assert_eq!(p.insert(ORDERED[0], Value::Int32(10)), Some(Value::Int32(1)));
        assert_eq!(p.len(), 3);
    }

    #[test]
    fn a_cell_out_of_order_ends_the_fast_path_and_nothing_is_doubled() {
        let mut p = Properties::new().expecting_distinct(&ORDERED, true);
        p.insert(ORDERED[0], Value::Int32(1));
        // A copy of a later name, not the literal: inserted by search.
        p.insert(String::from("B"), Value::Int32(2));
        // The literal of B now replaces that cell instead of adding a second one.
        assert_eq!(p.insert(ORDERED[1], Value::Int32(20)), Some(Value::Int32(2)));
        // And an expected name already present is replaced, not pushed.
        assert_eq!(p.insert(ORDERED[0], Value::Int32(10)), Some(Value::Int32(1)));
        assert_eq!(p.len(), 2);
        assert_eq!(
            (p.get("A"), p.get("B")),
            (Some(&Value::Int32(10)), Some(&Value::Int32(20)))
        );
    }

    #[test]
    fn names_that_repeat_are_not_distinct() {
        assert!(names_are_distinct(&ORDERED));
        assert!(names_are_distinct(&[]));
        assert!(!names_are_distinct(&["A", "B", "A"]));
        const { assert!(!names_are_distinct(&["Ab", "Ab"])) };
    }

    #[test]
    fn suffixed_names_are_found_without_joining() {
        let mut p = Properties::new();
        p.insert("Tags", Value::Int32(1));
        p.insert("Tags__Form", Value::String("[]".into()));
        p.insert("Tag__Forms", Value::Int32(2));
        assert_eq!(p.get_suffixed("Tags", "__Form"), Some(&Value::String("[]".into())));
        assert_eq!(p.get_suffixed("Tag", "s__Form"), Some(&Value::String("[]".into())));
        assert_eq!(p.get_suffixed("Tags", "__Other"), None);
        assert_eq!(p.get_suffixed("Tag", "__Form"), None);
        assert_eq!(p.remove_suffixed("Tags", "__Form"), Some(Value::String("[]".into())));
        assert_eq!(p.remove_suffixed("Tags", "__Form"), None);
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn emptied_properties_start_over() {
        let mut p = Properties::new();
        for i in 0..10 {
            p.insert(format!("C{i}"), Value::Int32(i));
        }
        for i in (0..10).rev() {
            assert_eq!(p.remove(&format!("C{i}")), Some(Value::Int32(i)));
        }
        assert!(p.is_empty());
        assert_eq!(p.iter().count(), 0);
        p.insert("Z", Value::Bool(false));
        assert_eq!(p.len(), 1);
    }
}
