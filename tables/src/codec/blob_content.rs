use std::fmt;
use std::sync::Arc;

use futures::stream;
use sha2::{Digest, Sha256};

use crate::backend::blob::BlobBackend;
use crate::error::{Error, Result};
use crate::layout::blob_cell;
use crate::layout::BlobRef;
use crate::named_stream::named_stream;
use crate::telemetry::Operation;
use crate::value::{Row, Value};

named_stream!(
    /// The content of a [`BlobContent`], in chunks, its SHA-256 checked
    /// before the last chunk. Returned by [`BlobContent::open`].
    ///
    /// It is `Unpin`: poll it in place with its own [`next`](Self::next) or
    /// [`try_next`](Self::try_next) (no stream trait to import), or use it as
    /// a [`futures::Stream`] with any stream combinator. After an error the
    /// stream ends.
    BlobContentStream,
    Vec<u8>,
    "chunk"
);

/// Bytes fetched per request when a file is streamed.
const READ_CHUNK: u64 = 4 * 1024 * 1024;

/// The bytes of content not written yet: in memory, or spooled to a
/// temporary file (a forward-only reader is read once).
#[derive(Clone)]
enum Bytes {
    Memory(Arc<Vec<u8>>),
    Spooled {
        file: Arc<tempfile::NamedTempFile>,
        len: u64,
    },
}

impl Bytes {
    fn len(&self) -> u64 {
        match self {
            Bytes::Memory(b) => b.len() as u64,
            Bytes::Spooled { len, .. } => *len,
        }
    }

    fn read(&self) -> Result<Arc<Vec<u8>>> {
        match self {
            Bytes::Memory(b) => Ok(b.clone()),
            Bytes::Spooled { file, .. } => std::fs::read(file.path()).map(Arc::new).map_err(|e| Error::Integrity {
                column: String::new(),
                reason: format!("the spooled content could not be read back: {e}"),
            }),
        }
    }

    fn same(&self, other: &Bytes) -> bool {
        match (self, other) {
            (Bytes::Memory(a), Bytes::Memory(b)) => a == b,
            (Bytes::Spooled { file: a, .. }, Bytes::Spooled { file: b, .. }) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The bytes and content type of content not written yet.
pub(crate) type Pending<'a> = (Arc<Vec<u8>>, Option<&'a str>);

/// Where a stored content can be read from.
#[derive(Clone)]
pub(crate) struct BlobSource {
    pub(crate) backend: Arc<dyn BlobBackend>,
    pub(crate) container: String,
    /// Told when a read of the content fails its integrity check (the row
    /// that referenced it has changed): the read cache drops the entity.
    pub(crate) on_integrity: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl BlobSource {
    /// Passes `result` through, telling [`BlobSource::on_integrity`] of an integrity failure.
    fn checked<X>(&self, result: Result<X>) -> Result<X> {
        if let (Err(Error::Integrity { .. }), Some(tell)) = (&result, &self.on_integrity) {
            tell();
        }
        result
    }
}

/// A file kept in blob storage, referenced from its row by `{Col}__blob`.
///
/// A field of this type is marked `#[blob_content]`. Writing the entity
/// uploads new content (once, create-only) before the row is written;
/// reading the entity never downloads it: call [`BlobContent::open`].
///
/// ```
/// use unified_tables::BlobContent;
/// let c = BlobContent::from_bytes(b"%PDF-1.7 ...".to_vec(), "application/pdf");
/// assert_eq!(c.len(), Some(12));
/// ```
#[derive(Clone)]
pub struct BlobContent {
    pending: Option<(Bytes, Option<String>)>,
    stored: Option<BlobRef>,
    source: Option<BlobSource>,
}

impl fmt::Debug for BlobContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobContent")
            .field("pending_bytes", &self.pending.as_ref().map(|(b, _)| b.len()))
            .field("stored", &self.stored)
            .finish()
    }
}

impl PartialEq for BlobContent {
    /// Two contents are equal when they hold the same bytes (by hash once stored).
    fn eq(&self, other: &Self) -> bool {
        match (&self.stored, &other.stored, &self.pending, &other.pending) {
            (_, _, Some((a, _)), Some((b, _))) => a.same(b),
            (Some(a), Some(b), None, None) => a.sha256 == b.sha256 && a.length == b.length,
            _ => false,
        }
    }
}

impl BlobContent {
    /// New content to upload on the next write.
    pub fn from_bytes(bytes: impl Into<Vec<u8>>, content_type: impl Into<String>) -> BlobContent {
        BlobContent {
            pending: Some((Bytes::Memory(Arc::new(bytes.into())), Some(content_type.into()))),
            stored: None,
            source: None,
        }
    }

