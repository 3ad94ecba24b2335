//! Put Blob: the one request both uploads send, from an owned buffer or
//! one shared with the caller.

use std::sync::Arc;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, ETAG, LAST_MODIFIED};

use super::{
    header, lease_header, parse_http_date, quoted, request_id_of, unreadable, write_condition_headers,
    AzureBlobBackend, Resource,
};
use crate::backend::blob::{BlobProperties, PutOptions};
use crate::error::{Error, Result};
use crate::service::BlobName;

const BLOB_TYPE: HeaderName = HeaderName::from_static("x-ms-blob-type");
const BLOB_CONTENT_TYPE: HeaderName = HeaderName::from_static("x-ms-blob-content-type");
const BLOB_CONTENT_ENCODING: HeaderName = HeaderName::from_static("x-ms-blob-content-encoding");

/// Bytes shared with the caller, sent as the body of a request.
pub(super) struct Shared(pub(super) Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        self.0.as_slice()
    }
}

fn text_header(text: &str, what: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(text).map_err(|e| Error::encode(format!("the {what} `{text}` cannot be sent")).with_source(e))
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
        let length = bytes.len() as u64;
        let mut request = self
            .blob_request(hyper::Method::PUT, Resource::Blob, container, &name)?
            .header(BLOB_TYPE, HeaderValue::from_static("BlockBlob"))
            .body(bytes);
        if let Some(content_type) = &options.content_type {
            request = request.header(BLOB_CONTENT_TYPE, text_header(content_type, "content type")?);
        }
        if let Some(content_encoding) = &options.content_encoding {
            request = request.header(
                BLOB_CONTENT_ENCODING,
                text_header(content_encoding, "content encoding")?,
            );
        }
        request.headers.extend(write_condition_headers(&options.condition)?);
        if let Some(lease) = options.lease {
            let (name, value) = lease_header(lease)?;
            request.headers.insert(name, value);
        }
        let answer = self.send(request).await?.headers;
        let with_id = |e: Error| e.with_request_id(request_id_of(&answer));
        let etag = header(&answer, ETAG.as_str()).ok_or_else(|| with_id(unreadable("ETag", "missing")))?;
        let last_modified = parse_http_date(
            header(&answer, LAST_MODIFIED.as_str()).ok_or_else(|| with_id(unreadable("Last-Modified", "missing")))?,
        )
        .map_err(with_id)?;
        Ok(BlobProperties {
            etag: quoted(etag),
            last_modified,
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
