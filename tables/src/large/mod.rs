//! Large values: values of any size stored losslessly in split cells,
//! continuation rows or blobs, and files kept as blobs (`BlobContent`).

pub(crate) mod blob_content;
pub(crate) mod cells;
pub mod naming;
pub(crate) mod plan;

pub use blob_content::{decode_blob_ref, encode_blob_ref, BlobContent, BlobRef};
pub use cells::{encode_large_bytes, encode_large_json, encode_large_text};
pub use cells::{BINARY_CHUNK_BYTES, TEXT_CHUNK_UNITS};
pub use plan::{
    continuation_key, is_continuation_key, MAIN_ROW_BUDGET, MAX_CONTINUATION_ROWS, ROW_WIRE_BUDGET, SPLIT_INDEX,
    SPLIT_OF, SPLIT_PARTS,
};
