//! The process-kill chaos test's entity and its content: every field of a
//! [`ChaosDoc`] is derived from its key and version, so a read proves it
//! holds one complete version (never a mix of two), and the test knows
//! which versions each writer could have written.
//!
//! The writer is the `chaos_writer` binary of this crate; the test is
//! `tests/chaos.rs`. Each version is of one tier, chosen by the version:
//! small, split over cells of the main row, on continuation rows (text and
//! a gzip value), offloaded to a blob, or with a file and a binary value.
//! The document also carries indexes: a local one on its tier, a local
//! unique one on its tag and a global one on its shard, so a kill can fall
//! between any two requests of an indexed write. (A global unique index is
//! refused on a type with large values; the differential test kills its
//! writers between every two requests.)

use std::time::Duration;

use unified_tables::{BlobContent, BlobOptions, ETag, TableEntity};

/// Keys the writers write (row keys `k0` ..).
pub const KEYS: u64 = 3;
/// The partition of every key.
pub const PARTITION: &str = "chaos";
/// A value over this many stored bytes goes to a blob (lower than the
/// default, so a blob-backed version stays quick to write).
pub const THRESHOLD_BYTES: usize = 512 * 1024;
/// How long a released blob is kept before a replace or delete removes it.
pub const GRACE: Duration = Duration::from_secs(1);
/// Shards of the global index.
pub const SHARDS: i64 = 3;

/// A document of every large-value tier.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct ChaosDoc {
    /// Always [`PARTITION`].
    #[table(partition_key)]
    pub pk: String,
    /// `k{n}`.
    #[table(row_key)]
    pub rk: String,
    /// The version every other field is derived from.
    pub version: i64,
    /// The tier the version chose, by name; indexed in the partition.
    #[index]
    pub tier: String,
    /// `version % SHARDS`; indexed across partitions.
    #[index(global)]
    pub shard: i64,
    /// `{rk}-{version}`: unique in the partition.
    #[unique]
    pub tag: String,
    /// Text split over cells, rows or a blob.
    #[table(split = "text")]
    pub body: String,
    /// Text stored gzip-compressed.
    #[table(split = "gzip")]
    pub notes: Option<String>,
    /// Bytes split over binary cells.
    #[table(split = "binary")]
    pub data: Vec<u8>,
    /// A file.
    #[blob_content]
    pub attachment: Option<BlobContent>,
    /// The version read.
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// The tiers a version can have.
pub const TIERS: [&str; 5] = ["small", "cells", "rows+gzip", "blob", "file+binary"];

/// `len` printable characters, the same for the same seed (SplitMix64).
fn text(len: usize, seed: u64) -> String {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            char::from(b'!' + ((z ^ (z >> 31)) % 94) as u8)
        })
        .collect()
}

fn seed(rk: &str, version: i64) -> u64 {
    (version as u64).wrapping_mul(1_000_003) ^ (rk.bytes().map(u64::from).sum::<u64>() << 40)
}

fn file_bytes(seed: u64) -> Vec<u8> {
    text(200_000, seed ^ 3).into_bytes()
}

/// The row key of key `n`.
pub fn row_key(n: u64) -> String {
    format!("k{n}")
}

impl ChaosDoc {
    /// Version `version` of key `rk`: every field a function of both.
    pub fn at(rk: &str, version: i64) -> ChaosDoc {
        let seed = seed(rk, version);
        let tier = TIERS[(version as u64 % TIERS.len() as u64) as usize];
        let mut doc = ChaosDoc {
            pk: PARTITION.into(),
            rk: rk.into(),
            version,
            tier: tier.into(),
            shard: version.rem_euclid(SHARDS),
            tag: format!("{rk}-{version}"),
            body: text(100, seed),
            notes: None,
            data: Vec::new(),
            attachment: None,
            etag: None,
        };
        match tier {
            "small" => {}
            // Four chunks of 32,000 characters on the main row.
            "cells" => doc.body = text(120_000, seed),
            // Over the 1 MiB of a row: text and a gzip value that barely
            // compresses go to continuation rows.
            "rows+gzip" => {
                doc.body = text(400_000, seed);
                doc.notes = Some(text(300_000, seed ^ 1));
            }
            "blob" => doc.body = text(THRESHOLD_BYTES + 100_000, seed),
            _ => {
                doc.data = text(150_000, seed ^ 2).into_bytes();
                doc.attachment = Some(BlobContent::from_bytes(file_bytes(seed), "text/plain"));
            }
        }
        doc
    }

    /// Checks that every field is the one its key and version give; the
    /// file is compared by hash and length (read it with `read_all` to
    /// compare its bytes).
    pub fn check(&self) -> Result<(), String> {
        let expected = ChaosDoc::at(&self.rk, self.version);
        let strip = |d: &ChaosDoc| ChaosDoc {
            etag: None,
            attachment: None,
            ..d.clone()
        };
        if strip(self) != strip(&expected) {
            return Err(format!("{} reads as a mix, not version {}", self.rk, self.version));
        }
        let file = |d: &ChaosDoc| d.attachment.as_ref().map(|a| (a.sha256().map(str::to_owned), a.len()));
        let want = expected.attachment.is_some().then(|| {
            let bytes = file_bytes(seed(&self.rk, self.version));
            (
                Some(crate::integrity_scan::sha256_hex(&bytes)),
                Some(bytes.len() as u64),
            )
        });
        if file(self) != want {
            return Err(format!("{}: the file is not version {}'s", self.rk, self.version));
        }
        Ok(())
    }
}

/// The blob options of the writers and the test: `container`, the lowered
/// threshold and the short grace.
pub fn blob_options(container: &str) -> BlobOptions {
    BlobOptions::new()
        .with_container(container)
        .expect("a valid container name")
        .with_threshold_bytes(THRESHOLD_BYTES)
        .expect("a threshold under 4 MiB")
        .with_cleanup_grace(GRACE)
}

/// One line the writer prints: a write of `version` (or a delete, `None`)
/// of key `rk` begins or is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The write is about to be sent.
    Begin(String, Option<i64>),
    /// The write reported success.
    Done(String, Option<i64>),
}

impl Step {
    /// The line for this step.
    pub fn line(&self) -> String {
        let (word, rk, v) = match self {
            Step::Begin(rk, v) => ("begin", rk, v),
            Step::Done(rk, v) => ("done", rk, v),
        };
        match v {
            Some(v) => format!("{word} {rk} {v}"),
            None => format!("{word} {rk} delete"),
        }
    }

    /// Parses a line; `None` for a line cut by the kill or of another shape.
    pub fn parse(line: &str) -> Option<Step> {
        let mut words = line.split(' ');
        let (word, rk, v) = (words.next()?, words.next()?, words.next()?);
        let v = match v {
            "delete" => None,
            n => Some(n.parse().ok()?),
        };
        match word {
            "begin" => Some(Step::Begin(rk.into(), v)),
            "done" => Some(Step::Done(rk.into(), v)),
            _ => None,
        }
    }
}
