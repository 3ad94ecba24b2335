//! The holder's side of a lock: the guard, its background renewal, and how
//! a lost lease is reported.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::LockBlob;
use crate::backend::blob::LeaseAction;
use crate::error::{Error, ErrorKind, Result};
use crate::value::Guid;

/// How soon a renewal that failed for a passing reason is tried again.
const RENEW_RETRY: Duration = Duration::from_secs(1);

/// A held lock. The lease is renewed in the background every third of the
/// time to live; [`LockGuard::release`] ends it, and dropping the guard
/// releases it best-effort (in a task on the current Tokio runtime).
///
/// When the lease is lost — a renewal is refused (the lock was broken or
/// taken over), or renewals kept failing until the lease may have run out —
/// [`LockGuard::lost`] resolves and [`LockGuard::is_lost`] turns true. The
/// holder should stop; what it already wrote is fenced off by the
/// [fencing token](super#fencing-tokens) of the next holder.
pub struct LockGuard {
    blob: LockBlob,
    lease: Guid,
    token: u64,
    lost: watch::Receiver<Option<Loss>>,
    renewal: Option<JoinHandle<()>>,
}

impl fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockGuard")
            .field("lock", &self.blob.lock)
            .field("container", &self.blob.container)
            .field("fencing_token", &self.token)
            .field("lost", &self.lost.borrow().as_ref().map(|l| &l.reason))
            .finish()
    }
}

impl LockGuard {
    /// Starts renewing `lease`, which was requested at `sent` for `seconds`.
    pub(super) fn start(blob: LockBlob, lease: Guid, token: u64, seconds: u32, sent: Instant) -> LockGuard {
        let (tell, lost) = watch::channel(None);
        let renewal = tokio::spawn(renew(blob.clone(), lease, seconds, sent, tell));
        LockGuard {
            blob,
            lease,
            token,
            lost,
            renewal: Some(renewal),
        }
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.blob.lock
    }

    /// This holder's fencing token: larger than every token handed out
    /// before, by this process or any other, across restarts.
    pub fn fencing_token(&self) -> u64 {
        self.token
    }

    /// Whether the lease is known to be lost.
    pub fn is_lost(&self) -> bool {
        self.lost.borrow().is_some()
    }

    /// Resolves once the lease is lost, with [`Error::LockLost`] saying why.
    /// The future does not borrow the guard, so it can race the critical
    /// section in a `tokio::select!`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use unified_tables::Tables;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = Tables::memory();
    /// let guard = db.lock("jobs/7").acquire(Duration::from_secs(15)).await?;
    /// tokio::select! {
    ///     why = guard.lost() => panic!("stopped: {why}"),
    ///     _ = tokio::time::sleep(Duration::from_millis(10)) => {} // the critical section
    /// }
    /// guard.release().await?;
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn lost(&self) -> impl Future<Output = Error> + Send + 'static {
        let mut lost = self.lost.clone();
        let name = self.blob.lock.clone();
        async move {
            let loss = match lost.wait_for(Option::is_some).await {
                Ok(loss) => loss.clone().unwrap_or_default(),
                Err(_) => Loss::new("the guard was released", None),
            };
            loss.error(name)
        }
    }

    /// Stops renewing and releases the lease, so the next holder can take the
    /// lock at once. [`Error::LockLost`] if the lease was no longer this
    /// holder's (lost, broken, or taken over).
    pub async fn release(mut self) -> Result<()> {
        let container = self.blob.container.clone();
        crate::telemetry::Operation::blobs("release", &container)
            .run(async move {
                if let Some(renewal) = self.renewal.take() {
                    renewal.abort();
                }
                if let Some(loss) = self.lost.borrow().clone() {
                    return Err(loss.error(self.blob.lock.clone()));
                }
                let action = LeaseAction::Release { lease: self.lease };
                match self
                    .blob
                    .backend
                    .lease(&self.blob.container, &self.blob.path, action)
                    .await
                {
                    Ok(_) => Ok(()),
                    Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::NotFound) => {
                        Err(Loss::new("the lease was no longer held when it was released", Some(e))
                            .error(self.blob.lock.clone()))
                    }
                    Err(e) => Err(e),
                }
            })
            .await
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        let Some(renewal) = self.renewal.take() else {
            return;
        };
        renewal.abort();
        if self.lost.borrow().is_some() {
            return;
        }
        // Best effort: without a runtime the lease runs out by itself.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let blob = self.blob.clone();
            let action = LeaseAction::Release { lease: self.lease };
            runtime.spawn(async move {
                let _ = blob.backend.lease(&blob.container, &blob.path, action).await;
            });
        }
    }
}

/// Renews the lease every third of its duration until the task is aborted,
/// and reports a loss through `tell`: at once when the service refuses a
/// renewal, or when renewals kept failing past the lease's deadline.
/// Why a lease was lost: in words, and the service's refusal that showed it.
#[derive(Clone, Default)]
struct Loss {
    reason: String,
    source: Option<Arc<Error>>,
}

impl Loss {
    fn new(reason: &str, source: Option<Error>) -> Loss {
        Loss {
            reason: reason.to_owned(),
            source: source.map(Arc::new),
        }
    }

    /// The [`Error::LockLost`] of lock `name`, the refusal as its source.
    fn error(self, name: String) -> Error {
        Error::LockLost {
            name,
            reason: self.reason,
            source: self.source.map(|e| Box::new(e) as crate::error::BoxError),
        }
    }
}

async fn renew(blob: LockBlob, lease: Guid, seconds: u32, sent: Instant, tell: watch::Sender<Option<Loss>>) {
    let ttl = Duration::from_secs(u64::from(seconds));
    let every = ttl / 3;
    let mut deadline = sent + ttl;
    let mut next = sent + every;
    loop {
        tokio::time::sleep_until(next.min(deadline)).await;
        if Instant::now() >= deadline {
            let _ = tell.send(Some(Loss::new(
                &format!("the lease could not be renewed within its {seconds} s and may have run out"),
                None,
            )));
            return;
        }
        let sent = Instant::now();
        match blob
            .backend
            .lease(&blob.container, &blob.path, LeaseAction::Renew { lease })
            .await
        {
            Ok(_) => {
                deadline = sent + ttl;
                next = sent + every;
            }
            Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::NotFound) => {
                let _ = tell.send(Some(Loss::new("the service refused to renew the lease", Some(e))));
                return;
            }
            Err(e) => {
                tracing::debug!(lock = %blob.lock, error = %e, "a lock renewal failed; trying again");
                next = Instant::now() + RENEW_RETRY;
            }
        }
    }
}
