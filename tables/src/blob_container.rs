//! Conditional blobs for users: [`Tables::blobs`](crate::Tables::blobs).
//!
//! Each call is one blob request with the service's conditional headers, and
//! a refusal comes back as a variant that says what happened:
//!
//! | request | refused when | error |
//! |---|---|---|
//! | [`create`](BlobContainer::create) (`If-None-Match: *`) | the blob exists | [`Error::BlobAlreadyExists`] (409) |
//! | [`replace`](BlobContainer::replace) (`If-Match`) | another version, or no blob | [`Error::BlobConditionNotMet`] (412) |
//! | [`put_if_unmodified_since`](BlobContainer::put_if_unmodified_since) | modified after the instant (whole seconds) | [`Error::BlobConditionNotMet`] (412) |
//! | [`delete_if_match`](BlobContainer::delete_if_match) (`If-Match`) | another version, or no blob | [`Error::BlobConditionNotMet`] (412) |
//! | any write | the blob is leased (e.g. a lock's blob) | [`Error::BlobLeased`] (412) |
//!
//! [`get_if_changed`](BlobContainer::get_if_changed) sends `If-None-Match`:
//! the service's 304 is [`Revalidated::Unchanged`], not an error.
//!
//! An ETag passed to a conditional call is a version: `*` and the empty ETag
//! are refused with [`Error::InvalidValue`] (column `ETag`) before anything
//! is sent, since the service reads `If-Match: *` as any version (and an
//! empty one as no condition); [`put`](BlobContainer::put) and
//! [`delete`](BlobContainer::delete) are the unconditional calls.

use std::sync::Arc;

use crate::backend::blob::{BlobBackend, BlobCondition, BlobProperties, GetOptions, PutOptions, ReadCondition};
use crate::error::{Error, Result};
use crate::store::check_caller_etag;
use crate::value::DateTime;

/// A blob as read: its properties (ETag, Last-Modified, length, content
/// headers) and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlob {
    /// The properties of the version read.
    pub properties: BlobProperties,
    /// The bytes.
    pub bytes: Vec<u8>,
}

impl StoredBlob {
    /// The ETag of the version read, for a later conditional call.
    pub fn etag(&self) -> &str {
        &self.properties.etag
    }
}

/// The answer of [`BlobContainer::get_if_changed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revalidated {
    /// The blob still has the ETag given (the service answered 304).
    Unchanged,
    /// The blob has another version now.
    Changed(StoredBlob),
    /// The blob does not exist.
    Missing,
}

/// The blobs of one container of the user's, read and written under the
/// service's conditions.
///
/// ```
/// use unified_tables::{Error, Revalidated, Tables};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let db = Tables::memory();
/// let docs = db.blobs("documents");
/// let first = docs.create("terms.txt", b"v1".to_vec()).await?;
/// assert!(matches!(docs.create("terms.txt", b"again".to_vec()).await, Err(Error::BlobAlreadyExists { .. })));
///
/// let second = docs.replace("terms.txt", b"v2".to_vec(), &first.etag).await?;
/// // A writer holding the old ETag is refused: it lost the race.
/// let stale = docs.replace("terms.txt", b"v3".to_vec(), &first.etag).await;
/// assert!(matches!(stale, Err(Error::BlobConditionNotMet { .. })));
///
/// assert_eq!(docs.get_if_changed("terms.txt", &second.etag).await?, Revalidated::Unchanged);
/// assert!(docs.delete_if_match("terms.txt", &second.etag).await?);
/// # Ok::<(), Error>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
#[doc = include_str!("../docs/blob_container.md")]
pub struct BlobContainer {
    /// The backend and the library's own container, if these tables have a blob store.
    backend: Option<(Arc<dyn BlobBackend>, String)>,
    container: String,
    ready: Arc<tokio::sync::OnceCell<()>>,
}

