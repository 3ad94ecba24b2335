//! The blob-backed entry points of [`Tables`]: named locks and conditional
//! blobs in containers of the user's.

use crate::blob_container::BlobContainer;
use crate::lock::Lock;
use crate::tables::Tables;

impl Tables {
    /// The named lock `name` (see [`crate::lock`]): a lease on the blob of
    /// that name in the container [`LOCK_CONTAINER`](crate::layout::LOCK_CONTAINER),
    /// in the blob store of these tables. Names follow the blob service's
    /// rules (1 to 1024 characters; `.` and `..` segments fold as in a path).
    ///
    /// ```
    /// use std::time::Duration;
    /// use unified_tables::Tables;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let db = Tables::memory();
    /// let guard = db.lock("invoices/42").acquire(Duration::from_secs(15)).await?;
    /// let first = guard.fencing_token();
    /// guard.release().await?;
    /// let again = db.lock("invoices/42").acquire(Duration::from_secs(15)).await?;
    /// assert!(again.fencing_token() > first);
    /// again.release().await?;
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn lock(&self, name: &str) -> Lock {
        Lock::new(self.shared.blobs.as_ref().map(|b| b.backend.clone()), name)
    }

    /// Conditional reads and writes of the blobs in `container`, a container
    /// of the user's (created on first use; the container of large values is
    /// the library's and is refused).
    pub fn blobs(&self, container: &str) -> BlobContainer {
        BlobContainer::new(
            self.shared
                .blobs
                .as_ref()
                .map(|b| (b.backend.clone(), b.options.container.clone())),
            container,
        )
    }
}
