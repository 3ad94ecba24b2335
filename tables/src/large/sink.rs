//! Where a large value's stored bytes go as they arrive, split cells and
//! blobs alike: kept (text checked as it comes) or unpacked (`gzip`), then
//! turned into the value's one-cell form.

use super::cells::{gunzip_failure, value_from_raw, value_from_stored, MAX_INFLATED_VALUE_BYTES};
use super::gather::Gather;
use super::gzip::{capacity_guess, Gunzip};
use crate::entity::LargeForm;
use crate::error::Result;
use crate::value::Value;

/// The stored bytes of one large value, as they arrive.
pub(crate) enum StoredSink {
    /// Kept as they are (text checked as it comes), converted at the end
    /// (`text`, `binary`, `utf16le`).
    Kept(Gather),
    /// Unpacked as they arrive.
    Gzip(Box<Gunzip>),
}

impl StoredSink {
    /// A sink for bytes stored under `encoding` for a value of `form`;
    /// `stored` (the stored length the row states) sizes the first
    /// allocation, never past `max_capacity`.
    pub(crate) fn new(encoding: &str, form: LargeForm, stored: usize, max_capacity: usize) -> StoredSink {
        let text = form != LargeForm::Bytes;
        match encoding {
            "gzip" => StoredSink::Gzip(Box::new(Gunzip::new(
                MAX_INFLATED_VALUE_BYTES,
                capacity_guess(stored),
                text,
            ))),
            // Only the value's own bytes can be checked as UTF-8 on the way.
            "text" | "binary" => StoredSink::Kept(Gather::new(text, stored.min(max_capacity))),
            _ => StoredSink::Kept(Gather::new(false, stored.min(max_capacity))),
        }
    }

    /// A sink that only keeps bytes (for a value whose manifest is damaged).
    pub(crate) fn discard() -> StoredSink {
        StoredSink::Kept(Gather::new(false, 0))
    }

    /// Takes the next stored bytes.
    pub(crate) fn extend(&mut self, bytes: &[u8]) {
        match self {
            StoredSink::Kept(out) => out.extend(bytes),
            StoredSink::Gzip(gunzip) => gunzip.feed(bytes),
        }
    }

    /// Takes the next stored bytes, which are text already (a text chunk).
    pub(crate) fn push_str(&mut self, text: &str) {
        match self {
            StoredSink::Kept(out) => out.push_str(text),
            StoredSink::Gzip(gunzip) => gunzip.feed(text.as_bytes()),
        }
    }

    /// The one-cell form of the value of `column`, stored as `stored_len`
    /// bytes under `encoding`: damaged data is an [`crate::Error::Integrity`].
    pub(crate) fn finish(self, column: &str, stored_len: usize, encoding: &str, form: LargeForm) -> Result<Value> {
        match self {
            StoredSink::Kept(bytes) => value_from_stored(column, bytes.finish(), encoding, form),
            StoredSink::Gzip(gunzip) => {
                let raw = gunzip.finish().map_err(|e| gunzip_failure(column, stored_len, e))?;
                value_from_raw(column, raw, form)
            }
        }
    }
}
