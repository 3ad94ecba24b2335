//! The blob seam: the primitives large values, files and locks need, with
//! the blob service's semantics (create-only and conditional writes,
//! conditional and ranged reads, leases, listing, the service clock).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use sha2::{Digest, Sha256};

use crate::error::Result;
use crate::value::{DateTime, Guid};

/// What a blob looks like without its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobProperties {
    /// The strong ETag, e.g. `"0x8D72069A295B958"`.
    pub etag: String,
    /// Last-Modified, at the service's one-second resolution.
    pub last_modified: DateTime,
    /// Length in bytes.
    pub length: u64,
    /// Content-Type, if set.
    pub content_type: Option<String>,
    /// Content-Encoding, if set (stored and echoed, never applied).
    pub content_encoding: Option<String>,
}

/// The condition of a blob write or delete.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BlobCondition {
    /// Unconditional.
    #[default]
    None,
    /// Create-only (`If-None-Match: *`): 409 `BlobAlreadyExists` if the blob exists.
    IfNoneMatchAny,
    /// The blob must have this ETag: 412 `ConditionNotMet` otherwise (also when it is missing).
    IfMatch(String),
    /// The blob must be unmodified since this instant: 412 `ConditionNotMet` otherwise.
    IfUnmodifiedSince(DateTime),
}

/// Options of a blob upload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PutOptions {
    /// Content-Type to store.
    pub content_type: Option<String>,
    /// Content-Encoding to store (the bytes are stored as given).
    pub content_encoding: Option<String>,
    /// The write's condition.
    pub condition: BlobCondition,
    /// The lease id, required when the blob is leased (412 `LeaseIdMissing`
    /// without it, 412 `LeaseIdMismatchWithBlobOperation` with another one,
    /// 412 `LeaseNotPresentWithBlobOperation` when the blob has no active lease).
    pub lease: Option<Guid>,
}

/// Options of a blob delete.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeleteOptions {
    /// The delete's condition.
    pub condition: BlobCondition,
    /// The lease id, required when the blob is leased (the same 412 answers as [`PutOptions::lease`]).
    pub lease: Option<Guid>,
}

impl From<BlobCondition> for DeleteOptions {
    fn from(condition: BlobCondition) -> DeleteOptions {
        DeleteOptions { condition, lease: None }
    }
}

/// The condition of a blob read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ReadCondition {
    /// Unconditional.
    #[default]
    None,
    /// Read only this version: 412 `ConditionNotMet` if the blob has another ETag.
    IfMatch(String),
    /// Read only if the blob changed: 304 (code `ConditionNotMet`) if it
    /// still has this ETag. `*` is refused with 400 `UnsatisfiableCondition`.
    IfNoneMatch(String),
}

/// Options of a blob read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetOptions {
    /// A byte range (clipped to the blob), or the whole blob.
    pub range: Option<Range<u64>>,
    /// The read's condition.
    pub condition: ReadCondition,
}

/// How long a lease lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseDuration {
    /// A fixed number of seconds, 15 to 60 (the service answers 400
    /// `InvalidHeaderValue` to anything else).
    Seconds(u32),
    /// Until released or broken.
    Infinite,
}

/// One action of Lease Blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseAction {
    /// Takes the lease (409 `LeaseAlreadyPresent` if another one is active);
    /// the service makes up an id unless one is proposed. Acquiring again
    /// with the active lease's own id starts it anew with the new duration.
    Acquire {
        /// The duration.
        duration: LeaseDuration,
        /// The id to use.
        proposed: Option<Guid>,
    },
    /// Restarts the active lease's clock (409 `LeaseIdMismatchWithLeaseOperation`
    /// for another id; 409 `LeaseIsBrokenAndCannotBeRenewed` once it is broken or
    /// breaking). An expired lease can be renewed while nobody wrote or leased the blob.
    Renew {
        /// The lease's id.
        lease: Guid,
    },
    /// Gives the active lease a new id.
    Change {
        /// The lease's id.
        lease: Guid,
        /// Its new id.
        proposed: Guid,
    },
    /// Ends the lease at once: the blob can be leased again right away.
    Release {
        /// The lease's id.
        lease: Guid,
    },
    /// Ends the lease without its id, after a break period: `None` lets a
    /// fixed lease run out (an infinite one breaks at once), `Some(0..=60)`
    /// seconds shortens that (never lengthens). While breaking, the lease
    /// cannot be renewed or acquired, and writes still need its id.
    Break {
        /// The break period in seconds.
        period: Option<u32>,
    },
}

