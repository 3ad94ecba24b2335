//! Large values: files stored as blobs (`BlobContent`) and the reference
//! cell that points at them.

mod blob_content;

pub use blob_content::{decode_blob_ref, encode_blob_ref, BlobContent, BlobRef};