impl BlobContainer {
    pub(crate) fn new(backend: Option<(Arc<dyn BlobBackend>, String)>, container: &str) -> BlobContainer {
        BlobContainer {
            backend,
            container: container.to_owned(),
            ready: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    /// The container's name.
    pub fn container(&self) -> &str {
        &self.container
    }

    /// Reads a blob with its ETag; `None` if it does not exist.
    pub async fn get(&self, name: &str) -> Result<Option<StoredBlob>> {
        crate::telemetry::Operation::blobs("get", &self.container)
            .run(async move {
                let backend = self.ready().await?;
                let read = backend.get(&self.container, name, None).await;
                Ok(self
                    .map(name, read)?
                    .map(|(properties, bytes)| StoredBlob { properties, bytes }))
            })
            .await
    }

    /// Reads a blob only if it no longer has `etag` (`If-None-Match`), so a
    /// cached copy is revalidated without downloading it again.
    pub async fn get_if_changed(&self, name: &str, etag: &str) -> Result<Revalidated> {
        crate::telemetry::Operation::blobs("get_if_changed", &self.container)
            .run(async move {
                check_caller_etag(etag)?;
                let backend = self.ready().await?;
                let options = GetOptions {
                    range: None,
                    condition: ReadCondition::IfNoneMatch(etag.to_owned()),
                };
                match backend.get_with(&self.container, name, options).await {
                    Ok(Some((properties, bytes))) => Ok(Revalidated::Changed(StoredBlob { properties, bytes })),
                    Ok(None) => Ok(Revalidated::Missing),
                    Err(e) if e.service_code().is_some_and(|(status, _)| status == 304) => Ok(Revalidated::Unchanged),
                    Err(e) => Err(self.meaning(name, e)),
                }
            })
            .await
    }

    /// The properties of a blob, or `None` if it does not exist.
    pub async fn properties(&self, name: &str) -> Result<Option<BlobProperties>> {
        crate::telemetry::Operation::blobs("properties", &self.container)
            .run(async move {
                let backend = self.ready().await?;
                let read = backend.properties(&self.container, name).await;
                self.map(name, read)
            })
            .await
    }

    /// Writes a blob, whatever is stored.
    pub async fn put(&self, name: &str, bytes: Vec<u8>) -> Result<BlobProperties> {
        crate::telemetry::Operation::blobs("put", &self.container)
            .run(async move { self.put_with(name, bytes, PutOptions::default()).await })
            .await
    }

    /// Writes a new blob (`If-None-Match: *`): [`Error::BlobAlreadyExists`]
    /// if one of that name exists.
    pub async fn create(&self, name: &str, bytes: Vec<u8>) -> Result<BlobProperties> {
        crate::telemetry::Operation::blobs("create", &self.container)
            .run(async move { self.put_with(name, bytes, with(BlobCondition::IfNoneMatchAny)).await })
            .await
    }

    /// Replaces the version with ETag `etag` (`If-Match`):
    /// [`Error::BlobConditionNotMet`] if the blob has another version or none.
    pub async fn replace(&self, name: &str, bytes: Vec<u8>, etag: &str) -> Result<BlobProperties> {
        crate::telemetry::Operation::blobs("replace", &self.container)
            .run(async move {
                self.put_with(name, bytes, with(BlobCondition::IfMatch(etag.to_owned())))
                    .await
            })
            .await
    }

    /// Writes the blob if it was not modified after `since`
    /// (`If-Unmodified-Since`, compared at whole seconds):
    /// [`Error::BlobConditionNotMet`] otherwise. A missing blob is created.
    pub async fn put_if_unmodified_since(&self, name: &str, bytes: Vec<u8>, since: DateTime) -> Result<BlobProperties> {
        crate::telemetry::Operation::blobs("put_if_unmodified_since", &self.container)
            .run(async move {
                self.put_with(name, bytes, with(BlobCondition::IfUnmodifiedSince(since)))
                    .await
            })
            .await
    }

    /// Writes a blob with any options (content headers, condition, lease id).
    /// A [`BlobCondition::IfMatch`] holding `*` or an empty ETag is refused
    /// with [`Error::InvalidValue`] before anything is sent, as every
    /// conditional verb here refuses it: the service would read it as any
    /// version.
    pub async fn put_with(&self, name: &str, bytes: Vec<u8>, options: PutOptions) -> Result<BlobProperties> {
        crate::telemetry::Operation::blobs("put_with", &self.container)
            .run(async move {
                if let BlobCondition::IfMatch(etag) = &options.condition {
                    check_caller_etag(etag)?;
                }
                let backend = self.ready().await?;
                let written = backend.put(&self.container, name, bytes, options).await;
                self.map(name, written)
            })
            .await
    }

    /// Deletes a blob; `false` if it did not exist.
    pub async fn delete(&self, name: &str) -> Result<bool> {
        crate::telemetry::Operation::blobs("delete", &self.container)
            .run(async move {
                let backend = self.ready().await?;
                let deleted = backend.delete(&self.container, name, BlobCondition::None).await;
                self.map(name, deleted)
            })
            .await
    }

    /// Deletes the version with ETag `etag` (`If-Match`):
    /// [`Error::BlobConditionNotMet`] if the blob has another version or none.
    pub async fn delete_if_match(&self, name: &str, etag: &str) -> Result<bool> {
        crate::telemetry::Operation::blobs("delete_if_match", &self.container)
            .run(async move {
                check_caller_etag(etag)?;
                let backend = self.ready().await?;
                let condition = BlobCondition::IfMatch(etag.to_owned());
                let deleted = backend.delete(&self.container, name, condition).await;
                self.map(name, deleted)
            })
            .await
    }

    /// The backend, once the container exists.
    async fn ready(&self) -> Result<&Arc<dyn BlobBackend>> {
        let Some((backend, values)) = &self.backend else {
            return Err(Error::config(format!(
                "blob container `{}`: these tables have no blob store (see Tables::with_blobs)",
                self.container
            )));
        };
        if *values == self.container {
            return Err(Error::config(format!(
                "blob container `{}` holds this library's large values; use a container of your own",
                self.container
            )));
        }
        self.ready
            .get_or_try_init(|| backend.create_container(&self.container))
            .await?;
        Ok(backend)
    }

    fn map<T>(&self, name: &str, result: Result<T>) -> Result<T> {
        result.map_err(|e| self.meaning(name, e))
    }

    /// The service's refusals of a conditional request, as what they mean.
    fn meaning(&self, name: &str, error: Error) -> Error {
        let (container, name) = (self.container.clone(), name.to_owned());
        let request_id = error.request_id().map(str::to_owned);
        match error.service_code() {
            Some((409, "BlobAlreadyExists")) => Error::BlobAlreadyExists {
                container,
                name,
                request_id,
            },
            Some((412, "ConditionNotMet")) => Error::BlobConditionNotMet {
                container,
                name,
                request_id,
            },
            Some((412, code)) if code.starts_with("Lease") => Error::BlobLeased {
                container,
                name,
                code: code.to_owned(),
                request_id,
            },
            _ => error,
        }
    }
}

fn with(condition: BlobCondition) -> PutOptions {
    PutOptions {
        condition,
        ..PutOptions::default()
    }
}
