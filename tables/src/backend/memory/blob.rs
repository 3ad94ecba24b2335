//! The embedded in-memory blob backend.
//!
//! [`MemoryBlobBackend`] keeps containers and block blobs in memory and
//! answers as the blob service does (see [`BlobBackend`] for the contract):
//!
//! - **Containers** must exist: every blob operation on a missing container is
//!   404 `ContainerNotFound`. Container names follow the service's rules
//!   (3–63 characters of lower-case letters, digits and single dashes,
//!   starting and ending with a letter or digit), else 400 `InvalidResourceName`.
//! - **ETags** are strong and quoted (`"0x8DC…"`, the hex of a strictly rising
//!   tick count, as the service writes them) and change on every write and touch.
//! - **Last-Modified** comes from the backend clock, truncated to whole
//!   seconds; [`BlobBackend::now`] reads the same clock at the same resolution.
//!   The clock is the system clock plus an offset that
//!   [`MemoryBlobBackend::advance_clock`] moves forward, so grace periods can be
//!   tested without sleeping.
//! - **Conditions** (section 7 of the service semantics): `If-None-Match: *` on
//!   an existing blob is 409 `BlobAlreadyExists` for a put (412
//!   `ConditionNotMet` for a delete); `If-Match` on a missing blob or with
//!   another ETag is 412 `ConditionNotMet`; `If-Unmodified-Since` earlier than
//!   Last-Modified (compared at one second) is 412 `ConditionNotMet` and is
//!   ignored for a missing blob. A delete of a missing blob without an
//!   `If-Match` condition is `Ok(false)`.
//! - **Reads** of a byte range are clipped to the blob; an empty blob reads
//!   as empty. A read's `If-Match` with another ETag is 412 `ConditionNotMet`;
//!   its `If-None-Match` with the current ETag is 304, and `If-None-Match: *`
//!   is 400 `UnsatisfiableCondition` (service version 2016-05-31 and later).
//! - **Leases** follow the service's state machine on the backend clock (see
//!   `lease.rs` for the rules and where each status and code comes from):
//!   writes, deletes and touches of a leased or breaking blob need its lease
//!   id; a fixed lease expires and a break ends when the clock passes them,
//!   so [`MemoryBlobBackend::advance_clock`] lets a test outlive a lease
//!   without sleeping. A put naming a lease id on a blob that does not exist
//!   is 412 `LeaseNotPresentWithBlobOperation` (Azurite creates the blob).
//! - **Listing** is in UTF-16 code-unit order with prefix, delimiter (common
//!   prefixes count as one result each), opaque markers and `max_results`
//!   (0 is 400 `InvalidQueryParameterValue`; above 5000 the page is capped at
//!   5000, as the service caps it).
//! - **Names** are folded as the service folds them before anything is
//!   stored or looked up (see [`BlobName::parse`](crate::service::BlobName::parse)).
//! - **Content-Type / Content-Encoding** are stored and echoed; the bytes are
//!   stored exactly as given. A put without a Content-Type stores
//!   `application/octet-stream`, the service's default.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;

use super::blob_answers::{
    blob_not_found, check_condition, check_read_condition, condition_not_met, container_not_found,
    invalid_query_parameter, unsatisfiable_condition, whole_seconds,
};
use super::lease::Lease;
use crate::backend::blob::{
    BlobBackend, BlobItem, BlobListing, BlobProperties, BlobSink, DeleteOptions, GetOptions, LeaseAction, LeaseAnswer,
    PutOptions, ReadCondition,
};
use crate::error::{Error, Result};
use crate::service::{check_container_name, BlobName, DEFAULT_CONTENT_TYPE, MAX_LIST_RESULTS, MAX_PUT_BLOB_BYTES};
use crate::value::{cmp_utf16, DateTime};

/// The prefix of the opaque listing markers this backend hands out.
const MARKER_PREFIX: &str = "m1!";

