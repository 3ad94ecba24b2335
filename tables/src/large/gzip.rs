//! gzip for large values: packed in fixed pieces on the machine's cores,
//! unpacked as the stored bytes arrive.
//!
//! Packing splits the value into pieces of [`PIECE`] bytes, each deflated on
//! its own (primed with the 32 KiB before it, so matches reach across the
//! seam) and ended with a sync flush, as `pigz` does: the pieces join into
//! one ordinary gzip member that any reader unpacks. The bytes depend on the
//! value alone, never on how many cores packed them, so a value stored
//! twice gets the same blob name.
//!
//! Unpacking inflates straight into the value's buffer (no bounce buffer),
//! checks the trailer's CRC-32 and length, and stops at a bound.

use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crc32fast::Hasher as Crc;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::gather::{Gather, Gathered};

/// Bytes of the value deflated as one piece.
const PIECE: usize = 1 << 20;
/// The deflate window: the bytes before a piece that prime its compressor.
const WINDOW: usize = 32 * 1024;
/// The gzip header: deflate, no flags, no time, fastest (XFL 4), unknown OS.
const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255];
/// The most threads that pack one value.
const MAX_WORKERS: usize = 4;

/// The longest gzip header read (its name and comment have no bound of their own).
const MAX_HEADER: usize = 1 << 20;

const FHCRC: u8 = 0x02;
const FEXTRA: u8 = 0x04;
const FNAME: u8 = 0x08;
const FCOMMENT: u8 = 0x10;
const FRESERVED: u8 = 0xE0;

/// The threads one value is packed (or copied) on: the machine's cores, at most [`MAX_WORKERS`].
pub(crate) fn workers() -> usize {
    static WORKERS: OnceLock<usize> = OnceLock::new();
    *WORKERS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, NonZeroUsize::get)
            .min(MAX_WORKERS)
    })
}

/// One piece deflated: its bytes and the CRC-32 of its input.
type Packed = (Vec<u8>, Crc);

/// Deflates piece `index` of `raw` (level 1), primed with the window before it.
fn pack_piece(raw: &[u8], index: usize) -> Packed {
    let start = index * PIECE;
    let end = start.saturating_add(PIECE).min(raw.len());
    let piece = &raw[start.min(end)..end];
    let last = end == raw.len();
    let mut deflate = Compress::new(Compression::fast(), false);
    if start > 0 {
        // Cannot fail on a fresh raw stream.
        let _ = deflate.set_dictionary(&raw[start.saturating_sub(WINDOW)..start]);
    }
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::Sync
    };
    let mut out = Vec::with_capacity(piece.len() / 2 + 64);
    let mut consumed = 0;
    loop {
        if out.len() == out.capacity() {
            out.reserve(piece.len() / 4 + 64);
        }
        let (before_in, before_out) = (deflate.total_in(), out.len());
        let status = deflate.compress_vec(&piece[consumed..], &mut out, flush);
        consumed += (deflate.total_in() - before_in) as usize;
        let progressed = deflate.total_in() > before_in || out.len() > before_out;
        match status {
            Ok(Status::StreamEnd) => break,
            // A sync flush is complete once the input is in and output space is left over.
            Ok(_) if !last && consumed == piece.len() && out.len() < out.capacity() => break,
            Ok(_) if progressed || out.len() == out.capacity() => {}
            // No progress with room to spare: the stream cannot go on (never seen).
            _ => break,
        }
    }
    let mut crc = Crc::new();
    crc.update(piece);
    (out, crc)
}

