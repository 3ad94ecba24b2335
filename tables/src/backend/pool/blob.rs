//! Blobs of a pool: a large value's blob lives in its partition's account.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;

use super::{account_of, PoolControl};
use crate::backend::blob::{
    BlobBackend, BlobCondition, BlobListing, BlobProperties, BlobSink, DeleteOptions, GetOptions, LeaseAction,
    LeaseAnswer, PutOptions,
};
use crate::error::{Error, Result};
use crate::layout::{blob_partition, unescape_segment, POOL_CONTAINERS_PARTITION};
use crate::service::BlobName;
use crate::value::DateTime;

/// A [`BlobBackend`] over the blob services of a pool's accounts, in the
/// same order as the pool's [`PooledBackend`](super::PooledBackend).
///
/// A blob is routed by its name as the service stores it (`\` read as
/// `/`, `.` and `..` segments resolved: `a/./b/c` and `a/b/c` are one blob,
/// in one account). A blob whose name has the offload shape
/// (`{table}/{partitionKey}/…`, which every large value's and file's blob
/// has) lives in its partition's account; any other blob (a lock, a
/// conditional blob of [`Tables::blobs`](crate::Tables::blobs)) in the
/// account its whole name hashes to, as if the name were a partition key: a
/// lock named after a partition key lives beside that partition. This is
/// [`PooledBlobBackend::routing_key`]. A listing whose prefix names a
/// partition asks that account; any other lists the accounts one after
/// another, each in name order, with a marker that says which account it
/// stopped in. The blob service's clock is the first account's.
#[derive(Debug, Clone)]
pub struct PooledBlobBackend {
    accounts: Arc<[Arc<dyn BlobBackend>]>,
    control: Option<Arc<PoolControl>>,
}

impl PooledBlobBackend {
    /// The blob services of the pool's accounts, in pool order. An empty
    /// pool is [`Error::Config`].
    pub fn new(accounts: Vec<Arc<dyn BlobBackend>>) -> Result<PooledBlobBackend> {
        if accounts.is_empty() {
            return Err(Error::config("a pool needs at least one blob account"));
        }
        Ok(PooledBlobBackend {
            accounts: accounts.into(),
            control: None,
        })
    }

    /// The pool as `control` knows it: writes fenced, containers listed.
    pub(crate) fn with_control(mut self, control: Arc<PoolControl>) -> PooledBlobBackend {
        self.control = Some(control);
        self
    }

    /// The key that routes the blob `name`: the partition key its name
    /// holds, or the whole name, once folded as the service folds it (an
    /// invalid name is the service's 400 `InvalidUri`).
    ///
    /// ```
    /// use unified_tables::backend::pool::PooledBlobBackend;
    /// assert_eq!(PooledBlobBackend::routing_key("locks/./jobs")?, "locks/jobs");
    /// assert_eq!(PooledBlobBackend::routing_key("T/customer-7/r/Body/00")?, "customer-7");
    /// # Ok::<(), unified_tables::Error>(())
    /// ```
    pub fn routing_key(name: &str) -> Result<String> {
        let name = BlobName::parse(name)?.into_string();
        Ok(blob_partition(&name).unwrap_or(name))
    }

    /// The account of the blob `name`.
    fn route(&self, name: &str) -> Result<&Arc<dyn BlobBackend>> {
        let key = PooledBlobBackend::routing_key(name)?;
        Ok(&self.accounts[account_of(&key, self.accounts.len())])
    }

    /// The account of a write to the blob `name` of `container`, once the
    /// fence admits it and the pool lists the container.
    async fn writer(&self, container: &str, name: &str) -> Result<&Arc<dyn BlobBackend>> {
        let key = PooledBlobBackend::routing_key(name)?;
        if let Some(control) = &self.control {
            control.admit(&key).await?;
            control.record(POOL_CONTAINERS_PARTITION, container).await?;
        }
        Ok(&self.accounts[account_of(&key, self.accounts.len())])
    }

    /// The account a listing prefix is confined to, if it names a partition
    /// (`{table}/{partitionKey}/…`).
    fn route_prefix(&self, prefix: &str) -> Option<&Arc<dyn BlobBackend>> {
        let mut segments = prefix.splitn(3, '/');
        let (_table, partition) = (segments.next()?, segments.next()?);
        segments.next()?; // the partition segment is complete
        let pk = unescape_segment(partition).filter(|_| !partition.is_empty())?;
        Some(&self.accounts[account_of(&pk, self.accounts.len())])
    }
}