/// An embedded blob backend that answers as the blob service does.
///
/// ```
/// use unified_tables::backend::blob::{BlobBackend, BlobCondition, PutOptions};
/// use unified_tables::backend::memory::MemoryBlobBackend;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let blobs = MemoryBlobBackend::new();
/// blobs.create_container("large-values").await?;
/// let create_only = PutOptions { condition: BlobCondition::IfNoneMatchAny, ..PutOptions::default() };
/// let stored = blobs.put("large-values", "a/b", b"hello".to_vec(), create_only.clone()).await?;
/// // A second create-only put finds the blob: 409 BlobAlreadyExists.
/// let again = blobs.put("large-values", "a/b", b"other".to_vec(), create_only).await;
/// assert_eq!(again.unwrap_err().service_code(), Some((409, "BlobAlreadyExists")));
/// let (props, bytes) = blobs.get("large-values", "a/b", Some(1..3)).await?.expect("stored");
/// assert_eq!((props.etag, bytes), (stored.etag, b"el".to_vec()));
/// # Ok::<(), unified_tables::Error>(())
/// # }).unwrap();
/// ```
#[derive(Default)]
pub struct MemoryBlobBackend {
    state: Mutex<State>,
}

impl MemoryBlobBackend {
    /// An empty backend: no containers, the clock at the system time.
    pub fn new() -> MemoryBlobBackend {
        MemoryBlobBackend::default()
    }

    /// Moves the backend clock forward by `by` (a test hook): Last-Modified of
    /// later writes, [`BlobBackend::now`] and the `If-Unmodified-Since`
    /// comparisons all see the moved clock. The clock never goes back.
    pub fn advance_clock(&self, by: Duration) {
        let mut state = self.lock();
        state.offset = state.offset.saturating_add(by);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock, but never let one poison the backend.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Put Blob: stores `bytes` under the options' condition.
    fn store(&self, container: &str, name: &str, bytes: Arc<Vec<u8>>, options: PutOptions) -> Result<BlobProperties> {
        let name = BlobName::parse(name)?.into_string();
        let length = bytes.len() as u64;
        if length > MAX_PUT_BLOB_BYTES {
            return Err(Error::service(
                413,
                "RequestBodyTooLarge",
                format!("The request body is too large ({length} bytes) and exceeds the maximum permissible limit ({MAX_PUT_BLOB_BYTES} bytes)."),
            ));
        }
        let mut guard = self.lock();
        let state = &mut *guard;
        let key = ListedName(name);
        let now = state.clock();
        let existing = state.container(container)?.blobs.get(&key);
        check_condition(existing.map(|b| &b.properties), &options.condition, true)?;
        let lease = match existing {
            Some(blob) => blob.lease.check_write(now, options.lease)?,
            None => Lease::Available.check_write(now, options.lease)?,
        };
        let (etag, last_modified) = state.new_version();
        let properties = BlobProperties {
            etag,
            last_modified,
            length,
            content_type: Some(options.content_type.unwrap_or_else(|| DEFAULT_CONTENT_TYPE.to_owned())),
            content_encoding: options.content_encoding,
        };
        let blob = Blob {
            properties: properties.clone(),
            bytes,
            lease,
        };
        state.container_mut(container)?.blobs.insert(key, blob);
        Ok(properties)
    }
}

impl fmt::Debug for MemoryBlobBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.lock();
        let mut containers: Vec<(&str, usize)> = state
            .containers
            .iter()
            .map(|(n, c)| (n.as_str(), c.blobs.len()))
            .collect();
        containers.sort_unstable();
        f.debug_struct("MemoryBlobBackend")
            .field("containers", &containers)
            .field("clock_offset", &state.offset)
            .finish()
    }
}

/// Everything the backend stores.
#[derive(Default)]
struct State {
    containers: HashMap<String, Container>,
    /// How far the clock has been advanced past the system clock.
    offset: Duration,
    /// The tick count of the last ETag handed out (ETags strictly rise).
    last_etag_ticks: i64,
}

impl State {
    /// The backend clock at 100 ns.
    fn clock(&self) -> DateTime {
        let offset = i128::try_from(self.offset.as_nanos()).unwrap_or(i128::MAX / 2);
        DateTime::from_unix_nanos(DateTime::now().unix_nanos().saturating_add(offset))
    }

