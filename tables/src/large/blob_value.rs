//! A large value offloaded to a blob, read back as its bytes arrive: hashed
//! and counted on the way, and (for `gzip`) unpacked on the way too, so the
//! checks and the gunzip overlap the download instead of following it.

use sha2::{Digest, Sha256};

use super::cells::MAX_INFLATED_VALUE_BYTES;
use super::sink::StoredSink;
use crate::backend::blob::BlobSink;
use crate::entity::LargeForm;
use crate::error::{Error, Result};
use crate::layout::BlobRef;
use crate::value::{hex, Value};

/// Reads one large value's blob (see the module docs).
pub(crate) struct BlobValue<'r> {
    column: &'r str,
    reference: &'r BlobRef,
    form: LargeForm,
    hasher: Sha256,
    len: u64,
    out: StoredSink,
}

impl<'r> BlobValue<'r> {
    /// A reader of the value of `column` stored in the blob `reference`.
    pub(crate) fn new(column: &'r str, reference: &'r BlobRef, form: LargeForm) -> BlobValue<'r> {
        // The reference's length is the row's word, checked at the end: it only sizes buffers, within a bound.
        let stored = usize::try_from(reference.length).unwrap_or(usize::MAX);
        let encoding = reference.encoding.as_deref().unwrap_or("binary");
        let out = StoredSink::new(encoding, form, stored, MAX_INFLATED_VALUE_BYTES);
        BlobValue {
            column,
            reference,
            form,
            hasher: Sha256::new(),
            len: 0,
            out,
        }
    }

    /// The value, once the whole blob has been written in: its length and
    /// hash checked against the reference first, then its encoding.
    pub(crate) fn finish(self) -> Result<Value> {
        let actual = hex(&self.hasher.finalize());
        if self.len != self.reference.length || actual != self.reference.sha256 {
            return Err(Error::Integrity {
                column: self.column.to_owned(),
                reason: format!(
                    "the blob {} does not match its reference (length or SHA-256)",
                    self.reference.path
                ),
            });
        }
        let encoding = self.reference.encoding.as_deref().unwrap_or("binary");
        self.out.finish(self.column, self.len as usize, encoding, self.form)
    }
}

impl BlobSink for BlobValue<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.hasher.update(bytes);
        self.len += bytes.len() as u64;
        // Past the stated length the blob is wrong already: hashed and counted, not kept.
        if self.len > self.reference.length {
            return;
        }
        self.out.extend(bytes);
    }
}