    /// New content read once from a forward-only reader and spooled to a
    /// temporary file (removed when the last copy of the content is dropped),
    /// so a retried write stores exactly the same bytes.
    pub fn from_reader(
        mut reader: impl std::io::Read,
        content_type: impl Into<String>,
    ) -> std::io::Result<BlobContent> {
        let mut file = tempfile::NamedTempFile::new()?;
        let len = std::io::copy(&mut reader, &mut file)?;
        std::io::Write::flush(&mut file)?;
        Ok(BlobContent {
            pending: Some((
                Bytes::Spooled {
                    file: Arc::new(file),
                    len,
                },
                Some(content_type.into()),
            )),
            stored: None,
            source: None,
        })
    }

    /// The stored reference, once the content has been written or read.
    pub fn reference(&self) -> Option<&BlobRef> {
        self.stored.as_ref()
    }

    /// The length in bytes, when known.
    pub fn len(&self) -> Option<u64> {
        match (&self.pending, &self.stored) {
            (Some((b, _)), _) => Some(b.len()),
            (None, Some(r)) => Some(r.length),
            _ => None,
        }
    }

    /// Whether the content is known to be empty.
    pub fn is_empty(&self) -> bool {
        self.len() == Some(0)
    }

    /// The lower-case hex SHA-256 of the content, once written (or read).
    pub fn sha256(&self) -> Option<&str> {
        self.stored.as_ref().map(|r| r.sha256.as_str())
    }

    /// The content type.
    pub fn content_type(&self) -> Option<&str> {
        match (&self.pending, &self.stored) {
            (Some((_, t)), _) => t.as_deref(),
            (None, Some(r)) => r.content_type.as_deref(),
            _ => None,
        }
    }

    /// The bytes to upload and the content type, for content not written yet.
    pub(crate) fn pending(&self) -> Option<Result<Pending<'_>>> {
        self.pending
            .as_ref()
            .map(|(b, t)| b.read().map(|bytes| (bytes, t.as_deref())))
    }

    /// Records that the content is stored at `reference`, readable through `source`.
    pub(crate) fn mark_stored(&mut self, reference: BlobRef, source: BlobSource) {
        self.pending = None;
        self.stored = Some(reference);
        self.source = Some(source);
    }

    pub(crate) fn bind(&mut self, source: BlobSource) {
        if self.pending.is_none() {
            self.source = Some(source);
        }
    }

