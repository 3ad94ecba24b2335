//! Typed projections: the columns a query reads, chosen from an entity's
//! typed column handles (`Customer::projection(|c| [c.name.col(), c.address.col()])`).

use std::marker::PhantomData;

/// One field of entity `E` chosen for a projection, made by a column
/// handle's `col()`. A projection of `E` can only be given to a query over
/// `E`, and only stored fields have one: selecting a `#[table(skip)]` field
/// does not compile.
#[must_use]
pub struct Selected<E> {
    column: String,
    _entity: PhantomData<fn() -> E>,
}

impl<E> Selected<E> {
    pub(crate) fn column(name: &str) -> Selected<E> {
        Selected {
            column: name.to_owned(),
            _entity: PhantomData,
        }
    }

    /// The stored name of the selected column (`Name`, `Address_City`, or
    /// `Address` for a whole flattened record).
    pub fn name(&self) -> &str {
        &self.column
    }
}

impl<E> Clone for Selected<E> {
    fn clone(&self) -> Self {
        Selected::column(&self.column)
    }
}

impl<E> PartialEq for Selected<E> {
    fn eq(&self, other: &Self) -> bool {
        self.column == other.column
    }
}

impl<E> std::fmt::Debug for Selected<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Selected({})", self.column)
    }
}