/// Writes `raw` as one gzip member into `out`, the pieces packed on up to
/// `workers` threads and written in order as they are ready.
fn pack_with(raw: &[u8], workers: usize, out: &mut impl Write) -> io::Result<()> {
    let pieces = raw.len().div_ceil(PIECE).max(1);
    let workers = workers.clamp(1, pieces);
    out.write_all(&HEADER)?;
    let mut crc = Crc::new();
    let mut emit = |(bytes, piece): Packed, out: &mut dyn Write| -> io::Result<()> {
        crc.combine(&piece);
        out.write_all(&bytes)
    };
    if workers == 1 {
        for index in 0..pieces {
            emit(pack_piece(raw, index), out)?;
        }
    } else {
        let next = AtomicUsize::new(0);
        let slots: Vec<Mutex<Option<Packed>>> = (0..pieces).map(|_| Mutex::new(None)).collect();
        let take = |at: usize| slots[at].lock().unwrap_or_else(|e| e.into_inner()).take();
        let work = || loop {
            let index = next.fetch_add(1, Ordering::Relaxed);
            if index >= pieces {
                break;
            }
            let packed = pack_piece(raw, index);
            *slots[index].lock().unwrap_or_else(|e| e.into_inner()) = Some(packed);
        };
        let mut written = 0;
        let mut failed = None;
        std::thread::scope(|scope| {
            for _ in 1..workers {
                // A thread that cannot start leaves its pieces to the others.
                let _ = std::thread::Builder::new().spawn_scoped(scope, work);
            }
            // This thread packs too, and writes the pieces that are ready in order between its own.
            loop {
                while written < pieces && failed.is_none() {
                    match take(written) {
                        Some(packed) => {
                            if let Err(e) = emit(packed, out) {
                                failed = Some(e);
                            }
                            written += 1;
                        }
                        None => break,
                    }
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= pieces {
                    break;
                }
                let packed = pack_piece(raw, index);
                *slots[index].lock().unwrap_or_else(|e| e.into_inner()) = Some(packed);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        for at in written..pieces {
            let packed = take(at).unwrap_or_else(|| pack_piece(raw, at));
            emit(packed, out)?;
        }
    }
    out.write_all(&crc.clone().finalize().to_le_bytes())?;
    out.write_all(&(raw.len() as u32).to_le_bytes())
}

/// Writes `raw` as one gzip member into `out` (see the module docs).
pub(crate) fn pack(raw: &[u8], out: &mut impl Write) -> io::Result<()> {
    pack_with(raw, workers(), out)
}

/// Why gzip data did not unpack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GunzipFailure {
    /// Not gzip, or damaged; the reason.
    Damaged(String),
    /// It unpacks to more than the bound.
    TooLarge,
}

enum Part {
    /// Header bytes so far.
    Header(Vec<u8>),
    Body,
    /// Trailer bytes so far.
    Trailer(Vec<u8>),
    Done,
    Failed(GunzipFailure),
}

/// A gzip member unpacked as its bytes are fed, into a buffer bounded by `limit`.
pub(crate) struct Gunzip {
    part: Part,
    inflate: Decompress,
    /// The unpacked bytes; for text, the last step's, moved onto `text` after it.
    out: Vec<u8>,
    /// The text unpacked so far, checked as UTF-8 while each step was in the cache.
    text: Option<Gather>,
    crc: Crc,
    limit: usize,
}

/// Bytes of text unpacked in one step, before they move onto the value.
const TEXT_STEP: usize = 256 * 1024;

/// The length of a complete gzip header at the start of `bytes`, `None`
/// while more bytes are needed.
fn header_len(bytes: &[u8]) -> Result<Option<usize>, String> {
    if bytes.len() < 10 {
        return match bytes.iter().zip([0x1f, 0x8b, 8]).all(|(a, b)| *a == b) {
            true => Ok(None),
            false => Err("not gzip data (the magic bytes and method are wrong)".into()),
        };
    }
    if bytes[..3] != [0x1f, 0x8b, 8] {
        return Err("not gzip data (the magic bytes and method are wrong)".into());
    }
    let flags = bytes[3];
    if flags & FRESERVED != 0 {
        return Err(format!("the header has reserved flags set ({flags:#04x})"));
    }
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let Some(len) = bytes.get(at..at + 2) else {
            return Ok(None);
        };
        at += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            match bytes.get(at..).and_then(|rest| rest.iter().position(|b| *b == 0)) {
                Some(zero) => at += zero + 1,
                None => return Ok(None),
            }
        }
    }
    if flags & FHCRC != 0 {
        let Some(stored) = bytes.get(at..at + 2) else {
            return Ok(None);
        };
        let mut crc = Crc::new();
        crc.update(&bytes[..at]);
        if u16::from_le_bytes([stored[0], stored[1]]) != crc.clone().finalize() as u16 {
            return Err("the header checksum does not match".into());
        }
        at += 2;
    }
    Ok((at <= bytes.len()).then_some(at))
}

impl Gunzip {
    /// A decoder whose output may reach `limit` bytes; `capacity` sizes the
    /// first allocation (a guess, never past the limit). The output of a
    /// decoder of `text` is checked as UTF-8 as it grows (see [`Gather`]).
    pub(crate) fn new(limit: usize, capacity: usize, text: bool) -> Gunzip {
        let capacity = capacity.min(limit.saturating_add(1));
        let (out, text) = match text {
            true => (Vec::with_capacity(TEXT_STEP), Some(Gather::new(true, capacity))),
            false => (Vec::with_capacity(capacity), None),
        };
        Gunzip {
            part: Part::Header(Vec::new()),
            inflate: Decompress::new(false),
            out,
            text,
            crc: Crc::new(),
            limit,
        }
    }

    /// Bytes unpacked so far.
    fn unpacked(&self) -> usize {
        self.out.len() + self.text.as_ref().map_or(0, Gather::len)
    }

    fn fail(&mut self, failure: GunzipFailure) {
        self.part = Part::Failed(failure);
    }

    /// Unpacks the next stored bytes. Bytes after the end of the member are
    /// ignored, as readers of gzip do.
    pub(crate) fn feed(&mut self, bytes: &[u8]) {
        let body: Vec<u8>;
        let mut input = bytes;
        if let Part::Header(seen) = &mut self.part {
            seen.extend_from_slice(input);
            match header_len(seen) {
                Ok(None) if seen.len() > MAX_HEADER => {
                    return self.fail(GunzipFailure::Damaged(format!(
                        "the gzip header runs past {MAX_HEADER} bytes"
                    )))
                }
                Ok(None) => return,
                Ok(Some(len)) => {
                    body = seen.split_off(len);
                    input = &body;
                    self.part = Part::Body;
                }
                Err(reason) => return self.fail(GunzipFailure::Damaged(reason)),
            }
        }
        if let Part::Body = self.part {
            input = self.inflate_some(input);
        }
        if let Part::Trailer(seen) = &mut self.part {
            let wanted = 8 - seen.len();
            seen.extend_from_slice(&input[..wanted.min(input.len())]);
            if seen.len() == 8 {
                let crc = u32::from_le_bytes([seen[0], seen[1], seen[2], seen[3]]);
                let size = u32::from_le_bytes([seen[4], seen[5], seen[6], seen[7]]);
                self.part = if crc != self.crc.clone().finalize() {
                    Part::Failed(GunzipFailure::Damaged(format!(
                        "the CRC-32 of the unpacked bytes is {:08x}, the trailer says {crc:08x}",
                        self.crc.clone().finalize()
                    )))
                } else if size != self.unpacked() as u32 {
                    Part::Failed(GunzipFailure::Damaged(format!(
                        "{} bytes unpacked, the trailer says {size} (mod 2^32)",
                        self.unpacked()
                    )))
                } else {
                    Part::Done
                };
            }
        }
    }

    /// Inflates `input` until it is used up or the deflate stream ends;
    /// returns what follows the stream's end.
    fn inflate_some<'a>(&mut self, mut input: &'a [u8]) -> &'a [u8] {
        while !input.is_empty() {
            if self.out.len() == self.out.capacity() {
                let room = self.limit.saturating_add(1) - self.unpacked();
                if room == 0 {
                    self.fail(GunzipFailure::TooLarge);
                    return &[];
                }
                self.out.reserve_exact(self.out.capacity().max(1 << 16).min(room));
            }
            let (before_in, before_out) = (self.inflate.total_in(), self.out.len());
            let status = self.inflate.decompress_vec(input, &mut self.out, FlushDecompress::None);
            let consumed = (self.inflate.total_in() - before_in) as usize;
            input = &input[consumed..];
            self.crc.update(&self.out[before_out..]);
            let (grew, full) = (self.out.len() > before_out, self.out.len() == self.out.capacity());
            if let Some(text) = &mut self.text {
                text.extend(&self.out);
                self.out.clear();
            }
            if self.unpacked() > self.limit {
                self.fail(GunzipFailure::TooLarge);
                return &[];
            }
            match status {
                Ok(Status::StreamEnd) => {
                    self.part = Part::Trailer(Vec::with_capacity(8));
                    return input;
                }
                Ok(_) if consumed > 0 || grew || full => {}
                Ok(_) => {
                    self.fail(GunzipFailure::Damaged(
                        "the deflate stream stopped making progress".into(),
                    ));
                    return &[];
                }
                Err(e) => {
                    self.fail(GunzipFailure::Damaged(e.to_string()));
                    return &[];
                }
            }
        }
        input
    }

    /// The unpacked bytes (text, for a decoder of text whose bytes are
    /// UTF-8), or why there are none.
    pub(crate) fn finish(self) -> Result<Gathered, GunzipFailure> {
        match self.part {
            Part::Done => Ok(match self.text {
                Some(text) => text.finish(),
                None => Gathered::Bytes(self.out),
            }),
            Part::Failed(failure) => Err(failure),
            Part::Header(_) => Err(GunzipFailure::Damaged("the data ends inside the gzip header".into())),
            Part::Body => Err(GunzipFailure::Damaged("the deflate stream ends early".into())),
            Part::Trailer(_) => Err(GunzipFailure::Damaged("the data ends inside the gzip trailer".into())),
        }
    }
}

