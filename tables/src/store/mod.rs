//! `Store<T>`: every operation on one table, written once above the backend.
//!
//! This module holds `Store<T>` and its options; `shared.rs` what the
//! stores of one handle share. The folders hold each verb's whole path:
//! `write/` (the one write pipeline, entered through `Store::commit`, and
//! the verbs built on it), `read/` (the read path), `query/` (queries,
//! paging, projection, streams), `features/` (soft delete, ordering, logs,
//! converge, sweep), `cache/`, `union/` and `index/`. Beside them:
//! `crud.rs` (the thin verbs), `offload.rs` (blobs of large values and
//! files) and `race.rs` (writers racing for a row).

pub(crate) mod cache;
mod crud;
mod features;
pub(crate) mod index;
mod offload;
mod query;
mod read;
mod shared;
pub(crate) mod union;
mod write;

pub(crate) use shared::{Blobs, Shared};
pub(crate) use write::conditions::check_caller_etag;

pub use cache::{CachePolicy, ReadCache, ReadCacheBuilder};
pub use features::converge::{ConvergeOptions, ConvergeStep, ConvergeSteps, Converged};
pub use features::ordering::Delivery;
pub use features::soft_delete::Visibility;
pub use features::sweep::SweepReport;
pub use index::{
    AppliedIntents, BuildIndexOptions, BuildStep, BuildSteps, FailedIntent, IndexCheckOptions, IndexCursor,
    IndexFinding, IndexLookup, IndexPage, IndexQuery, IndexReport, IndexStream,
};
pub use query::paging::{Count, Cursor, EntityPage, DEFAULT_PAGE_SIZE};
pub use query::sealed::CursorKey;
pub use query::stream::EntityStream;
pub use query::{AnyPartition, OnePartition, PrefixNeedsAPartition, QueryOptions};
pub use write::concurrency::Outcome;
pub use write::protect::Authorizer;

// What the operator's toolbox (`crate::admin`) reads with: the reader's own pieces.
pub(crate) use offload::Upload;
pub(crate) use query::Pages;
pub(crate) use write::Write;

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::backend::Backend;
use crate::codec::EncodeOptions;
use crate::entity::{HasETag, Key, KeyMode, TableEntity};
use crate::error::Result;
use crate::value::{DateTime, ETag};

/// How an update decides whether it may overwrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Concurrency {
    /// Use the entity's ETag; without one, refuse (or, when
    /// [`StoreOptions::implicit_last_writer_wins`](crate::StoreOptions::implicit_last_writer_wins) is set, overwrite and log a warning).
    #[default]
    Auto,
    /// Require the entity's ETag; without one, always refuse.
    Strict,
    /// Overwrite whatever version is stored (`If-Match: *`); the row must exist.
    LastWriterWins,
}

/// How to find one entity: by its two keys, or by a composite id.
///
/// Made from `("partition", "row")` (borrowed or owned strings), a [`Key`],
/// or an id string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// Both keys, as given.
    Key(Key),
    /// Both keys, as given, borrowed where the caller lent them.
    Keys(Cow<'a, str>, Cow<'a, str>),
    /// A composite id `{pk}|{rk}` (normalized when the schema says so).
    Id(String),
}

impl<'a, A: Into<Cow<'a, str>>, B: Into<Cow<'a, str>>> From<(A, B)> for Lookup<'a> {
    fn from((pk, rk): (A, B)) -> Lookup<'a> {
        Lookup::Keys(pk.into(), rk.into())
    }
}

impl From<Key> for Lookup<'_> {
    fn from(k: Key) -> Self {
        Lookup::Key(k)
    }
}

impl<'a> From<&'a Key> for Lookup<'a> {
    fn from(k: &'a Key) -> Self {
        Lookup::Keys(Cow::Borrowed(&k.partition_key), Cow::Borrowed(&k.row_key))
    }
}

impl From<&str> for Lookup<'_> {
    fn from(id: &str) -> Self {
        Lookup::Id(id.to_owned())
    }
}

