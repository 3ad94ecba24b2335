//! A large value's bytes gathered as they arrive. Text is checked as UTF-8
//! piece by piece, while each piece is still in the cache, and grows a
//! `String` directly: the whole value needs no check of its own at the end,
//! which would be the last thing a read waits for.
//!
//! Bytes that are not UTF-8 are kept as bytes, and the value's conversion
//! reports them as before: a damaged value is found no matter where its
//! damage lies, and nothing here decides what its error says.

use crate::value::wire::utf8;

/// What was gathered: text, checked, or bytes.
#[derive(Debug)]
pub(crate) enum Gathered {
    /// Bytes that are UTF-8 text.
    Text(String),
    /// Bytes not checked, or not UTF-8.
    Bytes(Vec<u8>),
}

impl Gathered {
    /// The bytes, whatever they hold.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        match self {
            Gathered::Text(text) => text.into_bytes(),
            Gathered::Bytes(bytes) => bytes,
        }
    }
}

/// Bytes being gathered (see the module docs).
#[derive(Debug)]
pub(crate) enum Gather {
    /// UTF-8 so far; `cut` holds the first bytes of a character whose rest
    /// is still to come (at most three).
    Text { text: String, cut: Vec<u8> },
    /// Bytes kept as they come.
    Bytes(Vec<u8>),
}

/// The length of the UTF-8 sequence that `lead` starts (1 for a byte that
/// starts none: the check then fails on it).
fn sequence_len(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// Where `bytes` splits into whole characters and the start of one whose
/// rest is still to come: the length of the whole part.
fn whole_len(bytes: &[u8]) -> usize {
    let from = bytes.len().saturating_sub(3);
    for at in (from..bytes.len()).rev() {
        let b = bytes[at];
        if b & 0xC0 != 0x80 {
            return if at + sequence_len(b) > bytes.len() {
                at
            } else {
                bytes.len()
            };
        }
    }
    bytes.len()
}

impl Gather {
    /// Gathers text (checked as it comes) when `text`, else bytes; room
    /// for `capacity` bytes is taken at once.
    pub(crate) fn new(text: bool, capacity: usize) -> Gather {
        match text {
            true => Gather::Text {
                text: String::with_capacity(capacity),
                cut: Vec::with_capacity(4),
            },
            false => Gather::Bytes(Vec::with_capacity(capacity)),
        }
    }

    /// Bytes gathered so far.
    pub(crate) fn len(&self) -> usize {
        match self {
            Gather::Text { text, cut } => text.len() + cut.len(),
            Gather::Bytes(bytes) => bytes.len(),
        }
    }

    /// Keeps the bytes gathered so far as bytes, then `rest`.
    fn give_up_on_text(&mut self, rest: &[u8]) {
        if let Gather::Text { text, cut } = self {
            let mut bytes = std::mem::take(text).into_bytes();
            bytes.extend_from_slice(cut);
            bytes.extend_from_slice(rest);
            *self = Gather::Bytes(bytes);
        }
    }

    /// Gathers the next bytes, which are text already.
    pub(crate) fn push_str(&mut self, piece: &str) {
        match self {
            Gather::Text { text, cut } if cut.is_empty() => text.push_str(piece),
            _ => self.extend(piece.as_bytes()),
        }
    }

    /// Gathers the next bytes.
    pub(crate) fn extend(&mut self, mut bytes: &[u8]) {
        let (text, cut) = match self {
            Gather::Bytes(out) => return out.extend_from_slice(bytes),
            Gather::Text { text, cut } => (text, cut),
        };
        if let Some(&lead) = cut.first() {
            let take = (sequence_len(lead) - cut.len()).min(bytes.len());
            cut.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if cut.len() < sequence_len(lead) {
                return;
            }
            match utf8(cut) {
                Ok(c) => text.push_str(c),
                Err(_) => return self.give_up_on_text(bytes),
            }
            cut.clear();
        }
        let (whole, rest) = bytes.split_at(whole_len(bytes));
        match utf8(whole) {
            Ok(whole) => {
                text.push_str(whole);
                cut.extend_from_slice(rest);
            }
            Err(_) => self.give_up_on_text(bytes),
        }
    }

    /// What was gathered: text when every byte was UTF-8 and no character
    /// is left cut at the end.
    pub(crate) fn finish(self) -> Gathered {
        match self {
            Gather::Text { text, cut } if cut.is_empty() => Gathered::Text(text),
            Gather::Text { text, cut } => {
                let mut bytes = text.into_bytes();
                bytes.extend_from_slice(&cut);
                Gathered::Bytes(bytes)
            }
            Gather::Bytes(bytes) => Gathered::Bytes(bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gathers `bytes` as text, fed in pieces of `step` bytes.
    fn gathered(bytes: &[u8], step: usize) -> Gathered {
        let mut gather = Gather::new(true, 0);
        for piece in bytes.chunks(step.max(1)) {
            gather.extend(piece);
        }
        assert_eq!(gather.len(), bytes.len());
        gather.finish()
    }

    #[test]
    fn text_cut_anywhere_is_gathered_whole() {
        let text = "naïve 日本語 text with 🎉 emoji, ß and ascii ".repeat(40);
        for step in [1, 2, 3, 4, 5, 7, 64, 1000, text.len()] {
            match gathered(text.as_bytes(), step) {
                Gathered::Text(got) => assert_eq!(got, text, "step {step}"),
                Gathered::Bytes(_) => panic!("step {step}: valid text was not gathered as text"),
            }
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_are_kept_as_they_came() {
        let mut cases: Vec<Vec<u8>> = vec![
            b"abc\xFFdef".to_vec(),
            b"abc\xE6\x97".to_vec(),      // a character cut at the end
            b"abc\xE6\x97xdef".to_vec(),  // a character broken in the middle
            b"\x80abc".to_vec(),          // a lone continuation byte
            b"ab\xF0\x9F\x8E".to_vec(),   // four-byte character, three bytes
            b"ab\xED\xA0\x80cd".to_vec(), // a surrogate, which UTF-8 forbids
            b"ab\xC0\xAFcd".to_vec(),     // an overlong form
        ];
        let mut long = "é".repeat(500).into_bytes();
        long.push(0xC3);
        cases.push(long);
        for bytes in cases {
            for step in [1, 2, 3, 5, bytes.len()] {
                match gathered(&bytes, step) {
                    Gathered::Bytes(got) => assert_eq!(got, bytes, "step {step}"),
                    Gathered::Text(t) => panic!("{bytes:?} at step {step} gathered as text {t:?}"),
                }
            }
        }
    }

    #[test]
    fn text_pieces_join_what_came_before() {
        let mut gather = Gather::new(true, 0);
        gather.push_str("日本");
        gather.extend(&"語".as_bytes()[..1]);
        gather.push_str("x");
        assert!(
            matches!(gather.finish(), Gathered::Bytes(_)),
            "a cut character never completes"
        );
        let mut gather = Gather::new(true, 0);
        gather.extend("日".as_bytes());
        gather.push_str("本");
        assert!(matches!(gather.finish(), Gathered::Text(t) if t == "日本"));
    }

    #[test]
    fn bytes_are_kept_without_a_check() {
        let mut gather = Gather::new(false, 8);
        gather.extend(b"ab\xFF");
        gather.extend(b"cd");
        assert!(matches!(gather.finish(), Gathered::Bytes(b) if b == b"ab\xFFcd"));
    }
}
