//! Put Blob: the one request both uploads send, from an owned buffer or
//! one shared with the caller.

use std::sync::Arc;

use azure_storage_blobs::prelude::{BlobContentEncoding, BlobContentType};
use bytes::Bytes;

use super::{if_match, lease_id, quoted, AzureBlobBackend};
use crate::backend::azure::http::map_error;
use crate::backend::blob::{BlobProperties, PutOptions};
use crate::error::Result;
use crate::service::BlobName;
use crate::value::DateTime;

/// Bytes shared with the caller, sent as the body of a request.
pub(super) struct Shared(pub(super) Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

impl AzureBlobBackend {
    /// Put Blob of `bytes` under the options' condition.
    pub(super) async fn put_bytes(
        &self,
        container: &str,
        name: &str,
        bytes: Bytes,
        options: PutOptions,
    ) -> Result<BlobProperties> {
        let name = BlobName::parse(name)?.into_string();
        let client = self.blob_client(container, &name)?;
        let length = bytes.len() as u64;
        let mut builder = client.put_block_blob(bytes);
        if let Some(content_type) = &options.content_type {
            builder = builder.content_type(BlobContentType::from(content_type.clone()));
        }
        if let Some(content_encoding) = &options.content_encoding {
            builder = builder.content_encoding(BlobContentEncoding::from(content_encoding.clone()));
        }
        let (etag_condition, date_condition) = if_match(&options.condition)?;
        if let Some(condition) = etag_condition {
            builder = builder.if_match(condition);
        }
        if let Some(condition) = date_condition {
            builder = builder.if_modified_since(condition);
        }
        if let Some(lease) = options.lease {
            builder = builder.lease_id(lease_id(lease)?);
        }
        let response = builder.await.map_err(map_error)?;
        Ok(BlobProperties {
            etag: quoted(&response.etag),
            last_modified: DateTime::from_unix_nanos(response.last_modified.unix_timestamp_nanos()),
            length,
            // The service stores its default when the put names no type.
            content_type: Some(
                options
                    .content_type
                    .unwrap_or_else(|| "application/octet-stream".to_owned()),
            ),
            content_encoding: options.content_encoding,
        })
    }
}