impl From<String> for Lookup<'_> {
    fn from(id: String) -> Self {
        Lookup::Id(id)
    }
}

/// Typed access to one table. Cheap to clone.
///
/// Every call validates its input first: a refused call (a bad key, an
/// oversized value, a missing ETag) sends nothing and stores nothing.
#[doc = include_str!("../../docs/store.md")]
pub struct Store<T> {
    shared: Shared,
    table: String,
    authorizer: Option<write::protect::SharedAuthorizer>,
    cache: Option<cache::hooks::StoreCache>,
    visibility: Visibility,
    append_keys: crate::keys::AppendKeyFormat,
    /// Whether writes carry a write token: the handle's choice, and the
    /// type's (`#[table(no_write_token)]`).
    write_tokens: bool,
    /// Why the type cannot be stored on the service profile of the backend
    /// (a reserved column name, a blob tier with no blob account), reported
    /// by every call of the store.
    refusal: Option<Arc<str>>,
    _entity: PhantomData<fn() -> T>,
}

impl<T> Clone for Store<T> {
    fn clone(&self) -> Self {
        Store {
            shared: self.shared.clone(),
            table: self.table.clone(),
            authorizer: self.authorizer.clone(),
            cache: self.cache.clone(),
            visibility: self.visibility,
            append_keys: self.append_keys,
            write_tokens: self.write_tokens,
            refusal: self.refusal.clone(),
            _entity: PhantomData,
        }
    }
}

impl<T> fmt::Debug for Store<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("table", &self.table).finish()
    }
}

// What does not depend on the entity type (a union store shares it).
impl<T> Store<T> {
    /// The service profile of the backend the store writes to: its limits,
    /// its order of results.
    pub(crate) fn profile(&self) -> crate::service::ServiceProfile {
        self.shared.backend.profile()
    }

    /// A store whose writes evict what other stores of the table cached and
    /// that serves nothing from the cache itself (a union store's rows);
    /// [`Store::of_entity`] serves an entity type by its policy.
    pub(crate) fn new(shared: Shared, table: String) -> Store<T> {
        let cache = shared.cache.as_ref().map(|cache| cache::hooks::StoreCache {
            cache: cache.clone(),
            policy: cache::CachePolicy::Disabled,
        });
        Store {
            write_tokens: shared.write_tokens,
            shared,
            table,
            authorizer: None,
            cache,
            visibility: Visibility::Live,
            append_keys: crate::keys::AppendKeyFormat::default(),
            refusal: None,
            _entity: PhantomData,
        }
    }