    /// A new version: an ETag from a strictly rising tick count, and
    /// Last-Modified at whole seconds.
    fn new_version(&mut self) -> (String, DateTime) {
        let now = self.clock();
        let ticks = now.ticks().max(self.last_etag_ticks + 1);
        self.last_etag_ticks = ticks;
        (format!("\"0x{ticks:X}\""), whole_seconds(now))
    }

    fn container(&self, name: &str) -> Result<&Container> {
        check_container_name(name)?;
        self.containers.get(name).ok_or_else(|| container_not_found(name))
    }

    fn container_mut(&mut self, name: &str) -> Result<&mut Container> {
        check_container_name(name)?;
        self.containers.get_mut(name).ok_or_else(|| container_not_found(name))
    }
}

/// One container: its blobs in name order.
#[derive(Default)]
struct Container {
    blobs: BTreeMap<ListedName, Blob>,
}

/// A blob name, ordered as the service orders listings: by UTF-16 code units.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ListedName(String);

impl Ord for ListedName {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_utf16(&self.0, &other.0)
    }
}

impl PartialOrd for ListedName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One stored blob.
struct Blob {
    properties: BlobProperties,
    /// Shared with the writer's buffer when it was put shared, and with streamed reads.
    bytes: Arc<Vec<u8>>,
    lease: Lease,
}

fn encode_marker(name: &str) -> String {
    format!(
        "{MARKER_PREFIX}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(name.as_bytes())
    )
}

fn decode_marker(marker: &str) -> Result<String> {
    let bad = || invalid_query_parameter("marker", marker, "not a marker this backend handed out");
    let encoded = marker.strip_prefix(MARKER_PREFIX).ok_or_else(bad)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| bad())?;
    String::from_utf8(bytes).map_err(|_| bad())
}

#[async_trait]
impl BlobBackend for MemoryBlobBackend {
    async fn create_container(&self, container: &str) -> Result<()> {
        check_container_name(container)?;
        self.lock().containers.entry(container.to_owned()).or_default();
        Ok(())
    }

    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties> {
        self.store(container, name, Arc::new(bytes), options)
    }

    async fn put_shared(
        &self,
        container: &str,
        name: &str,
        bytes: Arc<Vec<u8>>,
        options: PutOptions,
    ) -> Result<BlobProperties> {
        // Stored bytes never change, so they can stay shared with the writer.
        self.store(container, name, bytes, options)
    }

    async fn get_into(&self, container: &str, name: &str, sink: &mut dyn BlobSink) -> Result<Option<BlobProperties>> {
        let name = BlobName::parse(name)?.into_string();
        let found = {
            let state = self.lock();
            let blob = state.container(container)?.blobs.get(&ListedName(name));
            blob.map(|b| (b.properties.clone(), b.bytes.clone()))
        };
        // Written outside the lock: the sink's work does not hold up other callers.
        Ok(found.map(|(props, bytes)| {
            sink.start(&props);
            sink.write(&bytes);
            props
        }))
    }

    async fn get_with(
        &self,
        container: &str,
        name: &str,
        options: GetOptions,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        let name = BlobName::parse(name)?.into_string();
        let state = self.lock();
        let Some(blob) = state.container(container)?.blobs.get(&ListedName(name)) else {
            return match options.condition {
                ReadCondition::IfMatch(_) => Err(condition_not_met()),
                ReadCondition::IfNoneMatch(etag) if etag == "*" => Err(unsatisfiable_condition()),
                _ => Ok(None),
            };
        };
        check_read_condition(&blob.properties, &options.condition)?;
        let bytes = match options.range {
            None => blob.bytes.to_vec(),
            Some(range) => {
                let len = blob.bytes.len() as u64;
                let start = range.start.min(len);
                let end = range.end.clamp(start, len);
                // Both bounds are at most the length, which fits in usize.
                blob.bytes[start as usize..end as usize].to_vec()
            }
        };
        Ok(Some((blob.properties.clone(), bytes)))
    }

    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>> {
        let name = BlobName::parse(name)?.into_string();
        let state = self.lock();
        let blobs = &state.container(container)?.blobs;
        Ok(blobs.get(&ListedName(name)).map(|b| b.properties.clone()))
    }

    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties> {
        let name = BlobName::parse(name)?.into_string();
        let mut guard = self.lock();
        let state = &mut *guard;
        let key = ListedName(name);
        let now = state.clock();
        let Some(existing) = state.container(container)?.blobs.get(&key) else {
            return Err(blob_not_found(container, &key.0));
        };
        let lease = existing.lease.check_write(now, None)?;
        let (etag, last_modified) = state.new_version();
        let blob = state
            .container_mut(container)?
            .blobs
            .get_mut(&key)
            .ok_or_else(|| blob_not_found(container, &key.0))?;
        blob.lease = lease;
        blob.properties.etag = etag;
        blob.properties.last_modified = last_modified;
        Ok(blob.properties.clone())
    }