/// Unpacks one gzip member of at most `limit` bytes.
pub(crate) fn unpack(stored: &[u8], limit: usize) -> Result<Vec<u8>, GunzipFailure> {
    let mut gunzip = Gunzip::new(limit, capacity_guess(stored.len()), false);
    gunzip.feed(stored);
    gunzip.finish().map(Gathered::into_bytes)
}

/// A first allocation for the unpacked bytes of `stored` packed bytes: text
/// packs several times over; never more than 64 MiB before the bytes show it.
pub(crate) fn capacity_guess(stored: usize) -> usize {
    stored.saturating_mul(8).clamp(1 << 16, 64 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Letters and digits that pack to roughly a third.
    fn text(n: usize) -> Vec<u8> {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        (0..n)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if i % 40 < 20 {
                    b"abcdefgh"[(state % 8) as usize]
                } else {
                    b'0' + (state % 10) as u8
                }
            })
            .collect()
    }

    fn packed(raw: &[u8], workers: usize) -> Vec<u8> {
        let mut out = Vec::new();
        pack_with(raw, workers, &mut out).unwrap();
        out
    }

    #[test]
    fn packed_pieces_are_one_gzip_member_whatever_the_cores() {
        for n in [0, 1, 100, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 12_345] {
            let raw = text(n);
            let one = packed(&raw, 1);
            for workers in [2, 3, 8] {
                assert_eq!(packed(&raw, workers), one, "{n} bytes on {workers} threads");
            }
            // An independent reader takes it as one member.
            let mut back = Vec::new();
            flate2::read::GzDecoder::new(&one[..]).read_to_end(&mut back).unwrap();
            assert_eq!(back, raw, "{n} bytes");
            assert_eq!(unpack(&one, usize::MAX).unwrap(), raw, "{n} bytes");
        }
    }

    #[test]
    fn the_window_primes_each_piece() {
        // The same piece repeated: primed, every later piece is matches into the one before.
        let piece = text(PIECE);
        let raw: Vec<u8> = piece.iter().chain(&piece).chain(&piece).copied().collect();
        let mut alone = Vec::new();
        pack_with(&piece, 1, &mut alone).unwrap();
        let three = packed(&raw, 2);
        assert!(three.len() < alone.len() * 3, "{} vs {}", three.len(), alone.len());
    }

    #[test]
    fn streamed_in_any_pieces_unpacks_the_same() {
        let raw = text(2 * PIECE + 777);
        let gz = packed(&raw, 2);
        for text_mode in [false, true] {
            for step in [1, 7, 10, 11, 4096, 64_000, gz.len()] {
                let mut gunzip = Gunzip::new(usize::MAX, 0, text_mode);
                for piece in gz.chunks(step.max(1)).take(if step == 1 { 400 } else { usize::MAX }) {
                    gunzip.feed(piece);
                }
                if step == 1 {
                    gunzip.feed(&gz[400..]);
                }
                match gunzip.finish().unwrap() {
                    Gathered::Text(got) if text_mode => assert_eq!(got.as_bytes(), raw, "step {step}"),
                    Gathered::Bytes(got) if !text_mode => assert_eq!(got, raw, "step {step}"),
                    other => panic!("step {step}, text {text_mode}: gathered as {other:?}"),
                }
            }
        }
    }

    #[test]
    fn text_unpacks_as_text_only_when_it_is_utf8() {
        let words = "Grüße, 日本語 and 🎉 ".repeat(40_000);
        let mut broken = words.clone().into_bytes();
        broken[TEXT_STEP + 5] = 0xFF;
        for (raw, is_text) in [(words.into_bytes(), true), (broken, false)] {
            let gz = packed(&raw, 2);
            let mut gunzip = Gunzip::new(usize::MAX, 0, true);
            gz.chunks(64_000).for_each(|piece| gunzip.feed(piece));
            match gunzip.finish().unwrap() {
                Gathered::Text(got) => assert!(is_text && got.as_bytes() == raw),
                Gathered::Bytes(got) => assert!(!is_text && got == raw),
            }
        }
    }

    #[test]
    fn text_past_the_bound_is_refused() {
        let raw = text(3 * TEXT_STEP);
        let gz = packed(&raw, 1);
        let mut gunzip = Gunzip::new(TEXT_STEP, 0, true);
        gunzip.feed(&gz);
        assert_eq!(gunzip.finish().unwrap_err(), GunzipFailure::TooLarge);
    }

    #[test]
    fn headers_of_other_writers_are_read() {
        let raw = text(50_000);
        let mut with_all = flate2::GzBuilder::new()
            .filename("notes.txt")
            .comment("a comment")
            .extra(vec![1, 2, 3, 4])
            .mtime(1_700_000_000)
            .write(Vec::new(), Compression::default());
        with_all.write_all(&raw).unwrap();
        let mut gz = with_all.finish().unwrap();
        assert_eq!(unpack(&gz, usize::MAX).unwrap(), raw);
        // A header checksum (FHCRC): checked.
        gz[3] |= FHCRC;
        assert!(
            header_len(&gz).is_err(),
            "a header claiming a checksum it lacks is refused"
        );
        let ours = packed(&raw, 1);
        let mut header = HEADER.to_vec();
        header[3] = FHCRC;
        let mut crc = Crc::new();
        crc.update(&header);
        let mut checked = header.clone();
        checked.extend_from_slice(&(crc.clone().finalize() as u16).to_le_bytes());
        checked.extend_from_slice(&ours[HEADER.len()..]);
        assert_eq!(unpack(&checked, usize::MAX).unwrap(), raw);
    }

    #[test]
    fn damage_is_a_typed_failure() {
        let raw = text(300_000);
        let gz = packed(&raw, 1);
        let damaged = |reason: &str, bytes: Vec<u8>| {
            let got = unpack(&bytes, usize::MAX);
            assert!(matches!(got, Err(GunzipFailure::Damaged(_))), "{reason}: {got:?}");
            let mut text = Gunzip::new(usize::MAX, 0, true);
            text.feed(&bytes);
            let got = text.finish();
            assert!(
                matches!(got, Err(GunzipFailure::Damaged(_))),
                "{reason}, as text: {got:?}"
            );
        };
        let mut flipped = gz.clone();
        let at = flipped.len() / 2;
        flipped[at] ^= 0x5A;
        damaged("a changed byte", flipped);
        damaged("a cut trailer", gz[..gz.len() - 3].to_vec());
        damaged("a cut stream", gz[..gz.len() / 2].to_vec());
        damaged("a cut header", gz[..6].to_vec());
        damaged("not gzip", b"not gzip at all".to_vec());
        damaged("empty", Vec::new());
        let mut crc = gz.clone();
        let at = crc.len() - 8;
        crc[at] ^= 1;
        damaged("a wrong CRC", crc);
        let mut size = gz.clone();
        let at = size.len() - 4;
        size[at] ^= 1;
        damaged("a wrong length", size);
        let mut reserved = gz.clone();
        reserved[3] = 0x20;
        damaged("reserved flags", reserved);
        // A name that never ends is refused once the header passes its bound, fed in pieces.
        let mut endless = HEADER.to_vec();
        endless[3] = FNAME;
        endless.extend(std::iter::repeat_n(b'n', MAX_HEADER + 10));
        let mut gunzip = Gunzip::new(usize::MAX, 0, true);
        for piece in endless.chunks(64 * 1024) {
            gunzip.feed(piece);
        }
        assert!(matches!(gunzip.finish(), Err(GunzipFailure::Damaged(r)) if r.contains("header runs past")));
        // Bytes after the member are ignored.
        let mut trailing = gz.clone();
        trailing.extend_from_slice(b"trailing");
        assert_eq!(unpack(&trailing, usize::MAX).unwrap(), raw);
    }

    #[test]
    fn the_bound_stops_unpacking() {
        let zeros = vec![0u8; 3 * PIECE];
        let gz = packed(&zeros, 2);
        assert_eq!(unpack(&gz, 3 * PIECE).unwrap().len(), 3 * PIECE);
        assert_eq!(unpack(&gz, 3 * PIECE - 1), Err(GunzipFailure::TooLarge));
        assert_eq!(unpack(&gz, 10), Err(GunzipFailure::TooLarge));
    }
}
