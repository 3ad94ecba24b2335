//! The blob side of a write: the container, uploads (create-only, named by
//! hash), files of an entity, and the release of blobs a write replaced.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{Blobs, Store};
use crate::backend::blob::{BlobCondition, PutOptions};
use crate::codec::blob_content::BlobSource;
use crate::entity::{Key, TableEntity};
use crate::error::{Error, ErrorKind, Result};
use crate::large::plan::checked_blob_name;
use crate::large::plan::PlannedBlob;
use crate::layout::{blob_cell, row_prefix, BlobRef};
use crate::value::{sha256_hex, Row, Value};

/// A blob a write uploads before it writes its rows.
#[derive(Debug, Clone)]
pub(crate) struct Upload {
    pub(crate) path: String,
    pub(crate) bytes: Arc<Vec<u8>>,
    pub(crate) content_type: Option<String>,
    pub(crate) content_encoding: Option<String>,
}

/// The files of one entity: the reference each file column is stored
/// under, and the uploads new content needs.
#[derive(Debug, Default)]
pub(crate) struct Files {
    pub(crate) refs: Vec<(&'static str, BlobRef)>,
    pub(crate) uploads: Vec<Upload>,
}

impl From<PlannedBlob> for Upload {
    fn from(b: PlannedBlob) -> Upload {
        Upload {
            path: b.reference.path,
            bytes: b.bytes,
            content_type: b.reference.content_type,
            content_encoding: b.content_encoding,
        }
    }
}

impl<T: TableEntity> Store<T> {
    pub(crate) fn blobs(&self) -> Option<&Blobs> {
        self.shared.blobs.as_deref()
    }

    fn blob_source(&self) -> Option<BlobSource> {
        self.blobs().map(|b| BlobSource {
            backend: b.backend.clone(),
            container: b.options.container.clone(),
            on_integrity: None,
        })
    }

    /// The blob store, with its container created on first use.
    pub(crate) async fn blob_container(&self) -> Result<&Blobs> {
        let blobs = self
            .blobs()
            .ok_or_else(|| Error::BlobOffloadNotConfigured { column: String::new() })?;
        blobs
            .container_ready
            .get_or_try_init(|| blobs.backend.create_container(&blobs.options.container))
            .await?;
        Ok(blobs)
    }

    /// Uploads a blob create-only; an existing blob of the same name (and so
    /// the same hash) counts as success and is touched.
    pub(crate) async fn upload(&self, upload: Upload) -> Result<()> {
        let blobs = self.blob_container().await?;
        let options = PutOptions {
            content_type: upload.content_type,
            content_encoding: upload.content_encoding,
            condition: BlobCondition::IfNoneMatchAny,
            ..PutOptions::default()
        };
        // Shared, not copied: a file's bytes stay with its entity while they are sent.
        match blobs
            .backend
            .put_shared(&blobs.options.container, &upload.path, upload.bytes, options)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => blobs
                .backend
                .touch(&blobs.options.container, &upload.path)
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        }
    }

    /// Uploads the blobs of one write, all at once; the write's rows follow
    /// only once every one is stored.
    pub(crate) async fn upload_all(&self, uploads: Vec<Upload>) -> Result<()> {
        futures::future::try_join_all(uploads.into_iter().map(|u| self.upload(u)))
            .await
            .map(|_| ())
    }

    /// Deletes the blobs `old` referenced and `new` does not, when they are
    /// this row's own and older than the cleanup grace on the service clock.
    /// Failures are left to the orphan sweep.
    pub(crate) async fn release_blobs(&self, key: &Key, old: &BTreeSet<String>, new: &BTreeSet<String>) {
        let Some(blobs) = self.blobs() else { return };
        let own = row_prefix(&self.table, &key.partition_key, &key.row_key);
        let released: Vec<&String> = old
            .iter()
            .filter(|p| !new.contains(*p) && p.starts_with(&own))
            .collect();
        if released.is_empty() {
            return;
        }
        let Ok(service_now) = blobs.backend.now().await else {
            return;
        };
        let grace = blobs.options.cleanup_grace;
        for path in released {
            let Ok(Some(props)) = blobs.backend.properties(&blobs.options.container, path).await else {
                continue;
            };
            let age_nanos = service_now.unix_nanos() - props.last_modified.unix_nanos();
            if age_nanos >= 0 && age_nanos as u128 > grace.as_nanos() {
                let condition = BlobCondition::IfUnmodifiedSince(props.last_modified);
                if let Err(e) = blobs.backend.delete(&blobs.options.container, path, condition).await {
                    tracing::debug!(target: crate::telemetry::DECISION_TARGET, error = crate::telemetry::error_type(&e), "a released blob was left for the orphan sweep");
                }
            }
        }
    }

