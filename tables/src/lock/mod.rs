//! Named distributed locks on blob leases, with fencing tokens.
//!
//! [`Tables::lock`](crate::Tables::lock) names a lock; acquiring it takes
//! the lease of the lock's blob (see [`crate::layout::LOCK_CONTAINER`]) for a
//! time to live of 15 to 60 seconds, the range the blob service allows. The
//! [`LockGuard`] renews the lease in the background, every third of the time
//! to live, until it is released or dropped.
//!
//! # Fencing tokens
//!
//! A lease is a lock on the service's clock, and a holder cannot know for
//! sure that it still holds it: a pause (a stop-the-world collection, a
//! suspended VM, a lost network) can outlast the lease, another process
//! takes the lock, and the first one wakes up and writes as if nothing had
//! happened. [`LockGuard::lost`] tells a holder as soon as it finds out, but
//! not before. The remedy is a **fencing token**: every acquisition writes
//! the next number of a counter kept in the lock's blob, under the lease, so
//! tokens rise across holders and restarts. Store the token beside the
//! value the lock protects, and refuse a write whose token is older than the
//! stored one. With this crate's conditional verbs the check and the write
//! are one step, safe against any interleaving:
//!
//! ```
//! use std::time::Duration;
//! use unified_tables::{ETag, Outcome, TableEntity, Tables};
//!
//! #[derive(TableEntity, Debug, Clone, Default)]
//! struct Invoice {
//!     #[table(partition_key)]
//!     customer: String,
//!     #[table(row_key)]
//!     number: String,
//!     total: i64,
//!     /// The fencing token of the last lock holder that wrote the invoice.
//!     fence: u64,
//!     #[table(etag)]
//!     etag: Option<ETag>,
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let db = Tables::memory();
//! let invoices = db.store::<Invoice>();
//! let mut invoice = Invoice { customer: "acme".into(), number: "42".into(), ..Invoice::default() };
//! invoices.create(&mut invoice).await?;
//!
//! let guard = db.lock("invoices/42").acquire(Duration::from_secs(15)).await?;
//! let token = guard.fencing_token();
//! // Applies only while no holder with a newer token has written.
//! let outcome = invoices
//!     .try_transition(("acme", "42"), |i| i.fence <= token, |i| {
//!         i.fence = token;
//!         i.total += 100;
//!     })
//!     .await?;
//! assert!(matches!(outcome, Outcome::Updated(_)));
//! guard.release().await?;
//! # Ok::<(), unified_tables::Error>(())
//! # }).unwrap();
//! ```
//!
//! A stale holder's write ends in [`Outcome::PreconditionFailed`](crate::Outcome::PreconditionFailed)
//! carrying the newer row, and nothing is written.

mod guard;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

pub use guard::LockGuard;

use crate::backend::blob::{BlobBackend, BlobCondition, LeaseAction, LeaseDuration, PutOptions};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::{decode_fencing_token, encode_fencing_token, LOCK_CONTAINER};
use crate::service::BlobName;
use crate::value::Guid;

/// The shortest time to live the blob service allows a lease.
pub const MIN_TTL: Duration = Duration::from_secs(15);
/// The longest time to live the blob service allows a lease.
pub const MAX_TTL: Duration = Duration::from_secs(60);
/// The longest break period the blob service allows.
pub const MAX_BREAK: Duration = Duration::from_secs(60);
/// The first pause between two attempts of [`Lock::acquire`]; it doubles up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(50);
/// The longest pause between two attempts of [`Lock::acquire`].
const MAX_POLL: Duration = Duration::from_secs(1);

