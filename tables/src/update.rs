//! Typed partial updates: a Merge of only the named columns, with no read.
//!
//! The derive generates a builder per entity, `Customer::update()`, with one
//! setter per field (`.balance(..)`, `.address(|a| a.city(..))` for
//! flattened records). [`Store::patch`](crate::Store::patch) sends it as a
//! Merge: concurrent patches of different columns both land. `with_etag`
//! makes it a column-level compare-and-swap.
//!
//! What a Merge cannot do does not compile: a large value or a blob cannot be
//! patched (replace the entity), a field cannot be cleared (a Merge never
//! removes a property), and a protected field needs the builder to be
//! authorised first.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::codec::{EncodeOptions, TableValue, GZIP_SUFFIX};
use crate::error::Result;
use crate::value::{ETag, Row};

/// Decides whether the current caller holds a role. Supplied by the
/// application (typically per request) through [`Store::with_authorizer`](crate::Store::with_authorizer)
/// for whole-entity writes, and [`Update::authorize`] for partial updates.
///
/// Closures implement it:
///
/// ```
/// use unified_tables::update::Authorizer;
/// let admin_only = |role: &str| role == "admin";
/// assert!(admin_only.has_role("admin"));
/// ```
pub trait Authorizer: Send + Sync {
    /// Whether the caller holds `role`.
    fn has_role(&self, role: &str) -> bool;
}

impl<F: Fn(&str) -> bool + Send + Sync> Authorizer for F {
    fn has_role(&self, role: &str) -> bool {
        self(role)
    }
}

/// Type state of a builder that may not set protected fields.
#[derive(Debug, Clone, Copy)]
pub struct Unauthorized;

/// Type state of a builder authorised to set protected fields (checked
/// against the authorizer's roles when sent).
#[derive(Debug, Clone, Copy)]
pub struct Authorized;

/// Implemented by [`Authorized`] only: setting a protected field needs it.
#[diagnostic::on_unimplemented(
    message = "this field is #[protected]: the builder must be authorised before it can set it",
    label = "setter of a protected field on an unauthorised builder",
    note = "call `.authorize(authorizer)` on the builder first; the authorizer's roles are checked when the update is sent (see https://docs.rs/unified-tables/latest/unified_tables/derive.TableEntity.html#protectedrolerole)"
)]
pub trait MaySetProtected {}

impl MaySetProtected for Authorized {}

/// The columns of one partial update, as the generated builders collect them.
pub struct Update<E, A = Unauthorized> {
    pub(crate) row: Row,
    pub(crate) error: Option<String>,
    pub(crate) etag: Option<ETag>,
    pub(crate) protected: Vec<(String, &'static [&'static str])>,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    _types: PhantomData<fn() -> (E, A)>,
}

impl<E, A> std::fmt::Debug for Update<E, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Update")
            .field("columns", &self.row.properties.keys().collect::<Vec<_>>())
            .field("etag", &self.etag)
            .field("error", &self.error)
            .finish()
    }
}

impl<E> Default for Update<E, Unauthorized> {
    fn default() -> Self {
        Update {
            row: Row::default(),
            error: None,
            etag: None,
            protected: Vec::new(),
            authorizer: None,
            _types: PhantomData,
        }
    }
}

impl<E, A> Update<E, A> {
    /// Sends the update on condition of this version: it fails with
    /// [`Error::Conflict`](crate::Error::Conflict) if the row changed.
    pub fn with_etag(mut self, etag: ETag) -> Self {
        self.etag = Some(etag);
        self
    }