    /// The span of the public operation `name` on this store's table (see
    /// [`telemetry`](crate::telemetry)).
    pub(crate) fn op(&self, name: &'static str) -> crate::telemetry::Operation<'_> {
        let system = match self.profile() {
            crate::service::ServiceProfile::CosmosTable => crate::telemetry::DB_SYSTEM_COSMOS,
            _ => crate::telemetry::DB_SYSTEM,
        };
        crate::telemetry::Operation::new(system, name, &self.table, &self.shared.peer)
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The backend this store talks to.
    pub fn backend(&self) -> &dyn Backend {
        &*self.shared.backend
    }

    /// Creates the table if it does not exist yet. Stores do this on first
    /// use; call it at start-up to fail fast on a bad connection.
    ///
    /// A type the service profile of the backend cannot hold (see
    /// [`ServiceProfile`](crate::service::ServiceProfile): a column named
    /// `id` on Cosmos DB for Table, a field with a blob tier on a Cosmos
    /// handle without a blob account) is refused here, and by every other
    /// call of the store, with [`Error::Config`](crate::Error::Config) naming the field and the fix.
    pub async fn ensure_created(&self) -> Result<()> {
        self.op("ensure_created")
            .run(async move {
                if let Some(refusal) = &self.refusal {
                    return Err(crate::error::Error::config(refusal.to_string()));
                }
                if self
                    .shared
                    .created
                    .lock()
                    .map(|s| s.contains(&self.table))
                    .unwrap_or(false)
                {
                    return Ok(());
                }
                crate::service::check_table_name(&self.table)?;
                self.shared.backend.create_table(&self.table).await?;
                if let Ok(mut set) = self.shared.created.lock() {
                    set.insert(self.table.clone());
                }
                Ok(())
            })
            .await
    }
}

impl<T: TableEntity> Store<T> {
    /// A store of entity type `T`, served from the cache by `T`'s policy. A
    /// type the cache cannot copy (not `Clone`) is never served from it; its
    /// writes still evict what other stores of the table cached.
    pub(crate) fn of_entity(shared: Shared, table: String) -> Store<T> {
        let profile = shared.backend.profile();
        let refusal = profile_refusal(T::SCHEMA, profile, shared.blobs.is_some());
        let mut store = Store::new(shared, table);
        store.refusal = refusal.map(Arc::from);
        store.write_tokens &= T::SCHEMA.write_token;
        if let (Some(c), Some(_)) = (store.cache.as_mut(), T::cache_cloner()) {
            c.policy = c.cache.policy_of::<T>();
        }
        store
    }

    fn encode_options(&self) -> EncodeOptions {
        EncodeOptions {
            oversized: self.shared.options.oversized_cells,
        }
    }

    /// The keys a lookup addresses, validated.
    pub fn resolve<'a>(&self, lookup: impl Into<Lookup<'a>>) -> Result<Key> {
        let key = match lookup.into() {
            Lookup::Key(k) => k,
            Lookup::Keys(pk, rk) => Key::new(pk.into_owned(), rk.into_owned()),
            Lookup::Id(id) => match T::SCHEMA.keys {
                KeyMode::CompositeId { normalize: true } => Key::from_id(&crate::entity::normalize_id(&id)),
                _ => Key::from_id(&id),
            },
        };
        key.validate()?;
        Ok(key)
    }
}

// The ETag-conditional verbs. They are defined here, beside `Store`, so
// that calling one on a type without an ETag field is one compile error
// naming `Store::<T>::update`; each returns a boxed future because an
// `async fn` would repeat that error at the call and at its `.await`.
impl<T: TableEntity> Store<T> {
    /// Replaces the stored entity on condition of the ETag it was read with
    /// ([`Concurrency::Auto`]). A stale ETag fails with [`Error::Conflict`](crate::Error::Conflict);
    /// an entity whose ETag is `None` (built, not read) is refused with
    /// [`Error::MissingETag`](crate::Error::MissingETag), unless
    /// [`StoreOptions::implicit_last_writer_wins`](crate::StoreOptions::implicit_last_writer_wins) is set. An ETag of `*` or
    /// an empty one is not a version (the service would read `*` as any
    /// version): it is refused with [`Error::InvalidValue`](crate::Error::InvalidValue) naming `ETag`,
    /// before anything is sent, by every verb that takes the entity's ETag.
    ///
    /// Only for types with an `#[table(etag)]` field ([`HasETag`]): for any
    /// other type it does not compile, since it could only be refused. Such
    /// types write with [`Store::replace`], [`Store::upsert`] or [`Store::mutate`].
    /// (The conditional verbs return a boxed future so that such a call is
    /// one compile error, at the call.)
    ///
    /// ```
    /// # use unified_tables::{ETag, Error, TableEntity, Tables};
    /// #[derive(TableEntity, Clone)]
    /// struct Task {
    ///     #[table(partition_key)] list: String,
    ///     #[table(row_key)] id: String,
    ///     done: bool,
    ///     #[table(etag)] etag: Option<ETag>,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let tasks = Tables::memory().store::<Task>();
    /// tasks.create(&mut Task { list: "home".into(), id: "1".into(), done: false, etag: None }).await?;
    ///
    /// let mut mine = tasks.get(("home", "1")).await?.expect("stored");
    /// let mut theirs = mine.clone();
    /// mine.done = true;
    /// tasks.update(&mut mine).await?;                       // conditional on the ETag read
    /// assert!(matches!(tasks.update(&mut theirs).await, Err(Error::Conflict { .. })));
    /// # Ok::<(), Error>(())
    /// # }).unwrap();
    /// ```
    pub fn update<'a>(&'a self, entity: &'a mut T) -> BoxFuture<'a, Result<ETag>>
    where
        T: HasETag,
    {
        Box::pin(
            self.op("update")
                .run(self.update_conditional(entity, Concurrency::Auto)),
        )
    }

