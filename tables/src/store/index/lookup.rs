//! Lookups through an index: [`Store::index`] gives an [`IndexLookup`] of
//! the handle's kind, whose methods build an [`IndexQuery`] (or, for a
//! unique index, read one entity).

use std::ops::{Bound, RangeBounds};

use futures::future::BoxFuture;

use super::query::{IndexQuery, Span};
use crate::entity::TableEntity;
use crate::error::{KeyKind, Result};
use crate::index::encode::text_form;
use crate::index::rows::value_key;
use crate::index::{Global, Index, IndexKey, Local, OrderedIndexKey, PrefixIndexValue, UniqueGlobal, UniqueLocal};
use crate::store::Store;

impl<T: TableEntity> Store<T> {
    /// The lookups of one index of `T`, from its handle (`Customer::BY_EMAIL`):
    /// `find`, `range` and `prefix` (a query), and `get` on a unique index.
    /// A local index's lookups name the partition; a global one's do not.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables};
    /// #[derive(TableEntity, Debug)]
    /// struct Customer {
    ///     #[table(partition_key)] region: String,
    ///     #[table(row_key)] id: String,
    ///     #[unique] email: String,
    ///     #[index] city: String,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let customers = Tables::memory().store::<Customer>();
    /// customers.create(&mut Customer { region: "eu".into(), id: "1".into(), email: "a@x.com".into(), city: "Lviv".into() }).await?;
    ///
    /// let found = customers.index(Customer::BY_EMAIL).get("eu", "a@x.com").await?;
    /// assert_eq!(found.map(|c| c.id).as_deref(), Some("1"));
    /// let in_lviv = customers.index(Customer::BY_CITY).find("eu", "Lviv").take(10).await?;
    /// assert_eq!(in_lviv.len(), 1);
    /// // The same lookups, as the derive spells them on the type:
    /// assert!(Customer::get_by_email(&customers, "eu", "a@x.com").await?.is_some());
    /// assert_eq!(Customer::find_by_city(&customers, "eu", "Kyiv").await?.len(), 0);
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn index<K, V>(&self, index: Index<T, K, V>) -> IndexLookup<'_, T, K, V> {
        IndexLookup { store: self, index }
    }
}

/// The lookups of one index, from [`Store::index`]. Which methods it has
/// depends on the index's kind: `get` on a unique index, a partition
/// argument on a local one.
pub struct IndexLookup<'s, T, K, V> {
    store: &'s Store<T>,
    index: Index<T, K, V>,
}

impl<T, K, V> std::fmt::Debug for IndexLookup<'_, T, K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexLookup")
            .field("table", &self.store.table)
            .field("index", &self.index.name())
            .finish()
    }
}

/// The value part of the keys of a lookup argument.
fn value_part<V: IndexKey>(arg: V::Arg<'_>) -> Result<String> {
    let cells = V::arg_cells(arg)?;
    Ok(value_key(&cells.iter().collect::<Vec<_>>()))
}

/// The key range of values in `range`.
fn value_range<'a, V: IndexKey>(range: &impl RangeBounds<V::Arg<'a>>) -> Result<(Bound<String>, Bound<String>)>
where
    V::Arg<'a>: Clone,
{
    let bound = |b: Bound<&V::Arg<'a>>| -> Result<Bound<String>> {
        Ok(match b {
            Bound::Included(v) => Bound::Included(value_part::<V>(v.clone())?),
            Bound::Excluded(v) => Bound::Excluded(value_part::<V>(v.clone())?),
            Bound::Unbounded => Bound::Unbounded,
        })
    };
    Ok((bound(range.start_bound())?, bound(range.end_bound())?))
}

impl<'s, T: TableEntity, K, V: IndexKey> IndexLookup<'s, T, K, V> {
    fn query(&self, partition: Option<&str>, span: Result<Span>) -> IndexQuery<'s, T> {
        let (span, error) = match span {
            Ok(s) => (s, None),
            Err(e) => (Span::default(), Some(e)),
        };
        let error = error.or_else(|| match partition {
            Some(p) => crate::service::validate_key(KeyKind::PartitionKey, p).err(),
            None => None,
        });
        IndexQuery {
            store: self.store.clone(),
            def: self.index.def(),
            partition: partition.map(str::to_owned),
            span,
            take: None,
            error,
            lookup: std::marker::PhantomData,
        }
    }

    fn exact(&self, partition: Option<&str>, value: V::Arg<'_>) -> IndexQuery<'s, T> {
        self.query(partition, value_part::<V>(value).map(Span::starting))
    }

    fn ranged<'a>(&self, partition: Option<&str>, range: impl RangeBounds<V::Arg<'a>>) -> IndexQuery<'s, T>
    where
        V::Arg<'a>: Clone,
    {
        self.query(
            partition,
            value_range::<V>(&range).map(|(low, high)| Span::between(low, high)),
        )
    }

    fn prefixed(&self, partition: Option<&str>, prefix: &str) -> IndexQuery<'s, T> {
        let column = self.index.def().columns.first().copied().unwrap_or_default();
        let span = Span {
            prefix: Some(text_form(prefix)),
            must_start: Some((column.to_owned(), prefix.to_owned())),
            ..Span::default()
        };
        self.query(partition, Ok(span))
    }

    fn get_one(&self, partition: Option<&str>, value: V::Arg<'_>) -> BoxFuture<'s, Result<Option<T>>> {
        let value = value_part::<V>(value);
        let partition = partition.map(str::to_owned);
        let (store, def) = (self.store, self.index.def());
        Box::pin(async move {
            store
                .op("index_get")
                .run(async { store.get_unique(def, partition.as_deref(), &value?).await })
                .await
        })
    }
}