    async fn delete_with(&self, container: &str, name: &str, options: DeleteOptions) -> Result<bool> {
        let name = BlobName::parse(name)?.into_string();
        let mut guard = self.lock();
        let now = guard.clock();
        let blobs = &mut guard.container_mut(container)?.blobs;
        let key = ListedName(name);
        check_condition(blobs.get(&key).map(|b| &b.properties), &options.condition, false)?;
        if let Some(blob) = blobs.get(&key) {
            blob.lease.check_write(now, options.lease)?;
        }
        Ok(blobs.remove(&key).is_some())
    }

    async fn lease(&self, container: &str, name: &str, action: LeaseAction) -> Result<LeaseAnswer> {
        let name = BlobName::parse(name)?.into_string();
        let mut guard = self.lock();
        let now = guard.clock();
        let key = ListedName(name);
        let blob = guard
            .container_mut(container)?
            .blobs
            .get_mut(&key)
            .ok_or_else(|| blob_not_found(container, &key.0))?;
        let (lease, answer) = blob.lease.apply(now, action)?;
        blob.lease = lease;
        Ok(answer)
    }

    async fn list(
        &self,
        container: &str,
        prefix: &str,
        delimiter: Option<&str>,
        marker: Option<&str>,
        max_results: u32,
    ) -> Result<BlobListing> {
        let state = self.lock();
        let blobs = &state.container(container)?.blobs;
        if max_results == 0 {
            return Err(invalid_query_parameter(
                "maxresults",
                "0",
                "the value must be at least 1",
            ));
        }
        let page_size = max_results.min(MAX_LIST_RESULTS) as usize;
        let start = match marker.filter(|m| !m.is_empty()) {
            Some(marker) => Bound::Included(ListedName(decode_marker(marker)?)),
            None => Bound::Included(ListedName(prefix.to_owned())),
        };
        let delimiter = delimiter.filter(|d| !d.is_empty());

        let mut listing = BlobListing::default();
        let mut returned = 0usize;
        for (name, blob) in blobs.range((start, Bound::Unbounded)) {
            let Some(rest) = name.0.strip_prefix(prefix) else {
                if cmp_utf16(&name.0, prefix) == Ordering::Greater {
                    // Past every name that starts with the prefix.
                    break;
                }
                continue;
            };
            let common = delimiter.and_then(|d| rest.find(d).map(|at| &name.0[..prefix.len() + at + d.len()]));
            if let Some(common) = common {
                if listing.prefixes.last().map(String::as_str) == Some(common) {
                    // Already listed: the prefix counts once.
                    continue;
                }
            }
            if returned == page_size {
                listing.next_marker = Some(encode_marker(common.unwrap_or(&name.0)));
                break;
            }
            returned += 1;
            match common {
                Some(common) => listing.prefixes.push(common.to_owned()),
                None => listing.items.push(BlobItem {
                    name: name.0.clone(),
                    properties: blob.properties.clone(),
                }),
            }
        }
        Ok(listing)
    }