    /// Replaces the stored entity under an explicit concurrency mode.
    ///
    /// | mode | without an ETag | with an ETag |
    /// |---|---|---|
    /// | `Auto` | refused (or `*` when `implicit_last_writer_wins`) | conditional |
    /// | `Strict` | refused | conditional |
    /// | `LastWriterWins` | `*` | `*` |
    ///
    /// `*` still requires the row to exist ([`Error::NotFound`](crate::Error::NotFound) otherwise).
    /// An entity whose ETag is `*` or empty is refused with
    /// [`Error::InvalidValue`](crate::Error::InvalidValue) in `Auto` and `Strict` (`LastWriterWins`
    /// ignores the ETag).
    /// Only for types with an `#[table(etag)]` field ([`HasETag`]); any type
    /// can overwrite with [`Store::replace`].
    pub fn update_with<'a>(&'a self, entity: &'a mut T, mode: Concurrency) -> BoxFuture<'a, Result<ETag>>
    where
        T: HasETag,
    {
        Box::pin(self.op("update_with").run(self.update_conditional(entity, mode)))
    }

    /// Deletes the entity on condition of its ETag: [`Error::Conflict`](crate::Error::Conflict) if it
    /// changed since it was read, [`Error::NotFound`](crate::Error::NotFound) if it is gone,
    /// [`Error::MissingETag`](crate::Error::MissingETag) if its ETag is `None`, and
    /// [`Error::InvalidValue`](crate::Error::InvalidValue) if it is `*` or empty (nothing is sent). Only for types with an
    /// `#[table(etag)]` field ([`HasETag`]); any type deletes by key with
    /// [`Store::delete`].
    pub fn delete_entity<'a>(&'a self, entity: &'a T) -> BoxFuture<'a, Result<()>>
    where
        T: HasETag,
    {
        Box::pin(self.op("delete_entity").run(self.delete_conditional(entity)))
    }
}

pub(crate) fn now() -> DateTime {
    DateTime::now()
}

/// Why a type of schema `schema` cannot be stored on `profile`'s service:
/// a column under a name the service keeps for itself, or a field whose
/// values may go to a blob when the handle has no blob account (Cosmos DB
/// for Table has no blobs of its own).
fn profile_refusal(
    schema: &crate::entity::Schema,
    profile: crate::service::ServiceProfile,
    blobs: bool,
) -> Option<String> {
    use crate::entity::ColumnKind;
    for name in schema.column_names() {
        if let Err(e) = profile.check_property_name(&name) {
            let field = schema
                .columns
                .iter()
                .find(|c| name.starts_with(c.name))
                .map_or(name.as_str(), |c| c.field);
            return Some(format!("`{}`: field `{field}`: {e}", schema.table));
        }
    }
    if profile.has_blobs() || blobs {
        return None;
    }
    let blob_tier = schema.columns.iter().find(|c| match c.kind {
        ColumnKind::Blob => true,
        ColumnKind::Large { offload, .. } => offload,
        _ => false,
    })?;
    Some(format!(
        "`{}`: field `{}` may store its value in a blob, and {profile} keeps no blobs: give the handle a separate storage account for them (a `BlobEndpoint` in the connection string, or `Tables::with_blobs`), or mark the field #[table(offload = \"never\")]",
        schema.table, blob_tier.field
    ))
}