/// A named lock (see the [module docs](self)). Cheap to make and to clone;
/// nothing is sent until it is acquired or broken.
///
/// ```
/// use std::time::Duration;
/// use unified_tables::Tables;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let db = Tables::memory();
/// let lock = db.lock("reports/nightly");
/// let guard = lock.try_acquire(Duration::from_secs(30)).await?.expect("free");
/// assert!(lock.try_acquire(Duration::from_secs(30)).await?.is_none(), "held");
/// guard.release().await?;
/// assert!(lock.try_acquire(Duration::from_secs(30)).await?.is_some());
/// # Ok::<(), unified_tables::Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
#[doc = include_str!("../../docs/locks.md")]
pub struct Lock {
    backend: Option<Arc<dyn BlobBackend>>,
    container: String,
    name: String,
    /// Set once the container is known to exist.
    ready: Arc<tokio::sync::OnceCell<()>>,
}

/// Where a lock lives: its backend, container and (folded) blob name.
#[derive(Debug, Clone)]
pub(crate) struct LockBlob {
    pub(crate) backend: Arc<dyn BlobBackend>,
    pub(crate) container: String,
    /// The blob's folded name.
    pub(crate) path: String,
    /// The lock's name as the user gave it, for messages.
    pub(crate) lock: String,
}

