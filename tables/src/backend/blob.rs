//! The blob seam: the primitives large values and files need, with the
//! blob service's semantics (create-only and conditional writes, ranged
//! reads, listing, the service clock).

use std::fmt;
use std::ops::Range;

use async_trait::async_trait;

use crate::error::Result;
use crate::value::DateTime;

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

/// Blob storage with the service's semantics, in one container per call.
///
/// Errors are [`Error::Service`](crate::Error::Service) with the blob
/// service's status and code (409 `BlobAlreadyExists`, 412 `ConditionNotMet`,
/// 404 `BlobNotFound` / `ContainerNotFound`).
#[async_trait]
pub trait BlobBackend: Send + Sync + fmt::Debug + 'static {
    /// Creates the container if it does not exist (concurrent creators succeed).
    async fn create_container(&self, container: &str) -> Result<()>;

    /// Uploads a whole blob under a condition.
    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties>;

    /// Reads a blob, or a byte range of it (`None` if it does not exist). An
    /// empty blob reads as empty. A range past the end is clipped.
    async fn get(
        &self,
        container: &str,
        name: &str,
        range: Option<Range<u64>>,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>>;

    /// Reads a whole blob with the lower-case hex SHA-256 of its bytes,
    /// hashed as they arrive where the backend can (so a checked read costs
    /// little more than a plain one).
    async fn get_hashed(&self, container: &str, name: &str) -> Result<Option<(BlobProperties, Vec<u8>, String)>> {
        Ok(self.get(container, name, None).await?.map(|(props, bytes)| {
            let sha = crate::value::sha256_hex(&bytes);
            (props, bytes, sha)
        }))
    }

    /// The blob's properties, or `None` if it does not exist.
    async fn properties(&self, container: &str, name: &str) -> Result<Option<BlobProperties>>;

    /// Marks the blob as modified now without changing its bytes (Last-Modified moves, the ETag changes).
    async fn touch(&self, container: &str, name: &str) -> Result<BlobProperties>;

    /// Deletes a blob under a condition; `Ok(false)` if it did not exist.
    async fn delete(&self, container: &str, name: &str, condition: BlobCondition) -> Result<bool>;

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
impl<B: BlobBackend + ?Sized> BlobBackend for std::sync::Arc<B> {
    async fn create_container(&self, container: &str) -> Result<()> {
        (**self).create_container(container).await
    }
    async fn put(&self, container: &str, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties> {
        (**self).put(container, name, bytes, options).await
    }
    async fn get(
        &self,
        container: &str,
        name: &str,
        range: Option<Range<u64>>,
    ) -> Result<Option<(BlobProperties, Vec<u8>)>> {
        (**self).get(container, name, range).await
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
