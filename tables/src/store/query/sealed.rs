//! Sealed cursors: a page cursor's content encrypted and authenticated
//! (XChaCha20-Poly1305, a random nonce per cursor) under a key the
//! application gives its handle, so the text a client holds shows nothing
//! of the query and cannot be altered or forged.

use std::fmt;

use base64::Engine as _;
use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{Tag, XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// What a sealed cursor's text starts with.
const PREFIX: &str = "s1.";
/// The bytes of a key's id, of the nonce and of the tag.
const ID: usize = 4;
const NONCE: usize = 24;
const TAG: usize = 16;
/// Bound into every seal, so that no other use of the key opens a cursor.
const CONTEXT: &[u8] = b"unified-tables sealed cursor v1";

/// The key a handle seals its page cursors with
/// ([`Tables::with_cursor_key`](crate::Tables::with_cursor_key)): 32 bytes
/// the application keeps secret and gives every process that must resume
/// the same cursors (from a secret store or configuration; never from the
/// client).
///
/// A sealed cursor is encrypted and authenticated (XChaCha20-Poly1305 with
/// a random nonce per cursor): its text shows nothing of the query (no
/// partition key, filter text or key where the next page starts), only its
/// length and a 4-byte id of the key (a hash of it, which says which key
/// sealed it and nothing of the key). A sealed cursor altered, forged, or
/// sealed under another key is refused with [`Error::InvalidCursor`].
///
/// The key never shows in `Debug` output (`CursorKey(..)`), has no
/// `Display` and cannot be serialized, so a handle or its options can be
/// logged.
///
/// ```
/// use unified_tables::CursorKey;
/// let key = CursorKey::from_bytes([7; 32]);
/// assert_eq!(format!("{key:?}"), "CursorKey(..)");
/// ```
#[derive(Clone)]
pub struct CursorKey {
    cipher: XChaCha20Poly1305,
    id: [u8; ID],
}

impl fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

impl CursorKey {
    /// The key of these 32 bytes. Give every handle that must resume a
    /// cursor the same bytes; any 32 bytes will do, random ones best.
    pub fn from_bytes(bytes: [u8; 32]) -> CursorKey {
        let mut digest = Sha256::new();
        digest.update(b"unified-tables cursor key id\n");
        digest.update(bytes);
        let mut id = [0u8; ID];
        id.copy_from_slice(&digest.finalize()[..ID]);
        CursorKey {
            cipher: XChaCha20Poly1305::new(&bytes.into()),
            id,
        }
    }

    /// The sealed text of a cursor's `payload`.
    pub(crate) fn seal(&self, payload: &str) -> String {
        let nonce: [u8; NONCE] = rand::random();
        let mut sealed = Vec::with_capacity(ID + NONCE + payload.len() + TAG);
        sealed.extend_from_slice(&self.id);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(payload.as_bytes());
        let tag = self
            .cipher
            .encrypt_in_place_detached(XNonce::from_slice(&nonce), CONTEXT, &mut sealed[ID + NONCE..])
            .expect("a cursor is far shorter than the cipher's limit");
        sealed.extend_from_slice(&tag);
        format!(
            "{PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sealed)
        )
    }

    /// The payload of a sealed cursor's `text`, once its seal is checked.
    pub(crate) fn open(&self, text: &str) -> Result<String> {
        let damaged = || {
            Error::InvalidCursor(
                "the sealed cursor is damaged or was altered; start the query again without one".into(),
            )
        };
        let encoded = text.strip_prefix(PREFIX).ok_or_else(|| {
            Error::InvalidCursor(
                "this handle seals its cursors (Tables::with_cursor_key) and this cursor is not sealed: \
                 start the query again without one to get a sealed cursor"
                    .into(),
            )
        })?;
        let mut bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(encoded)
            .map_err(|_| damaged())?;
        if bytes.len() < ID + NONCE + TAG {
            return Err(damaged());
        }
        if bytes[..ID] != self.id {
            return Err(Error::InvalidCursor(
                "the cursor was sealed under another cursor key: resume it on a handle with the key that \
                 sealed it, or start the query again without one"
                    .into(),
            ));
        }
        let tag_at = bytes.len() - TAG;
        let tag = Tag::clone_from_slice(&bytes[tag_at..]);
        let nonce = XNonce::clone_from_slice(&bytes[ID..ID + NONCE]);
        self.cipher
            .decrypt_in_place_detached(&nonce, CONTEXT, &mut bytes[ID + NONCE..tag_at], &tag)
            .map_err(|_| damaged())?;
        String::from_utf8(bytes[ID + NONCE..tag_at].to_vec()).map_err(|_| damaged())
    }
}

/// Whether a cursor's text is a sealed one.
pub(crate) fn is_sealed(text: &str) -> bool {
    text.starts_with(PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_opens_under_its_key_only_and_hides_the_payload() {
        let key = CursorKey::from_bytes([1; 32]);
        let payload = "5:query\n9:partition\n6:rowkey";
        let sealed = key.seal(payload);
        assert!(is_sealed(&sealed));
        assert_eq!(key.open(&sealed).unwrap(), payload);
        assert_ne!(key.seal(payload), sealed, "a fresh nonce per cursor");
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&sealed[PREFIX.len()..])
            .unwrap();
        assert!(!bytes.windows(6).any(|w| w == b"rowkey"));
        let other = CursorKey::from_bytes([2; 32]).open(&sealed).unwrap_err();
        assert!(other.to_string().contains("another cursor key"), "{other}");
        assert!(key.open("plain.abc").unwrap_err().to_string().contains("not sealed"));
    }

    proptest::proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any text after the prefix: refused, never a panic.
        #[test]
        fn any_text_is_refused_as_a_sealed_cursor(text in "\\PC{0,120}") {
            let key = CursorKey::from_bytes([3; 32]);
            let sealed = format!("{PREFIX}{text}");
            proptest::prop_assert!(key.open(&sealed).is_err());
        }
    }
}