    /// The column names the update writes.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        self.row.properties.keys().map(crate::ColumnName::as_str)
    }

    #[doc(hidden)]
    pub fn __set<T: TableValue>(self, column: &str, value: &T) -> Self {
        self.__set_cells(column, |c, row, options| value.encode(c, row, options))
    }

    /// Adds the cells `encode` writes for `column`, or records why a Merge
    /// cannot write them (an error, a compressed cell, no cell at all).
    #[doc(hidden)]
    pub fn __set_cells(
        mut self,
        column: &str,
        encode: impl FnOnce(&str, &mut Row, &EncodeOptions) -> Result<()>,
    ) -> Self {
        if self.error.is_some() {
            return self;
        }
        let mut cells = Row::default();
        match encode(column, &mut cells, &EncodeOptions::default()) {
            Err(e) => self.error = Some(e.to_string()),
            Ok(()) if cells.properties.keys().any(|k| k.ends_with(GZIP_SUFFIX)) => {
                self.error = Some(format!(
                    "the value for `{column}` needs a compressed cell, which a partial update cannot write without leaving the old cell behind: replace the entity instead"
                ));
            }
            Ok(()) if cells.properties.is_empty() => {
                self.error = Some(format!(
                    "`{column}` would be cleared, and a Merge cannot remove a property: use `mutate` or a replace"
                ));
            }
            Ok(()) => self.row.properties.extend(cells.properties),
        }
        self
    }

    #[doc(hidden)]
    pub fn __set_binary(mut self, column: &str, value: &[u8]) -> Self {
        if self.error.is_none() {
            if let Err(e) = crate::codec::encode_binary(value, column, &mut self.row, &EncodeOptions::default()) {
                self.error = Some(e.to_string());
            }
        }
        self
    }

    #[doc(hidden)]
    pub fn __set_json<T: serde::Serialize>(self, column: &str, value: &T) -> Self {
        self.__set_cells(column, |c, row, options| {
            crate::codec::encode_json(value, c, row, options)
        })
    }

    #[doc(hidden)]
    pub fn __protect(mut self, column: &str, roles: &'static [&'static str]) -> Self {
        self.protected.push((column.to_owned(), roles));
        self
    }
}

impl<E> Update<E, Unauthorized> {
    /// Allows the builder to set `#[protected]` fields; the generated
    /// builders' `authorize` (`Account::update().authorize(..)`) is this.
    /// Without it a protected field's setter does not compile. Each protected
    /// field set is checked against `authorizer`'s roles when the update is
    /// sent: a field none of whose roles the authorizer grants fails the
    /// patch with [`Error::Protected`](crate::Error::Protected), and nothing
    /// is written.
    ///
    /// It is the partial update's counterpart of
    /// [`Store::with_authorizer`](crate::Store::with_authorizer), and
    /// independent of it: a store's authorizer checks the whole-entity writes
    /// (`update`, `upsert`, `update_with`, `mutate`), which read the stored
    /// row and refuse only a change of a protected value; a patch reads
    /// nothing, so every protected field it sets is checked, against the
    /// builder's authorizer only. As with the .NET library's
    /// `AllowProtected()`, authorise a builder once the caller's identity is
    /// verified, with an authorizer that answers from that caller's roles.
    ///
    /// ```
    /// use unified_tables::{Error, TableEntity, Tables};
    ///
    /// #[derive(TableEntity)]
    /// struct Account {
    ///     #[table(partition_key)] region: String,
    ///     #[table(row_key)] id: String,
    ///     #[protected("admin,accountant")] credit_limit: i64,
    ///     note: String,
    /// }
    ///
    /// struct Caller { roles: Vec<&'static str> }   // your verified user
    /// impl Caller {
    ///     fn has(&self, role: &str) -> bool { self.roles.contains(&role) }
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let accounts = Tables::memory().store::<Account>();
    /// accounts.create(&mut Account { region: "eu".into(), id: "1".into(), credit_limit: 100, note: String::new() }).await?;
    ///
    /// // Unprotected fields need no authorizer.
    /// accounts.patch(("eu", "1"), Account::update().note("called back")).await?;
    ///
    /// let admin = Caller { roles: vec!["admin"] };
    /// let update = Account::update().authorize(move |role: &str| admin.has(role)).credit_limit(5_000);
    /// accounts.patch(("eu", "1"), update).await?;
    ///
    /// let clerk = Caller { roles: vec!["clerk"] };
    /// let update = Account::update().authorize(move |role: &str| clerk.has(role)).credit_limit(9_000);
    /// assert!(matches!(accounts.patch(("eu", "1"), update).await, Err(Error::Protected { .. })));
    /// assert_eq!(accounts.get(("eu", "1")).await?.unwrap().credit_limit, 5_000);
    /// # Ok::<(), Error>(())
    /// # }).unwrap();
    /// ```
    pub fn authorize(self, authorizer: impl Authorizer + 'static) -> Update<E, Authorized> {
        Update {
            row: self.row,
            error: self.error,
            etag: self.etag,
            protected: self.protected,
            authorizer: Some(Arc::new(authorizer)),
            _types: PhantomData,
        }
    }
}