/// The answer of a lease action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseAnswer {
    /// The lease's id (acquire, renew, change).
    pub lease: Option<Guid>,
    /// Seconds until the broken lease ends (break).
    pub break_seconds: Option<u32>,
}

/// One listed blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobItem {
    /// The blob's name.
    pub name: String,
    /// Its properties.
    pub properties: BlobProperties,
}

/// One page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlobListing {
    /// Blobs in name order (UTF-16 code-unit order).
    pub items: Vec<BlobItem>,
    /// With a delimiter: the common prefixes (`BlobPrefix` entries), each ending with the delimiter.
    pub prefixes: Vec<String>,
    /// Where the next page starts; `None` at the end.
    pub next_marker: Option<String>,
}

/// Where [`BlobBackend::get_into`] puts a blob as it arrives.
pub trait BlobSink: Send {
    /// The blob's properties, before its first byte (the length can size a buffer).
    fn start(&mut self, properties: &BlobProperties) {
        let _ = properties;
    }

    /// The next bytes of the blob, in order.
    fn write(&mut self, bytes: &[u8]);
}

/// The bytes of a blob and their SHA-256, hashed as they arrive.
#[derive(Default)]
struct HashedBytes {
    bytes: Vec<u8>,
    hasher: Sha256,
}

impl BlobSink for HashedBytes {
    fn start(&mut self, properties: &BlobProperties) {
        // The stated length sizes the buffer once (within reason: it is the service's word).
        let length = usize::try_from(properties.length).unwrap_or(0).min(256 << 20);
        self.bytes.reserve_exact(length);
    }

    fn write(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.bytes.extend_from_slice(bytes);
    }
}

/// Blob storage with the service's semantics, in one container per call.
///
/// Errors are [`Error::Service`](crate::Error::Service) with the blob
/// service's status and code (409 `BlobAlreadyExists`, 412 `ConditionNotMet`,
/// 304 for a read whose `If-None-Match` matched, 404 `BlobNotFound` /
/// `ContainerNotFound`, the lease codes of [`LeaseAction`] and [`PutOptions::lease`]).
///
/// Leases follow the service's clock: a fixed lease expires, and a breaking
/// one ends, when the service's clock passes its end.
///
/// A decorator (a backend wrapping another, as
/// [`CountingBackend`](crate::backend::counting::CountingBackend) and
/// [`FaultyBackend`](crate::backend::faulty::FaultyBackend) do) forwards
/// every method, the default-bodied ones included: one it leaves out runs
/// the default body over the wrapped backend's other methods, so
/// [`BlobBackend::put_shared`] would copy the bytes and
/// [`BlobBackend::get_into`] would download the whole blob before handing it
/// over. `#[deny(clippy::missing_trait_methods)]` on the decorator's impl
/// makes a method left out an error.
#[async_trait]
pub trait BlobBackend: Send + Sync + fmt::Debug + 'static {
    /// Creates the container if it does not exist (concurrent creators succeed).
    async fn create_container(&self, container: &str) -> Result<()>;

    /// Uploads a whole blob under a condition.
    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties>;

    /// [`BlobBackend::put`] of bytes the caller may still share (a file the
    /// entity holds): a backend that can send them without copying them
    /// does; by default they are moved when nothing else holds them, else copied.
    async fn put_shared(
        &self,
        container: &str,
        name: &str,
        bytes: Arc<Vec<u8>>,
        options: PutOptions,
    ) -> Result<BlobProperties> {
        self.put(container, name, Arc::unwrap_or_clone(bytes), options).await
    }

    /// Reads a blob, or a byte range of it (`None` if it does not exist). An
    /// empty blob reads as empty. A range past the end is clipped.
    async fn get(
        &self,
        container: &str,
        name: &str,
        range: Option<Range<u64>>,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        let options = GetOptions {
            range,
            condition: ReadCondition::None,
        };
        self.get_with(container, name, options).await
    }

    /// Reads a blob, or a byte range of it, under a condition (`None` if it
    /// does not exist, except that `If-Match` on a missing blob is 412
    /// `ConditionNotMet`).
    async fn get_with(
        &self,
        container: &str,
        name: &str,
        options: GetOptions,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>>;

    /// Reads a whole blob into `sink` as its bytes arrive (`None`, and
    /// nothing written, if it does not exist): the properties first, then
    /// the bytes in order. By default the blob is read whole, then written.
    async fn get_into(&self, container: &str, name: &str, sink: &mut dyn BlobSink) -> Result<Option<BlobProperties>> {
        let Some((props, bytes)) = self.get(container, name, None).await? else {
            return Ok(None);
        };
        sink.start(&props);
        sink.write(&bytes);
        Ok(Some(props))
    }

    /// Reads a whole blob with the lower-case hex SHA-256 of its bytes,
    /// hashed as they arrive (through [`BlobBackend::get_into`]), so a
    /// checked read costs little more than a plain one.
    async fn get_hashed(&self, container: &str, name: &str) -> Result<Option<(BlobProperties, Vec<u8>, String)>> {
        let mut sink = HashedBytes::default();
        let props = self.get_into(container, name, &mut sink).await?;
        Ok(props.map(|props| {
            let sha = crate::value::hex(&sink.hasher.finalize());
            (props, sink.bytes, sha)
        }))
    }

    /// The blob's properties, or `None` if it does not exist.
    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>>;

    /// Marks the blob as modified now without changing its bytes (Last-Modified moves, the ETag changes).
    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties>;

    /// Deletes a blob under a condition; `Ok(false)` if it did not exist.
    async fn delete(&self, container: &str, name: &str, condition: BlobCondition) -> Result<bool> {
        self.delete_with(container, name, DeleteOptions::from(condition)).await
    }

    /// Deletes a blob under a condition and, if it is leased, its lease id;
    /// `Ok(false)` if it did not exist.
    async fn delete_with(&self, container: &str, name: &str, options: DeleteOptions) -> Result<bool>;

    /// Acquires, renews, changes, releases or breaks the lease of a blob
    /// (404 `BlobNotFound` if it does not exist). A lease action changes
    /// neither the blob's ETag nor its Last-Modified.
    async fn lease(&self, container: &str, name: &str, action: LeaseAction) -> Result<LeaseAnswer>;

    /// Lists blobs whose names start with `prefix`, at most `max_results` (≤ 5000) per page,
    /// optionally grouped by `delimiter`, starting at `marker`.
    async fn list(
        &self,
        container: &str,
        prefix: &str,
        delimiter: Option<&str>,
        marker: Option<&str>,
        max_results: u32,
    ) -> Result<BlobListing>;

    /// The service's clock (from a response `Date` header), at one-second resolution.
    async fn now(&self) -> Result<DateTime>;
}

