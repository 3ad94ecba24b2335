//! Text of mixed UTF-8 widths, for values whose non-ASCII characters a
//! request body must carry intact: [`mixed_text`].

use rand::{Rng, SeedableRng};

/// Two-byte characters: Latin-1 and Cyrillic.
const TWO_BYTES: &[char] = &['ä', 'ö', 'ü', 'ß', 'é', 'ñ', 'Ж', 'я', 'Щ', 'ї', 'Ω', 'λ'];
/// Three-byte characters: €, CJK, and others of the Basic Multilingual Plane.
const THREE_BYTES: &[char] = &['€', '中', '文', '字', '日', '本', '語', '한', '글', '—', '…', '✓'];
/// Four-byte characters: emoji and other astral characters (a surrogate pair each in UTF-16).
const FOUR_BYTES: &[char] = &['😀', '🎉', '🚀', '👍', '🦀', '𝄞', '𠜎', '🌍'];

/// `len_chars` characters of printable text mixing every UTF-8 width, the
/// same for the same `seed`: about half ASCII (so runs of plain text
/// alternate with escapes), a fifth two-byte (`ä`, `Ж`), a fifth
/// three-byte (`€`, `中`) and a tenth four-byte (`😀`). Its UTF-8 length
/// is about twice `len_chars`; its UTF-16 length about 1.1 times.
///
/// ```
/// let text = unified_tables_tests::mixed_text(1_000, 7);
/// assert_eq!(text.chars().count(), 1_000);
/// assert!((1..=4).all(|w| text.chars().any(|c| c.len_utf8() == w)));
/// assert_eq!(text, unified_tables_tests::mixed_text(1_000, 7));
/// ```
pub fn mixed_text(len_chars: usize, seed: u64) -> String {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x6d69_7865_645f_7478);
    let mut out = String::with_capacity(len_chars * 2 + 4);
    for _ in 0..len_chars {
        let c = match rng.gen_range(0..10u8) {
            0..=4 => char::from(rng.gen_range(b' '..=b'~')),
            5 | 6 => TWO_BYTES[rng.gen_range(0..TWO_BYTES.len())],
            7 | 8 => THREE_BYTES[rng.gen_range(0..THREE_BYTES.len())],
            _ => FOUR_BYTES[rng.gen_range(0..FOUR_BYTES.len())],
        };
        out.push(c);
    }
    out
}

/// `len_chars` characters from one alphabet: `Ж` and the rest of Cyrillic
/// (two UTF-8 bytes, one UTF-16 unit, six bytes escaped in a request body).
pub fn cyrillic_text(len_chars: usize, seed: u64) -> String {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len_chars)
        .map(|_| char::from_u32(rng.gen_range(0x410..=0x44F)).unwrap_or('Ж'))
        .collect()
}

/// `len_chars` emoji (four UTF-8 bytes, two UTF-16 units, twelve bytes
/// escaped in a request body).
pub fn emoji_text(len_chars: usize, seed: u64) -> String {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..len_chars)
        .map(|_| char::from_u32(rng.gen_range(0x1F600..=0x1F64F)).unwrap_or('😀'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_text_mixes_every_width_and_is_printable() {
        let text = mixed_text(100_000, 1);
        assert_eq!(text.chars().count(), 100_000);
        let width = |w: usize| text.chars().filter(|c| c.len_utf8() == w).count();
        assert!(width(1) > 40_000 && width(2) > 15_000 && width(3) > 15_000 && width(4) > 7_000);
        assert!(!text.chars().any(char::is_control));
        assert_ne!(text, mixed_text(100_000, 2));
        assert!(cyrillic_text(10, 1).chars().all(|c| c.len_utf8() == 2));
        assert!(emoji_text(10, 1).chars().all(|c| c.len_utf8() == 4));
    }
}