/// A generated builder: turns into the collected [`Update`].
pub trait UpdateBuilder<E> {
    /// The builder's authorisation state.
    type State;
    /// The collected update.
    fn into_update(self) -> Update<E, Self::State>;
}

impl<E, A> UpdateBuilder<E> for Update<E, A> {
    type State = A;
    fn into_update(self) -> Update<E, A> {
        self
    }
}

/// A generated builder of a nested record, used inside its parent's builder.
pub trait RecordUpdater<E, A> {
    /// Starts a nested builder writing columns under `prefix`.
    fn start(inner: Update<E, A>, prefix: String) -> Self;
    /// The parent's update with the nested columns added.
    fn finish(self) -> Update<E, A>;
}

/// Used where a nested record's builder cannot be generated (after a derive error).
impl<E, A> RecordUpdater<E, A> for Update<E, A> {
    fn start(inner: Update<E, A>, _prefix: String) -> Self {
        inner
    }
    fn finish(self) -> Update<E, A> {
        self
    }
}

/// Reasons a setter does not compile.
pub mod refusal {
    // Each is a bound on the builder's authorisation state, which never
    // implements it, so the refusal shows only where the setter is called.

    /// Never implemented: large values and blobs cannot be patched.
    #[diagnostic::on_unimplemented(
        message = "this field is a large value (#[table(split)] or #[blob_content]) and cannot be set by a partial update",
        label = "a large value may span several cells, rows or a blob, which a Merge cannot replace consistently",
        note = "replace the entity instead (`update`, `replace`, `upsert` or `mutate`)"
    )]
    pub trait LargeFieldsCannotBePatched {}

    /// Never implemented: a Merge cannot remove a property.
    #[diagnostic::on_unimplemented(
        message = "a partial update cannot clear a field: a Merge never removes a property",
        label = "clearing through a Merge",
        note = "use `mutate` (or a replace with `update` or `replace`) to set the field to None"
    )]
    pub trait MergeCannotClearAField {}

    /// Never implemented: a partial update cannot change a key.
    #[diagnostic::on_unimplemented(
        message = "a key field cannot be set by a partial update: the keys address the row it writes",
        label = "setter of a key field",
        note = "give the keys to `patch` instead: `store.patch((partition_key, row_key), T::update()..)`; to move an entity to other keys, create it under the new keys and delete the old one (`create` then `delete`, or one batch within a partition)"
    )]
    pub trait KeysCannotBeUpdated {}

    /// Never implemented: the ETag is the row's version, not a column.
    #[diagnostic::on_unimplemented(
        message = "the ETag field is not a column and cannot be set by a partial update",
        label = "setter of the #[table(etag)] field",
        note = "to make the update conditional on a version, call `.with_etag(etag)` on the builder"
    )]
    pub trait ETagIsNotAColumn {}

    /// Never implemented: the service sets the Timestamp.
    #[diagnostic::on_unimplemented(
        message = "the Timestamp field is set by the service on every write and cannot be set by a partial update",
        label = "setter of the #[table(timestamp)] field",
        note = "for a time of your own, add a field of its own (or a #[table(updated_at)] stamp, which every write sets)"
    )]
    pub trait TimestampIsSetByTheService {}

    /// Never implemented: a skipped field has no column.
    #[diagnostic::on_unimplemented(
        message = "this field is #[table(skip)]: it has no column, so a partial update cannot set it",
        label = "setter of a skipped field",
        note = "remove #[table(skip)] from the field to store it, or set it on the value in memory"
    )]
    pub trait SkippedFieldsAreNotStored {}
}
