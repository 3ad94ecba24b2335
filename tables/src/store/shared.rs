//! What every store of one handle shares: the backends, the options, the
//! read cache, the retry policy, the blob store, the write-token switch and
//! the tasks applying global index writes. [`Tables`](crate::Tables) holds
//! one and hands a copy to each store it makes.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::backend::blob::BlobBackend;
use crate::backend::retry::RetryPolicy;
use crate::backend::Backend;
use crate::options::BlobOptions;
use crate::options::StoreOptions;
use crate::store::ReadCache;
use crate::telemetry::Peer;

/// The state the stores of one handle share. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Shared {
    /// The backend the stores ask, in its request spans.
    pub(crate) backend: Arc<dyn Backend>,
    /// The backend as it was given (what `Tables::backend` returns).
    pub(crate) raw: Arc<dyn Backend>,
    /// Where the operations go, for their spans.
    pub(crate) peer: Peer,
    pub(crate) options: StoreOptions,
    pub(crate) created: Arc<Mutex<HashSet<String>>>,
    pub(crate) blobs: Option<Arc<Blobs>>,
    pub(crate) cache: Option<ReadCache>,
    /// What cache entries of this handle are keyed under besides table and
    /// keys: the account's table endpoint, or a name unique to the backend.
    pub(crate) scope: Arc<str>,
    /// Which entity types' reads fetch continuation rows with the main row.
    pub(crate) continuation_hints: Arc<crate::large::continuation_hints::ContinuationHints>,
    /// How the stores retry and settle a write whose answer was lost or refused.
    pub(crate) retry: RetryPolicy,
    /// Whether writes carry a write token (off only to measure what it costs).
    pub(crate) write_tokens: bool,
    /// The background tasks applying the intents of this handle's global index writes.
    pub(crate) applying: Arc<crate::store::index::Applying>,
    /// The key page cursors are sealed with, if the handle seals them.
    pub(crate) cursor_key: Option<crate::store::query::sealed::CursorKey>,
}

impl Shared {
    /// The state of a handle over `backend` (asked through `traced`, its
    /// request spans), with default options, no blob store and no cache.
    pub(crate) fn new(traced: Arc<dyn Backend>, backend: Arc<dyn Backend>) -> Shared {
        static BACKENDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = BACKENDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Shared {
            backend: traced,
            raw: backend,
            peer: Peer::default(),
            options: StoreOptions::default(),
            created: Arc::new(Mutex::new(HashSet::new())),
            blobs: None,
            cache: None,
            scope: format!("backend:{n}").into(),
            continuation_hints: Arc::default(),
            retry: RetryPolicy::default(),
            write_tokens: true,
            applying: Arc::default(),
            cursor_key: None,
        }
    }
}

/// A blob backend and its options.
pub(crate) struct Blobs {
    /// The blob backend the stores ask, in its request spans.
    pub(crate) backend: Arc<dyn BlobBackend>,
    /// The blob backend as it was given.
    pub(crate) raw: Arc<dyn BlobBackend>,
    pub(crate) options: BlobOptions,
    pub(crate) container_ready: tokio::sync::OnceCell<()>,
}

impl Blobs {
    /// Blobs in `backend`, asked through `traced` (its request spans).
    pub(crate) fn new(traced: Arc<dyn BlobBackend>, backend: Arc<dyn BlobBackend>, options: BlobOptions) -> Blobs {
        Blobs {
            backend: traced,
            raw: backend,
            options,
            container_ready: tokio::sync::OnceCell::new(),
        }
    }
}

impl fmt::Debug for Blobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blobs")
            .field("backend", &self.raw)
            .field("options", &self.options)
            .finish()
    }
}
