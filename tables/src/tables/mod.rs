//! `Tables`: the entry point that owns a backend and hands out stores.

mod blobs;
#[cfg(feature = "azure")]
mod connect;
mod pool;
mod reshard;
mod traced;

pub use pool::PoolOptions;
pub use reshard::{ReshardOptions, ReshardReport};

use std::fmt;
use std::sync::Arc;

use self::traced::Traced;
use crate::backend::blob::BlobBackend;
use crate::backend::memory::{MemoryBackend, MemoryBlobBackend};
use crate::backend::retry::RetryPolicy;
use crate::backend::Backend;
use crate::entity::TableEntity;
use crate::options::BlobOptions;
use crate::options::StoreOptions;
use crate::store::union::UnionStore;
use crate::store::{Blobs, ReadCache, Shared, Store};
#[cfg(feature = "azure")]
use crate::telemetry::Peer;
use crate::union::TableUnion;

/// A connection to table storage: a backend plus the options every store
/// made from it shares.
///
/// A handle reads the table on every read unless it is given a
/// [`ReadCache`] with [`Tables::with_cache`]: caching is opt-in, since
/// entries go stale when another process or handle writes the same rows.
///
/// ```
/// use unified_tables::Tables;
/// let db = Tables::memory();            // embedded, no set-up, no read cache
/// # let _ = db;
/// ```
#[derive(Clone)]
pub struct Tables {
    /// What the stores made from this handle share.
    pub(crate) shared: Shared,
}

/// Blobs in `backend`, whose requests run in request spans.
pub(crate) fn traced_blobs(backend: Arc<dyn BlobBackend>, options: BlobOptions) -> Blobs {
    Blobs::new(Arc::new(Traced(backend.clone())), backend, options)
}

/// Tables whose writes carry no token: only to measure what the token costs
/// (a write whose answer is lost cannot be settled without it).
#[doc(hidden)]
pub fn without_write_tokens(mut tables: Tables) -> Tables {
    tables.shared.write_tokens = false;
    tables
}

impl fmt::Debug for Tables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tables")
            .field("backend", &self.shared.raw)
            .field("options", &self.shared.options)
            .field("blobs", &self.shared.blobs)
            .field("cache", &self.shared.cache)
            .finish()
    }
}

impl Tables {
    /// A fresh in-memory backend that answers as the service does, with an
    /// in-memory blob store for large values and files, and no read cache
    /// ([`Tables::with_cache`] adds one).
    pub fn memory() -> Tables {
        Tables::with_backend(MemoryBackend::new()).with_blobs(MemoryBlobBackend::new(), BlobOptions::default())
    }

    /// Stores large values and files in `backend` (blob offload).
    pub fn with_blobs(mut self, backend: impl BlobBackend, options: BlobOptions) -> Tables {
        self.shared.blobs = Some(Arc::new(traced_blobs(Arc::new(backend), options)));
        self
    }

    /// No blob offload: a value that would need a blob is refused.
    pub fn without_blobs(mut self) -> Tables {
        self.shared.blobs = None;
        self
    }

    /// Tables over any backend (for example a decorator around another),
    /// without a read cache.
    pub fn with_backend(backend: impl Backend) -> Tables {
        Tables::from_arc(Arc::new(backend))
    }

    /// Tables over a shared backend, without a read cache (see [`Tables::with_cache`]).
    pub fn from_arc(backend: Arc<dyn Backend>) -> Tables {
        Tables {
            shared: Shared::new(Arc::new(Traced(backend.clone())), backend),
        }
    }

    /// Serves reads of the stores made from now on from `cache` (which other
    /// handles may share: entries are keyed by account endpoint, table and keys).
    ///
    /// Handles start without a cache, and read the table every time: a
    /// handle caches only when it is given one here. The cache sees only the
    /// writes made through handles that share it: a write by another process,
    /// or by a handle without this cache, leaves its entries stale until
    /// they expire (see [`CachePolicy`](crate::CachePolicy)).
    ///
    /// ```
    /// use std::time::Duration;
    /// use unified_tables::{CachePolicy, ReadCache};
    /// use unified_tables::Tables;
    /// let cache = ReadCache::builder().policy(CachePolicy::Absolute(Duration::from_secs(30))).build()?;
    /// let db = Tables::memory().with_cache(cache);
    /// # let _ = db;
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    pub fn with_cache(mut self, cache: ReadCache) -> Tables {
        self.shared.cache = Some(cache);
        self
    }

    /// No read cache: every read goes to the table (the stores made from
    /// now on). This is how handles start; it undoes [`Tables::with_cache`].
    /// Writes of these stores do not evict entries of other handles' caches.
    pub fn without_cache(mut self) -> Tables {
        self.shared.cache = None;
        self
    }

    /// The read cache, if reads are cached.
    pub fn cache(&self) -> Option<&ReadCache> {
        self.shared.cache.as_ref()
    }

    /// Keys cache entries of this handle under `scope` (the account
    /// endpoint) instead of a name unique to its backend.
    #[cfg(feature = "azure")]
    pub(crate) fn with_scope(mut self, scope: &str) -> Tables {
        self.shared.scope = scope.into();
        self
    }

    /// Names the account and endpoint the operations' spans report.
    #[cfg(feature = "azure")]
    pub(crate) fn with_peer(mut self, peer: Peer) -> Tables {
        self.shared.peer = peer;
        self
    }

    /// Replaces the options of the stores made from now on.
    pub fn with_options(mut self, options: StoreOptions) -> Tables {
        self.shared.options = options;
        self
    }