impl Lock {
    pub(crate) fn new(backend: Option<Arc<dyn BlobBackend>>, name: &str) -> Lock {
        Lock {
            backend,
            container: LOCK_CONTAINER.to_owned(),
            name: name.to_owned(),
            ready: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    /// The same lock name in another container (the default is
    /// [`LOCK_CONTAINER`]).
    pub fn in_container(mut self, container: impl Into<String>) -> Lock {
        self.container = container.into();
        self.ready = Arc::new(tokio::sync::OnceCell::new());
        self
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// One attempt: the guard, or `None` when another holder has the lock.
    ///
    /// `ttl` is whole seconds from 15 to 60 ([`MIN_TTL`]..=[`MAX_TTL`]); the
    /// guard renews the lease every `ttl / 3`, and a holder that stops
    /// renewing loses the lock `ttl` after its last renewal.
    pub async fn try_acquire(&self, ttl: Duration) -> Result<Option<LockGuard>> {
        crate::telemetry::Operation::blobs("try_acquire", &self.container)
            .run(async move {
                let seconds = check_ttl(ttl)?;
                let blob = self.blob().await?;
                try_acquire_once(&blob, seconds, true).await
            })
            .await
    }

    /// Waits until the lock is free, then takes it.
    pub async fn acquire(&self, ttl: Duration) -> Result<LockGuard> {
        crate::telemetry::Operation::blobs("acquire", &self.container)
            .run(async move {
                let seconds = check_ttl(ttl)?;
                let blob = self.blob().await?;
                let mut pause = FIRST_POLL;
                loop {
                    if let Some(guard) = try_acquire_once(&blob, seconds, true).await? {
                        return Ok(guard);
                    }
                    tokio::time::sleep(jittered(pause)).await;
                    pause = (pause * 2).min(MAX_POLL);
                }
            })
            .await
    }

    /// Waits at most `timeout` for the lock: the guard, or `None` if it stayed taken.
    pub async fn acquire_timeout(&self, ttl: Duration, timeout: Duration) -> Result<Option<LockGuard>> {
        crate::telemetry::Operation::blobs("acquire_timeout", &self.container)
            .run(async move {
                let seconds = check_ttl(ttl)?;
                let blob = self.blob().await?;
                let deadline = Instant::now() + timeout;
                let mut pause = FIRST_POLL;
                loop {
                    if let Some(guard) = try_acquire_once(&blob, seconds, true).await? {
                        return Ok(Some(guard));
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        return Ok(None);
                    }
                    tokio::time::sleep(jittered(pause).min(deadline - now)).await;
                    pause = (pause * 2).min(MAX_POLL);
                }
            })
            .await
    }

    /// Breaks the current holder's lease, whoever holds it: after `period`
    /// (at most 60 s, and never later than the lease would run out) the lock
    /// can be acquired by anyone. The holder finds out at its next renewal
    /// ([`LockGuard::lost`]); its writes are fenced off by the next holder's
    /// token. Breaking a lock nobody holds does nothing.
    pub async fn break_lock(&self, period: Duration) -> Result<()> {
        crate::telemetry::Operation::blobs("break_lock", &self.container)
            .run(async move {
                if period > MAX_BREAK || period.subsec_nanos() != 0 {
                    return Err(Error::config(format!(
                        "lock `{}`: a break period is whole seconds from 0 to 60, not {period:?}",
                        self.name
                    )));
                }
                let blob = self.blob().await?;
                let period = u32::try_from(period.as_secs()).unwrap_or(u32::MAX);
                let action = LeaseAction::Break { period: Some(period) };
                match blob.backend.lease(&blob.container, &blob.path, action).await {
                    Ok(_) => Ok(()),
                    Err(e)
                        if e.kind() == ErrorKind::NotFound && e.service_code() != Some((404, "ContainerNotFound")) =>
                    {
                        Ok(())
                    }
                    Err(e) if e.service_code() == Some((409, "LeaseNotPresentWithLeaseOperation")) => Ok(()),
                    Err(e) => Err(e),
                }
            })
            .await
    }

    /// The last fencing token handed out (0 before the first acquisition).
    pub async fn last_token(&self) -> Result<u64> {
        crate::telemetry::Operation::blobs("last_token", &self.container)
            .run(async move {
                let blob = self.blob().await?;
                match blob.backend.get(&blob.container, &blob.path, None).await? {
                    Some((_, bytes)) => decode(&blob, &bytes),
                    None => Ok(0),
                }
            })
            .await
    }

    /// The backend, the container (created if missing) and the folded name.
    async fn blob(&self) -> Result<LockBlob> {
        let backend = self.backend.clone().ok_or_else(|| {
            Error::config(format!(
                "lock `{}`: locks are blob leases, and these tables have no blob store (see Tables::with_blobs)",
                self.name
            ))
        })?;
        let path = BlobName::parse(&self.name)?.into_string();
        self.ready
            .get_or_try_init(|| backend.create_container(&self.container))
            .await?;
        Ok(LockBlob {
            backend,
            container: self.container.clone(),
            path,
            lock: self.name.clone(),
        })
    }
}

/// `ttl` in whole seconds, or a refusal naming the allowed range.
fn check_ttl(ttl: Duration) -> Result<u32> {
    if ttl < MIN_TTL || ttl > MAX_TTL || ttl.subsec_nanos() != 0 {
        return Err(Error::config(format!(
            "a lock's time to live is whole seconds from 15 to 60 (the blob service's lease durations), not {ttl:?}"
        )));
    }
    Ok(u32::try_from(ttl.as_secs()).unwrap_or(u32::MAX))
}

fn jittered(pause: Duration) -> Duration {
    let half = pause / 2;
    half + Duration::from_millis(rand::random::<u64>() % (half.as_millis() as u64 + 1))
}

fn decode(blob: &LockBlob, bytes: &[u8]) -> Result<u64> {
    decode_fencing_token(bytes).ok_or_else(|| Error::Integrity {
        column: format!("{}/{}", blob.container, blob.path),
        reason: format!(
            "the blob of lock `{}` does not hold a fencing token (decimal digits); it was written by something else",
            blob.lock
        ),
    })
}

/// Whether a lease action failed because another holder has the lease.
fn is_taken(error: &Error) -> bool {
    matches!(
        error.service_code(),
        Some((409, "LeaseAlreadyPresent" | "LeaseIsBreakingAndCannotBeAcquired"))
    )
}

/// One acquisition: take the lease (creating the blob on first use, when
/// `may_create`), then write the next fencing token under it. Losing the
/// lease before the token is written counts as finding the lock taken.
async fn try_acquire_once(blob: &LockBlob, seconds: u32, may_create: bool) -> Result<Option<LockGuard>> {
    let proposed = Guid::new_random();
    let action = LeaseAction::Acquire {
        duration: LeaseDuration::Seconds(seconds),
        proposed: Some(proposed),
    };
    // The lease runs from some instant after this one: a deadline counted from
    // here never outlasts the service's.
    let sent = Instant::now();
    let lease = match blob.backend.lease(&blob.container, &blob.path, action).await {
        Ok(answer) => answer.lease.unwrap_or(proposed),
        Err(e) if is_taken(&e) => return Ok(None),
        Err(e) if may_create && e.service_code() == Some((404, "BlobNotFound")) => {
            let create_only = PutOptions {
                condition: BlobCondition::IfNoneMatchAny,
                ..PutOptions::default()
            };
            match blob
                .backend
                .put(&blob.container, &blob.path, encode_fencing_token(0), create_only)
                .await
            {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
            return Box::pin(try_acquire_once(blob, seconds, false)).await;
        }
        Err(e) => return Err(e),
    };
    match write_next_token(blob, lease).await {
        Ok(token) => Ok(Some(LockGuard::start(blob.clone(), lease, token, seconds, sent))),
        Err(Error::LockLost { .. }) => Ok(None),
        Err(e) => {
            // Leave the lock free for the next holder; the lease runs out anyway if this fails.
            let _ = blob
                .backend
                .lease(&blob.container, &blob.path, LeaseAction::Release { lease })
                .await;
            Err(e)
        }
    }
}

/// Reads the last token and writes the next one, under the lease and the ETag read.
async fn write_next_token(blob: &LockBlob, lease: Guid) -> Result<u64> {
    let Some((props, bytes)) = blob.backend.get(&blob.container, &blob.path, None).await? else {
        return Err(lost(blob, "its blob was deleted while it was being acquired"));
    };
    let token = decode(blob, &bytes)?.checked_add(1).ok_or_else(|| Error::Integrity {
        column: format!("{}/{}", blob.container, blob.path),
        reason: format!("the fencing token of lock `{}` is at its largest value", blob.lock),
    })?;
    let options = PutOptions {
        condition: BlobCondition::IfMatch(props.etag),
        lease: Some(lease),
        ..PutOptions::default()
    };
    match blob
        .backend
        .put(&blob.container, &blob.path, encode_fencing_token(token), options)
        .await
    {
        Ok(_) => Ok(token),
        Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::PreconditionFailed) => {
            Err(lost(blob, "the lease ended before the fencing token was written").with_source(e))
        }
        Err(e) => Err(e),
    }
}

fn lost(blob: &LockBlob, reason: &str) -> Error {
    Error::LockLost {
        name: blob.lock.clone(),
        reason: reason.to_owned(),
        source: None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::backend::blob::{BlobBackend, PutOptions};
    use crate::backend::memory::MemoryBlobBackend;
    use crate::layout::LOCK_CONTAINER;
    use crate::{Error, Tables};

    #[tokio::test]
    async fn a_lock_blob_that_holds_no_token_is_integrity_and_is_left_unleased() {
        let blobs = std::sync::Arc::new(MemoryBlobBackend::new());
        let db = Tables::memory().with_blobs(blobs.clone(), crate::BlobOptions::default());
        blobs.create_container(LOCK_CONTAINER).await.unwrap();
        blobs
            .put(
                LOCK_CONTAINER,
                "jobs/1",
                b"not a number".to_vec(),
                PutOptions::default(),
            )
            .await
            .unwrap();
        for _ in 0..2 {
            let refused = db.lock("jobs/1").try_acquire(Duration::from_secs(15)).await;
            assert!(matches!(refused, Err(Error::Integrity { .. })), "{refused:?}");
        }
        // The refused acquisitions released their lease: the blob can be written without one.
        blobs
            .put(LOCK_CONTAINER, "jobs/1", b"7".to_vec(), PutOptions::default())
            .await
            .unwrap();
        let guard = db
            .lock("jobs/1")
            .try_acquire(Duration::from_secs(15))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(guard.fencing_token(), 8);
        guard.release().await.unwrap();
    }
}