/// A pooled listing's marker: `{account}:{that account's marker}`.
fn parse_marker(marker: &str, accounts: usize) -> Result<(usize, Option<&str>)> {
    let bad = || {
        Error::config(format!(
            "blob listing marker {marker:?} does not come from this pool's listing"
        ))
    };
    let (index, inner) = marker.split_once(':').ok_or_else(bad)?;
    let index: usize = index.parse().map_err(|_| bad())?;
    if index >= accounts {
        return Err(bad());
    }
    Ok((index, (!inner.is_empty()).then_some(inner)))
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl BlobBackend for PooledBlobBackend {
    async fn create_container(&self, container: &str) -> Result<()> {
        if let Some(control) = &self.control {
            // Listed before it exists, so a reshard never misses a container of the pool.
            control.record(POOL_CONTAINERS_PARTITION, container).await?;
        }
        for account in self.accounts.iter() {
            account.create_container(container).await?;
        }
        Ok(())
    }
    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties> {
        self.writer(container, name)
            .await?
            .put(container, name, bytes, options)
            .await
    }
    async fn put_shared(
        &self,
        container: &str,
        name: &str,
        bytes: Arc<Vec<u8>>,
        options: PutOptions,
    ) -> Result<BlobProperties> {
        self.writer(container, name)
            .await?
            .put_shared(container, name, bytes, options)
            .await
    }
    async fn get(
        &self,
        container: &str,
        name: &str,
        range: Option<Range<u64>>,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        self.route(name)?.get(container, name, range).await
    }
    async fn get_with(
        &self,
        container: &str,
        name: &str,
        options: GetOptions,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        self.route(name)?.get_with(container, name, options).await
    }
    async fn get_into(&self, container: &str, name: &str, sink: &mut dyn BlobSink) -> Result<Option<BlobProperties>> {
        self.route(name)?.get_into(container, name, sink).await
    }
    async fn get_hashed(&self, container: &str, name: &str) -> Result<Option<(BlobProperties, Vec<u8>, String)>> {
        self.route(name)?.get_hashed(container, name).await
    }
    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>> {
        self.route(name)?.properties(container, name).await
    }
    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties> {
        self.writer(container, name).await?.touch(container, name).await
    }
    async fn delete(&self, container: &str, name: &str, condition: BlobCondition) -> Result<bool> {
        self.writer(container, name)
            .await?
            .delete(container, name, condition)
            .await
    }
    async fn delete_with(&self, container: &str, name: &str, options: DeleteOptions) -> Result<bool> {
        self.writer(container, name)
            .await?
            .delete_with(container, name, options)
            .await
    }
    async fn lease(&self, container: &str, name: &str, action: LeaseAction) -> Result<LeaseAnswer> {
        let account = match action {
            // Letting a lease go is never fenced: it only frees the blob.
            LeaseAction::Release { .. } | LeaseAction::Break { .. } => self.route(name)?,
            _ => self.writer(container, name).await?,
        };
        account.lease(container, name, action).await
    }
    async fn list(
        &self,
        container: &str,
        prefix: &str,
        delimiter: Option<&str>,
        marker: Option<&str>,
        max_results: u32,
    ) -> Result<BlobListing> {
        if let Some(account) = self.route_prefix(prefix) {
            return account.list(container, prefix, delimiter, marker, max_results).await;
        }
        let (mut index, mut inner) = match marker {
            Some(marker) => parse_marker(marker, self.accounts.len())?,
            None => (0, None),
        };
        loop {
            let mut page = self.accounts[index]
                .list(container, prefix, delimiter, inner, max_results)
                .await?;
            match page.next_marker.take() {
                Some(next) => page.next_marker = Some(format!("{index}:{next}")),
                None if index + 1 < self.accounts.len() => {
                    if page.items.is_empty() && page.prefixes.is_empty() {
                        // Nothing here: go on to the next account in this call.
                        index += 1;
                        inner = None;
                        continue;
                    }
                    page.next_marker = Some(format!("{}:", index + 1));
                }
                None => {}
            }
            return Ok(page);
        }
    }
    async fn now(&self) -> Result<DateTime> {
        self.accounts[0].now().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::memory::MemoryBlobBackend;
    use crate::layout::{blob_name, escape_segment};

    fn pool(n: usize) -> (PooledBlobBackend, Vec<Arc<dyn BlobBackend>>) {
        let accounts: Vec<Arc<dyn BlobBackend>> = (0..n)
            .map(|_| Arc::new(MemoryBlobBackend::new()) as Arc<dyn BlobBackend>)
            .collect();
        (PooledBlobBackend::new(accounts.clone()).unwrap(), accounts)
    }

    #[tokio::test]
    async fn a_value_blob_lives_in_its_partitions_account_and_lists_from_every_account() {
        let (pooled, accounts) = pool(3);
        pooled.create_container("box").await.unwrap();
        let sha = "0".repeat(64);
        let mut names = Vec::new();
        for i in 0..12 {
            let pk = format!("p/{i}"); // escaped in the name
            let name = blob_name("T", &pk, "r", "Body", &sha);
            pooled
                .put("box", &name, vec![i as u8], PutOptions::default())
                .await
                .unwrap();
            let home = account_of(&pk, 3);
            for (n, account) in accounts.iter().enumerate() {
                let there = account.properties("box", &name).await.unwrap().is_some();
                assert_eq!(there, n == home, "{name} in account {n}");
            }
            names.push(name);
        }
        // Listing the table: every blob once, a page of two at a time.
        let mut seen = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let page = pooled.list("box", "T/", None, marker.as_deref(), 2).await.unwrap();
            seen.extend(page.items.into_iter().map(|i| i.name));
            match page.next_marker {
                Some(m) => marker = Some(m),
                None => break,
            }
        }
        seen.sort();
        names.sort();
        assert_eq!(seen, names);
        // A partition's prefix asks its account only.
        let prefix = format!("T/{}/", escape_segment("p/3"));
        let page = pooled.list("box", &prefix, None, None, 100).await.unwrap();
        assert_eq!(page.items.len(), 1);
        // A blob of another shape lives in the account of its whole name.
        for name in ["lock-a", "lock-b", "lock-c", "lock-d"] {
            pooled.put("box", name, vec![], PutOptions::default()).await.unwrap();
            let home = account_of(name, 3);
            assert!(accounts[home].properties("box", name).await.unwrap().is_some());
        }
        // A marker from elsewhere is refused, naming it.
        let err = pooled.list("box", "", None, Some("9:x"), 10).await.unwrap_err();
        assert!(err.to_string().contains("9:x"), "{err}");
    }
}