#[async_trait]
impl<B: BlobBackend + ?Sized> BlobBackend for Arc<B> {
    async fn create_container(&self, container: &str) -> Result<()> {
        (**self).create_container(container).await
    }
    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties> {
        (**self).put(container, name, bytes, options).await
    }
    async fn put_shared(
        &self,
        container: &str,
        name: &str,
        bytes: Arc<Vec<u8>>,
        options: PutOptions,
    ) -> Result<BlobProperties> {
        (**self).put_shared(container, name, bytes, options).await
    }
    async fn get(
        &self,
        container: &str,
        name: &str,
        range: Option<Range<u64>>,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        (**self).get(container, name, range).await
    }
    async fn get_with(
        &self,
        container: &str,
        name: &str,
        options: GetOptions,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        (**self).get_with(container, name, options).await
    }
    async fn get_into(&self, container: &str, name: &str, sink: &mut dyn BlobSink) -> Result<Option<BlobProperties>> {
        (**self).get_into(container, name, sink).await
    }
    async fn get_hashed(&self, container: &str, name: &str) -> Result<Option<(BlobProperties, Vec<u8>, String)>> {
        (**self).get_hashed(container, name).await
    }
    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>> {
        (**self).properties(container, name).await
    }
    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties> {
        (**self).touch(container, name).await
    }
    async fn delete(&self, container: &str, name: &str, condition: BlobCondition) -> Result<bool> {
        (**self).delete(container, name, condition).await
    }
    async fn delete_with(&self, container: &str, name: &str, options: DeleteOptions) -> Result<bool> {
        (**self).delete_with(container, name, options).await
    }
    async fn lease(&self, container: &str, name: &str, action: LeaseAction) -> Result<LeaseAnswer> {
        (**self).lease(container, name, action).await
    }
    async fn list(
        &self,
        container: &str,
        prefix: &str,
        delimiter: Option<&str>,
        marker: Option<&str>,
        max_results: u32,
    ) -> Result<BlobListing> {
        (**self).list(container, prefix, delimiter, marker, max_results).await
    }
    async fn now(&self) -> Result<DateTime> {
        (**self).now().await
    }
}
