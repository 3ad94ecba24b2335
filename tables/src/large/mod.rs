//! Large values: values of any size stored losslessly in split cells,
//! continuation rows or blobs, and files kept as blobs (`BlobContent`).
//! Everything here is pure planning, encoding and reassembly; the store does the I/O.

pub(crate) mod blob_value;
pub(crate) mod cells;
pub(crate) mod continuation_hints;
pub(crate) mod entity_rows;
pub(crate) mod gather;
pub(crate) mod gzip;
pub(crate) mod logical;
pub(crate) mod plan;
pub(crate) mod sink;
pub(crate) mod stream;

pub use cells::{encode_large_bytes, encode_large_json, encode_large_json_value, encode_large_text};