    /// Files of an entity: new content gets a blob of its own under this
    /// row's name (uploaded with the write); a kept blob is touched. Writes
    /// the reference cells into `row`.
    pub(crate) async fn prepare_files(&self, entity: &T, row: &mut Row, key: &Key) -> Result<Files> {
        let mut files = Files::default();
        for (column, content) in entity.blob_contents() {
            let own = |sha: &str| checked_blob_name(&self.table, &key.partition_key, &key.row_key, column, sha);
            let (reference, bytes) = match (content.pending().transpose()?, content.reference()) {
                (Some((bytes, content_type)), _) => {
                    let sha = sha256_hex(&bytes);
                    let r = BlobRef {
                        path: own(&sha)?,
                        sha256: sha,
                        length: bytes.len() as u64,
                        content_type: content_type.map(str::to_owned),
                        encoding: None,
                    };
                    (r, Some(bytes))
                }
                (None, Some(r)) if r.path == own(&r.sha256)? => {
                    // The row's own blob, kept: it must still exist, and is touched so a
                    // concurrent release (older than the grace) does not delete it under this write.
                    let blobs = self.blob_container().await?;
                    if let Err(e) = blobs.backend.touch(&blobs.options.container, &r.path).await {
                        return Err(match e.kind() {
                            ErrorKind::NotFound => Error::Integrity {
                                column: column.to_owned(),
                                reason: "the file was read from a version whose blob is gone: read the entity again"
                                    .into(),
                            },
                            _ => e,
                        });
                    }
                    (r.clone(), None)
                }
                (None, Some(r)) => {
                    // A content taken from another row gets a blob of its own.
                    let bytes = content.read_all().await?;
                    let r = BlobRef {
                        path: own(&r.sha256)?,
                        ..r.clone()
                    };
                    (r, Some(Arc::new(bytes)))
                }
                (None, None) => continue,
            };
            if self.blobs().is_none() {
                return Err(Error::BlobOffloadNotConfigured {
                    column: column.to_owned(),
                });
            }
            row.insert(blob_cell(column), Value::String(reference.to_cell()));
            if let Some(bytes) = bytes {
                files.uploads.push(Upload {
                    path: reference.path.clone(),
                    bytes,
                    content_type: reference.content_type.clone(),
                    content_encoding: None,
                });
            }
            files.refs.push((column, reference));
        }
        Ok(files)
    }

    /// Binds the entity's files to the blobs they were stored in (after a write).
    pub(crate) fn bind_stored_files(&self, entity: &mut T, refs: &[(&'static str, BlobRef)]) {
        let Some(source) = self.blob_source() else { return };
        for (column, content) in entity.blob_contents_mut() {
            if let Some((_, r)) = refs.iter().find(|(c, _)| *c == column) {
                content.mark_stored(r.clone(), source.clone());
            }
        }
    }

    /// Binds the files of an entity read back to the blob store, so they can be opened.
    pub(crate) fn bind_read_files(&self, entity: &mut T) {
        let Some(mut source) = self.blob_source() else { return };
        if entity.blob_contents().is_empty() {
            return;
        }
        // A file found gone or changed means the row changed: its cached copy goes.
        if self.cache.is_some() {
            let store = self.clone();
            let key = entity.key();
            source.on_integrity = Some(std::sync::Arc::new(move || {
                store.evict(&key.partition_key, &key.row_key)
            }));
        }
        for (_, content) in entity.blob_contents_mut() {
            content.bind(source.clone());
        }
    }
}