    async fn now(&self) -> Result<DateTime> {
        Ok(whole_seconds(self.lock().clock()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::blob::BlobCondition;
    use crate::backend::memory::blob_answers::TICKS_PER_SECOND;

    const C: &str = "blobs";

    async fn backend() -> MemoryBlobBackend {
        let b = MemoryBlobBackend::new();
        b.create_container(C).await.unwrap();
        b
    }

    /// (status, code) of a service error.
    fn code<T: fmt::Debug>(result: Result<T>) -> (u16, String) {
        match result {
            Err(Error::Service { status, code, .. }) => (status, code),
            other => panic!("expected a service error, got {other:?}"),
        }
    }

    fn with(condition: BlobCondition) -> PutOptions {
        PutOptions {
            condition,
            ..PutOptions::default()
        }
    }

    async fn put(b: &MemoryBlobBackend, name: &str, bytes: &[u8]) -> BlobProperties {
        b.put(C, name, bytes.to_vec(), PutOptions::default()).await.unwrap()
    }

    async fn bytes_of(b: &MemoryBlobBackend, name: &str) -> Option<Vec<u8>> {
        b.get(C, name, None).await.unwrap().map(|(_, bytes)| bytes)
    }

    async fn names(b: &MemoryBlobBackend, prefix: &str) -> Vec<String> {
        let listing = b.list(C, prefix, None, None, 5000).await.unwrap();
        listing.items.into_iter().map(|i| i.name).collect()
    }

    fn seconds(n: i64) -> Duration {
        Duration::from_secs(n as u64)
    }

    fn plus(at: DateTime, ticks: i64) -> DateTime {
        DateTime::from_ticks(at.ticks() + ticks).unwrap()
    }

    // --- containers -------------------------------------------------------

    #[tokio::test]
    async fn a_missing_container_is_404_container_not_found_for_every_operation() {
        let b = MemoryBlobBackend::new();
        let missing = (404, "ContainerNotFound".to_owned());
        assert_eq!(code(b.put("nope", "a", vec![1], PutOptions::default()).await), missing);
        assert_eq!(code(b.get("nope", "a", None).await), missing);
        assert_eq!(code(b.get("nope", "a", Some(0..1)).await), missing);
        assert_eq!(code(b.properties("nope", "a").await), missing);
        assert_eq!(code(b.touch("nope", "a").await), missing);
        assert_eq!(code(b.delete("nope", "a", BlobCondition::None).await), missing);
        assert_eq!(code(b.list("nope", "", None, None, 10).await), missing);
        // now() needs no container.
        b.now().await.unwrap();
    }

    #[tokio::test]
    async fn container_names_follow_the_service_rules() {
        let b = MemoryBlobBackend::new();
        for good in ["abc", "a-b-c", "0ab", &"a".repeat(63)] {
            b.create_container(good).await.unwrap();
        }
        for bad in ["ab", "Abc", "a_b", "-ab", "ab-", "a--b", "a.b", &"a".repeat(64), ""] {
            assert_eq!(
                code(b.create_container(bad).await),
                (400, "InvalidResourceName".to_owned()),
                "{bad}"
            );
            assert_eq!(code(b.properties(bad, "x").await).0, 400, "{bad}");
        }
    }

    // --- ETags, Last-Modified and the clock --------------------------------

    #[tokio::test]
    async fn touch_moves_the_version_and_keeps_bytes_and_content_headers() {
        let b = backend().await;
        let options = PutOptions {
            content_type: Some("text/plain".into()),
            content_encoding: Some("gzip".into()),
            condition: BlobCondition::None,
            lease: None,
        };
        let stored = b.put(C, "k", b"bytes".to_vec(), options).await.unwrap();
        b.advance_clock(seconds(90));
        let touched = b.touch(C, "k").await.unwrap();
        assert_ne!(touched.etag, stored.etag);
        // 90 s later (91 if the system clock crossed a second meanwhile).
        let moved = (touched.last_modified.ticks() - stored.last_modified.ticks()) / TICKS_PER_SECOND;
        assert!((90..=91).contains(&moved), "{moved}");
        assert_eq!(
            (
                touched.length,
                touched.content_type.as_deref(),
                touched.content_encoding.as_deref()
            ),
            (5, Some("text/plain"), Some("gzip"))
        );
        assert_eq!(bytes_of(&b, "k").await.unwrap(), b"bytes");
        assert_eq!(code(b.touch(C, "missing").await), (404, "BlobNotFound".to_owned()));
    }

    #[tokio::test]
    async fn last_modified_and_now_are_whole_seconds_of_the_backend_clock() {
        let b = backend().await;
        let before = b.now().await.unwrap();
        let stored = put(&b, "k", b"x").await;
        let after = b.now().await.unwrap();
        for at in [before, stored.last_modified, after] {
            assert_eq!(at.ticks() % TICKS_PER_SECOND, 0, "{at}");
        }
        assert!(before <= stored.last_modified && stored.last_modified <= after);

        b.advance_clock(seconds(3600));
        let later = b.now().await.unwrap();
        assert!(
            later.ticks() - after.ticks() >= 3600 * TICKS_PER_SECOND,
            "{after} -> {later}"
        );
        assert!(
            later.ticks() - after.ticks() < 3610 * TICKS_PER_SECOND,
            "{after} -> {later}"
        );
        let rewritten = put(&b, "k", b"y").await;
        assert!(rewritten.last_modified >= later);
        // Reading does not move Last-Modified.
        b.advance_clock(seconds(5));
        assert_eq!(
            b.properties(C, "k").await.unwrap().unwrap().last_modified,
            rewritten.last_modified
        );
    }

    // --- conditions ----------------------------------------------------------

    #[tokio::test]
    async fn if_unmodified_since_compares_whole_seconds_with_last_modified() {
        let b = backend().await;
        let stored = put(&b, "k", b"v1").await;
        let lm = stored.last_modified;
        let not_met = (412, "ConditionNotMet".to_owned());
        let since = |at| with(BlobCondition::IfUnmodifiedSince(at));
        // Earlier than Last-Modified: 412, also one tick earlier (it truncates to the second before).
        assert_eq!(
            code(b.put(C, "k", b"x".to_vec(), since(plus(lm, -TICKS_PER_SECOND))).await),
            not_met
        );
        assert_eq!(code(b.put(C, "k", b"x".to_vec(), since(plus(lm, -1))).await), not_met);
        assert_eq!(
            code(b.delete(C, "k", BlobCondition::IfUnmodifiedSince(plus(lm, -1))).await),
            not_met
        );
        assert_eq!(bytes_of(&b, "k").await.unwrap(), b"v1");
        // Equal, or later within the same second, or later: the write goes ahead.
        b.put(C, "k", b"v2".to_vec(), since(lm)).await.unwrap();
        let lm = b.properties(C, "k").await.unwrap().unwrap().last_modified;
        b.put(C, "k", b"v3".to_vec(), since(plus(lm, TICKS_PER_SECOND - 1)))
            .await
            .unwrap();
        // A write a second later makes the old instant stale.
        b.advance_clock(seconds(1));
        let rewritten = put(&b, "k", b"v4").await;
        assert!(rewritten.last_modified > lm);
        assert_eq!(code(b.put(C, "k", b"x".to_vec(), since(lm)).await), not_met);
        assert!(b
            .delete(C, "k", BlobCondition::IfUnmodifiedSince(rewritten.last_modified))
            .await
            .unwrap());
        // A missing blob: the condition does not apply.
        b.put(C, "fresh", b"v".to_vec(), since(DateTime::MIN_STORABLE))
            .await
            .unwrap();
        assert!(!b
            .delete(C, "never", BlobCondition::IfUnmodifiedSince(DateTime::MIN_STORABLE))
            .await
            .unwrap());
    }

    #[tokio::test]
    async fn a_page_holds_at_most_5000_results() {
        let b = backend().await;
        {
            let mut state = b.lock();
            let container = state.containers.get_mut(C).unwrap();
            for i in 0..5001 {
                let blob = Blob {
                    properties: BlobProperties {
                        etag: format!("\"0x{i:X}\""),
                        last_modified: DateTime::UNIX_EPOCH,
                        length: 0,
                        content_type: None,
                        content_encoding: None,
                    },
                    bytes: Arc::default(),
                    lease: Lease::default(),
                };
                container.blobs.insert(ListedName(format!("{i:05}")), blob);
            }
        }
        let page = b.list(C, "", None, None, u32::MAX).await.unwrap();
        assert_eq!(page.items.len(), 5000);
        let rest = b.list(C, "", None, page.next_marker.as_deref(), 5000).await.unwrap();
        assert_eq!(
            rest.items.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
            ["05000"]
        );
        assert_eq!(rest.next_marker, None);
    }

    // --- names -------------------------------------------------------------------

    #[test]
    fn dot_segments_fold_as_the_service_folds_them() {
        let folded = |n: &str| BlobName::parse(n).unwrap().into_string();
        assert_eq!(folded("./key"), "key");
        assert_eq!(folded("a/./b"), "a/b");
        assert_eq!(folded("a/../b"), "b");
        assert_eq!(folded("a/b/../../c"), "c");
        assert_eq!(folded("a//../b"), "a/b");
        assert_eq!(folded("./././k"), "k");
        assert_eq!(folded(r"a\b"), "a/b");
        assert_eq!(folded(r".\k"), "k");
        assert_eq!(
            folded("a..b/...k/.x"),
            "a..b/...k/.x",
            "only whole `.` / `..` segments fold"
        );
        assert_eq!(folded("a//b"), "a//b", "empty inner segments stay");
        assert_eq!(
            folded("%2E/k"),
            "%2E/k",
            "names are not percent-decoded: `%` is a character"
        );
    }

    #[test]
    fn names_the_service_cannot_store_are_refused_with_400() {
        let refused = |n: &str| code(BlobName::parse(n));
        let invalid = (400, "InvalidUri".to_owned());
        for name in [
            "",
            ".",
            "..",
            "./",
            "../k",
            "a/../../k",
            "a/..",
            "a/.",
            "/k",
            "k/",
            "a/b/",
        ] {
            assert_eq!(refused(name), invalid, "{name:?}");
        }
        assert_eq!(BlobName::parse(&"x".repeat(1024)).unwrap().into_string().len(), 1024);
        assert_eq!(refused(&"x".repeat(1025)), invalid);
        // 1024 characters, not bytes: 1024 two-byte characters are fine; a character
        // outside the BMP counts as two.
        BlobName::parse(&"é".repeat(1024)).unwrap().into_string();
        assert_eq!(refused(&"\u{1f600}".repeat(513)), invalid);
        // Folding happens first: a long name that folds short is fine.
        BlobName::parse(&format!("{}/../k", "x".repeat(1100)))
            .unwrap()
            .into_string();
        let segments = |n: usize| vec!["s"; n].join("/");
        BlobName::parse(&segments(254)).unwrap().into_string();
        assert_eq!(refused(&segments(255)), invalid);
    }

    #[tokio::test]
    async fn every_operation_addresses_the_folded_name() {
        let b = backend().await;
        let stored = b
            .put(C, "./a/./x/../key", b"v".to_vec(), PutOptions::default())
            .await
            .unwrap();
        assert_eq!(names(&b, "").await, ["a/key"]);
        assert_eq!(bytes_of(&b, "a/key").await.unwrap(), b"v");
        assert_eq!(bytes_of(&b, r"a\key").await.unwrap(), b"v");
        assert_eq!(b.properties(C, "a/../a/key").await.unwrap(), Some(stored));
        b.touch(C, "./a/key").await.unwrap();
        assert_eq!(
            code(b.put(C, "a/key/", b"v".to_vec(), PutOptions::default()).await),
            (400, "InvalidUri".to_owned())
        );
        assert_eq!(code(b.get(C, "../a/key", None).await), (400, "InvalidUri".to_owned()));
        assert!(b.delete(C, "a/./key", BlobCondition::None).await.unwrap());
        assert!(names(&b, "").await.is_empty());
        // A refused name is refused before the container is looked at.
        assert_eq!(code(b.get("missing-container", "", None).await).0, 400);
    }
}