macro_rules! queries {
    (local: $kind:ty) => {
        impl<'s, T: TableEntity, V: IndexKey> IndexLookup<'s, T, $kind, V> {
            /// The entities of `partition` whose indexed value is `value`, in index order.
            pub fn find(&self, partition: &str, value: V::Arg<'_>) -> IndexQuery<'s, T> {
                self.exact(Some(partition), value)
            }

            /// The entities of `partition` whose indexed value is in `range`,
            /// in value order: `"a".."m"`, `18..=65`, `(Status::Open, t0)..`.
            pub fn range<'a>(&self, partition: &str, range: impl RangeBounds<V::Arg<'a>>) -> IndexQuery<'s, T>
            where
                V: OrderedIndexKey,
                V::Arg<'a>: Clone,
            {
                self.ranged(Some(partition), range)
            }

            /// The entities of `partition` whose indexed string starts with `prefix`, in value order.
            pub fn prefix(&self, partition: &str, prefix: &str) -> IndexQuery<'s, T>
            where
                V: PrefixIndexValue,
            {
                self.prefixed(Some(partition), prefix)
            }
        }
    };
    (global: $kind:ty) => {
        impl<'s, T: TableEntity, V: IndexKey> IndexLookup<'s, T, $kind, V> {
            /// The entities whose indexed value is `value`, in any partition,
            /// in index order; each is read and kept only if it still holds the value.
            pub fn find(&self, value: V::Arg<'_>) -> IndexQuery<'s, T> {
                self.exact(None, value)
            }

            /// The entities whose indexed value is in `range`, in any partition, in value order.
            pub fn range<'a>(&self, range: impl RangeBounds<V::Arg<'a>>) -> IndexQuery<'s, T>
            where
                V: OrderedIndexKey,
                V::Arg<'a>: Clone,
            {
                self.ranged(None, range)
            }

            /// The entities whose indexed string starts with `prefix`, in any partition, in value order.
            pub fn prefix(&self, prefix: &str) -> IndexQuery<'s, T>
            where
                V: PrefixIndexValue,
            {
                self.prefixed(None, prefix)
            }
        }
    };
}

queries!(local: Local);
queries!(local: UniqueLocal);
queries!(global: Global);
queries!(global: UniqueGlobal);

impl<'s, T: TableEntity, V: IndexKey> IndexLookup<'s, T, UniqueLocal, V> {
    /// The entity of `partition` holding `value`, or `None`: two point reads
    /// (the index row, then the entity).
    pub fn get(&self, partition: &str, value: V::Arg<'_>) -> BoxFuture<'s, Result<Option<T>>> {
        self.get_one(Some(partition), value)
    }
}

impl<'s, T: TableEntity, V: IndexKey> IndexLookup<'s, T, UniqueGlobal, V> {
    /// The entity holding `value` in any partition, or `None`: two point
    /// reads; an index row whose entity no longer holds the value answers `None`.
    pub fn get(&self, value: V::Arg<'_>) -> BoxFuture<'s, Result<Option<T>>> {
        self.get_one(None, value)
    }
}

// What the derive's lookups call: one function per kind, so that a field
// type that cannot be indexed is one error, at the field.

#[doc(hidden)]
pub fn find_local<'s, T: TableEntity, V: IndexKey>(
    store: &'s Store<T>,
    index: Index<T, Local, V>,
    partition: &str,
    value: V::Arg<'_>,
) -> IndexQuery<'s, T> {
    store.index(index).find(partition, value)
}

#[doc(hidden)]
pub fn get_local<'s, T: TableEntity, V: IndexKey>(
    store: &'s Store<T>,
    index: Index<T, UniqueLocal, V>,
    partition: &str,
    value: V::Arg<'_>,
) -> BoxFuture<'s, Result<Option<T>>> {
    store.index(index).get(partition, value)
}

#[doc(hidden)]
pub fn find_global<'s, T: TableEntity, V: IndexKey>(
    store: &'s Store<T>,
    index: Index<T, Global, V>,
    value: V::Arg<'_>,
) -> IndexQuery<'s, T> {
    store.index(index).find(value)
}

#[doc(hidden)]
pub fn get_global<'s, T: TableEntity, V: IndexKey>(
    store: &'s Store<T>,
    index: Index<T, UniqueGlobal, V>,
    value: V::Arg<'_>,
) -> BoxFuture<'s, Result<Option<T>>> {
    store.index(index).get(value)
}