    /// Streams the content lazily, in chunks. The SHA-256 is checked before
    /// the last chunk is handed out: changed or damaged content fails with
    /// [`Error::Integrity`] instead of being returned, and a blob deleted
    /// since the entity was read is an [`Error::Integrity`] saying the row may
    /// have changed.
    ///
    /// ```
    /// use unified_tables::{BlobContent, Error};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let scan = BlobContent::from_bytes(b"%PDF-1.7".to_vec(), "application/pdf");
    /// let mut chunks = scan.open();
    /// let mut bytes = Vec::new();
    /// while let Some(chunk) = chunks.try_next().await? {
    ///     bytes.extend_from_slice(&chunk);
    /// }
    /// assert_eq!(bytes, b"%PDF-1.7");
    /// # Ok::<(), Error>(())
    /// # }).unwrap();
    /// ```
    pub fn open(&self) -> BlobContentStream {
        let state = match (&self.pending, &self.stored, &self.source) {
            (Some((bytes, _)), _, _) => match bytes.read() {
                Ok(b) => State::Pending(b, false),
                Err(e) => State::Failed(Some(e)),
            },
            (None, Some(reference), Some(source)) => State::Remote {
                source: source.clone(),
                reference: reference.clone(),
                offset: 0,
                hasher: Sha256::new(),
                done: false,
            },
            (None, Some(reference), None) => State::Failed(Some(Error::BlobOffloadNotConfigured {
                column: reference.path.clone(),
            })),
            (None, None, _) => State::Failed(Some(Error::Integrity {
                column: String::new(),
                reason: "the content holds no bytes and no reference".into(),
            })),
        };
        // A stored file's reads are one operation on its container.
        let container = match &state {
            State::Remote { source, .. } => Some(source.container.clone()),
            _ => None,
        };
        let chunks = stream::try_unfold(state, |state| async move {
            match state {
                State::Failed(e) => match e {
                    Some(e) => Err(e),
                    None => Ok(None),
                },
                State::Pending(_, true) => Ok(None),
                State::Pending(bytes, false) => Ok(Some(((*bytes).clone(), State::Pending(bytes, true)))),
                State::Remote { done: true, .. } => Ok(None),
                State::Remote {
                    source,
                    reference,
                    offset,
                    hasher,
                    ..
                } => {
                    let watch = source.clone();
                    watch.checked(read_chunk(source, reference, offset, hasher).await)
                }
            }
        });
        match container {
            Some(container) => BlobContentStream::new(Operation::blobs("open", &container).stream(chunks)),
            None => BlobContentStream::new(chunks),
        }
    }

    /// Reads the whole content in one request, checking its length and
    /// SHA-256 (see [`BlobContent::open`] for the errors).
    pub async fn read_all(&self) -> Result<Vec<u8>> {
        match (&self.pending, &self.stored, &self.source) {
            (Some((bytes, _)), _, _) => Ok(Arc::unwrap_or_clone(bytes.read()?)),
            (None, Some(reference), Some(source)) => {
                let read = async { source.checked(self.read_remote(reference, source).await) };
                Operation::blobs("read_all", &source.container).run(read).await
            }
            _ => {
                use futures::TryStreamExt;
                let parts: Vec<Vec<u8>> = self.open().try_collect().await?;
                Ok(parts.concat())
            }
        }
    }

    /// The whole stored content in one streamed request, checked. A blob
    /// whose stated length is not the reference's is refused before any of
    /// it is kept, and no more than the reference's length is ever held.
    async fn read_remote(&self, reference: &BlobRef, source: &BlobSource) -> Result<Vec<u8>> {
        let mut sink = CheckedBytes::new(reference.length);
        let found = source
            .backend
            .get_into(&source.container, &reference.path, &mut sink)
            .await?;
        if found.is_none() {
            return Err(Error::Integrity {
                column: reference.path.clone(),
                reason: "the blob is gone; the row may have changed since it was read: read the entity again".into(),
            });
        }
        let mismatch = |found: String| Error::Integrity {
            column: reference.path.clone(),
            reason: format!(
                "the blob does not match its reference: {found}, expected {} bytes hashing to {}",
                reference.length, reference.sha256
            ),
        };
        if let Some(length) = sink.refused_length {
            return Err(mismatch(format!("{length} bytes")));
        }
        if sink.overflow || sink.bytes.len() as u64 != reference.length {
            let held = sink.bytes.len();
            let more = if sink.overflow { " or more" } else { "" };
            return Err(mismatch(format!("{held}{more} bytes")));
        }
        let actual = crate::value::hex(&sink.hasher.finalize());
        if actual != reference.sha256 {
            return Err(mismatch(format!("{} bytes hashing to {actual}", sink.bytes.len())));
        }
        Ok(sink.bytes)
    }
}