    /// How the stores made from now on retry a write and settle one whose
    /// answer was lost (default: [`RetryPolicy::default`]; a handle from
    /// [`Tables::connect_with`](crate::Tables::connect_with) takes the
    /// connection's policy). The policy holds on every backend, the
    /// in-memory one and decorators too:
    ///
    /// - a write refused as not processed (503 `ServerBusy`, 429, a
    ///   connection that could not be made) is sent again after the
    ///   policy's backoff;
    /// - a write whose answer was lost, timed out, or was a 5xx that does not
    ///   say "not processed" (500 `OperationTimedOut`, ...) is settled by
    ///   reading its rows back: its write token there means it was applied
    ///   (the call succeeds); the ETag it was written on condition of still
    ///   there means it has not landed yet (it is sent again while the policy
    ///   allows); anything else proves nothing, and it is
    ///   [`Error::OutcomeUnknown`](crate::Error::OutcomeUnknown) rather than
    ///   a resend that could undo another writer's write (the whole rule is
    ///   on [`Store`](crate::Store), "Exactly once under lost answers");
    /// - the read-backs and new attempts of one write stay within the
    ///   policy's attempts and retry budget; a write whose read-back cannot be
    ///   made within them, or that may still land when no attempt is left, is
    ///   [`Error::OutcomeUnknown`](crate::Error::OutcomeUnknown).
    ///
    /// ```
    /// use std::time::Duration;
    /// use unified_tables::{RetryPolicy, Tables};
    /// let db = Tables::memory().with_retry(
    ///     RetryPolicy::builder().attempts(6).backoff(Duration::from_millis(20), Duration::from_millis(500)).build()?,
    /// );
    /// assert_eq!(db.retry().attempts(), 6);
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    pub fn with_retry(mut self, policy: RetryPolicy) -> Tables {
        self.shared.retry = policy;
        self
    }

    /// Seals the page cursors of this handle's stores under `key`
    /// ([`Store::page`](crate::Store::page), union pages): each is encrypted and
    /// authenticated, so its text shows none of the query's partition key,
    /// filter text or keys (see [`Cursor`](crate::Cursor) for what an unsealed
    /// one shows), and one altered or forged is refused. Every handle that
    /// resumes the cursors needs the same key. Such a handle refuses an
    /// unsealed cursor, and a handle without the key refuses a sealed one,
    /// each with [`Error::InvalidCursor`](crate::Error::InvalidCursor) saying so.
    ///
    /// ```
    /// use unified_tables::{CursorKey, QueryOptions, TableEntity, Tables};
    /// #[derive(TableEntity)]
    /// struct Msg { #[table(partition_key)] room: String, #[table(row_key)] id: String }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let key = CursorKey::from_bytes([42; 32]); // from the application's secrets
    /// let msgs = Tables::memory().with_cursor_key(key).store::<Msg>();
    /// for id in ["a", "b", "c"] {
    ///     msgs.create(&mut Msg { room: "room-1".into(), id: id.into() }).await?;
    /// }
    /// let first = msgs.page(QueryOptions::partition("room-1").take(2)).await?;
    /// let cursor = first.cursor.expect("one more page");
    /// assert!(!cursor.to_string().contains("room-1"));
    /// let rest = msgs.page(QueryOptions::partition("room-1").take(2).after(cursor)).await?;
    /// assert_eq!(rest.items[0].id, "c");
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn with_cursor_key(mut self, key: crate::store::CursorKey) -> Tables {
        self.shared.cursor_key = Some(key);
        self
    }

    /// The retry policy of the stores' writes (see [`Tables::with_retry`]).
    pub fn retry(&self) -> &RetryPolicy {
        &self.shared.retry
    }

    /// The backend, as it was given: a request made on it directly is in no
    /// operation's span.
    // The field `backend` is the one in request spans that the stores ask.
    #[allow(clippy::misnamed_getters)]
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.shared.raw
    }

    /// A store for `T`, in the table the derive names (`#[table(name = ..)]`,
    /// default: the type's name).
    pub fn store<T: TableEntity>(&self) -> Store<T> {
        Store::of_entity(self.shared.clone(), T::SCHEMA.table.to_owned())
    }

    /// A store for `T` in another table (for example a per-test table).
    pub fn store_in<T: TableEntity>(&self, table: impl Into<String>) -> Store<T> {
        Store::of_entity(self.shared.clone(), table.into())
    }

    /// A store for the union `E` in `table`. The store owns its table: there
    /// is no server-side type filter, so every listing sees every row in its
    /// scope, and two stores on one table see each other's rows.
    pub fn union_store<E: TableUnion>(&self, table: impl Into<String>) -> UnionStore<E> {
        UnionStore::new(self.shared.clone(), table.into())
    }
}

#[cfg(feature = "azure")]
#[cfg_attr(docsrs, doc(cfg(feature = "azure")))]
impl Tables {
    /// Tables over Azure Table Storage or Azurite, from a storage connection
    /// string (see [`ConnectionString`](crate::backend::azure::ConnectionString) for the accepted forms). Nothing is
    /// sent until the first operation; a malformed string is [`Error::Config`](crate::Error::Config).
    /// The handle has no read cache: every read goes to the service unless
    /// one is added with [`Tables::with_cache`].
    ///
    /// ```no_run
    /// use unified_tables::Tables;
    /// // Azurite on its default ports:
    /// let db = Tables::connect("UseDevelopmentStorage=true")?;
    /// // An Azure storage account:
    /// let db = Tables::connect(
    ///     "DefaultEndpointsProtocol=https;AccountName=myaccount;AccountKey=bXlrZXk=;EndpointSuffix=core.windows.net",
    /// )?;
    /// # let _ = db;
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    pub fn connect(connection_string: &str) -> crate::Result<Tables> {
        Tables::connect_with(crate::backend::azure::AzureConnection::parse(connection_string)?)
    }
}