/// The bytes of a blob expected to be `expected` bytes long, hashed as they
/// arrive; a stated length that differs, or bytes past the expected length,
/// are noted and not kept.
struct CheckedBytes {
    expected: u64,
    bytes: Vec<u8>,
    hasher: Sha256,
    refused_length: Option<u64>,
    overflow: bool,
}

impl CheckedBytes {
    fn new(expected: u64) -> CheckedBytes {
        CheckedBytes {
            expected,
            bytes: Vec::new(),
            hasher: Sha256::new(),
            refused_length: None,
            overflow: false,
        }
    }
}

impl crate::backend::blob::BlobSink for CheckedBytes {
    fn start(&mut self, properties: &crate::backend::blob::BlobProperties) {
        if properties.length != self.expected {
            self.refused_length = Some(properties.length);
            return;
        }
        self.bytes.reserve_exact(usize::try_from(self.expected).unwrap_or(0));
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.refused_length.is_some() || self.overflow {
            return;
        }
        if self.bytes.len() as u64 + bytes.len() as u64 > self.expected {
            self.overflow = true;
            return;
        }
        self.hasher.update(bytes);
        self.bytes.extend_from_slice(bytes);
    }
}

/// Where [`BlobContent::open`] is in its stream.
enum State {
    Pending(Arc<Vec<u8>>, bool),
    Remote {
        source: BlobSource,
        reference: BlobRef,
        offset: u64,
        hasher: Sha256,
        done: bool,
    },
    Failed(Option<Error>),
}

/// The next chunk of a stored content from `offset`, checked against its
/// reference once the last chunk is read.
async fn read_chunk(
    source: BlobSource,
    reference: BlobRef,
    offset: u64,
    mut hasher: Sha256,
) -> Result<Option<(Vec<u8>, State)>> {
    let gone = || Error::Integrity {
        column: reference.path.clone(),
        reason: "the blob is gone; the row may have changed since it was read: read the entity again".into(),
    };
    let end = offset.saturating_add(READ_CHUNK).min(reference.length);
    let range = Some(offset..end);
    let (_, bytes) = source
        .backend
        .get(&source.container, &reference.path, range)
        .await?
        .ok_or_else(gone)?;
    if bytes.len() as u64 != end - offset {
        return Err(Error::Integrity {
            column: reference.path.clone(),
            reason: format!(
                "the blob returned {} bytes for a {}-byte range: its length differs from its reference",
                bytes.len(),
                end - offset
            ),
        });
    }
    hasher.update(&bytes);
    let last = end >= reference.length;
    if last {
        let actual: String = crate::value::hex(&hasher.clone().finalize());
        if actual != reference.sha256 {
            return Err(Error::Integrity {
                column: reference.path.clone(),
                reason: format!(
                    "SHA-256 mismatch: the reference says {}, the blob hashes to {actual}",
                    reference.sha256
                ),
            });
        }
    }
    Ok(Some((
        bytes,
        State::Remote {
            source,
            reference,
            offset: end,
            hasher,
            done: last,
        },
    )))
}

/// Writes the reference cell of a stored blob field. Content not uploaded
/// yet writes nothing here: the store uploads it and writes the reference.
pub fn encode_blob_ref(content: Option<&BlobContent>, column: &str, row: &mut Row) -> Result<()> {
    let Some(content) = content else { return Ok(()) };
    if let (Some(r), None) = (&content.stored, &content.pending) {
        row.insert(blob_cell(column), Value::String(r.to_cell()));
    }
    Ok(())
}

/// Reads the reference cell of a blob field (no download).
pub fn decode_blob_ref(row: &mut Row, column: &str) -> Result<Option<BlobContent>> {
    let name = blob_cell(column);
    match row.take(&name) {
        None => Ok(None),
        Some(Value::String(json)) => {
            let r = BlobRef::parse(&name, &json)?;
            Ok(Some(BlobContent {
                pending: None,
                stored: Some(r),
                source: None,
            }))
        }
        Some(other) => Err(crate::codec::type_mismatch(&name, "a blob reference", &other)),
    }
}
