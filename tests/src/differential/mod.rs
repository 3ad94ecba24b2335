//! Differential testing of `Store<T>`: random sequences of operations are
//! applied to a real store and to a reference model (a map from key to value
//! and version), and every outcome is compared: returned values, error kinds,
//! row counts and the round trips the README states.
//!
//! - [`Spec`] is a value as the model sees it; large values are described by
//!   a [`Fill`] (a length and a seed) and only materialized when an entity is
//!   built, so a failing sequence prints in a few lines.
//! - [`Subject`] is implemented by the two entity types under test: [`Plain`]
//!   (no large values, the one-request write path) and [`Large`] (split values
//!   in every encoding, a value that is never offloaded, a file).
//! - [`ops`] holds the operations and their generators, [`model`] the
//!   reference model, [`driver`] the code that runs a sequence on both.

pub mod driver;
pub mod indexed;
pub mod model;
pub mod ops;
pub mod outcome;

use rand::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use unified_tables::{BlobContent, ETag, QueryOptions, TableEntity, TableRecord};

use ops::{FilterSpec, PatchSpec};

/// The content type of every file the test writes.
pub const FILE_TYPE: &str = "application/x-diff";

/// A key of the small key space: a partition and a row key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct K(pub &'static str, pub &'static str);

/// The partitions of the key space.
pub const PARTITIONS: [&str; 2] = ["a", "b"];
/// The row keys of the key space (in key order).
pub const ROWS: [&str; 3] = ["r0", "r1", "r2"];

/// A deterministic value of a given size: `len` UTF-16 units of text (or
/// bytes, or lines), derived from `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fill {
    /// The size: UTF-16 units for text, bytes for binary, lines for lists.
    pub len: usize,
    /// The seed of the content.
    pub seed: u64,
    /// Whether the text holds a character outside the BMP (a surrogate pair)
    /// placed across the 32,000-unit chunk boundary when the text is that long.
    pub astral: bool,
    /// Whether the text mixes 1- to 4-byte characters ([`crate::mixed_text`])
    /// instead of printable ASCII.
    pub mixed: bool,
}

impl Fill {
    /// The empty value.
    pub const EMPTY: Fill = Fill {
        len: 0,
        seed: 0,
        astral: false,
        mixed: false,
    };

    /// Text of exactly `len` UTF-16 units.
    pub fn text(&self) -> String {
        let base = |units: usize, seed: u64| match self.mixed {
            true => mixed_units(units, seed),
            false => crate::noise(units, seed),
        };
        if !self.astral || self.len < 2 {
            return base(self.len, self.seed);
        }
        let at = (self.len - 2).min(31_999);
        let mut s = base(at, self.seed);
        s.push('\u{1F600}');
        s.push_str(&base(self.len - 2 - at, self.seed.wrapping_add(1)));
        s
    }

    /// `len` bytes of every value.
    pub fn bytes(&self) -> Vec<u8> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(self.seed);
        let mut out = vec![0; self.len];
        rng.fill_bytes(&mut out);
        out
    }

    /// `len` short lines.
    pub fn lines(&self) -> Vec<String> {
        (0..self.len).map(|i| format!("{}-{i:06}", self.seed % 1000)).collect()
    }
}

/// [`crate::mixed_text`] of exactly `units` UTF-16 units (padded with ASCII
/// where an astral character would pass the length).
fn mixed_units(units: usize, seed: u64) -> String {
    let mut out = String::with_capacity(units * 2);
    let mut n = 0;
    for c in crate::mixed_text(units, seed).chars() {
        if n + c.len_utf16() > units {
            break;
        }
        out.push(c);
        n += c.len_utf16();
    }
    out.extend(std::iter::repeat_n('a', units - n));
    out
}

/// A value as the reference model holds it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Spec {
    /// `name`.
    pub name: String,
    /// `n` (filtered on).
    pub n: i64,
    /// `flag` (the transition flag).
    pub flag: bool,
    /// `note`.
    pub note: Option<String>,
    /// `place.city`.
    pub city: String,
    /// `place.level`.
    pub level: Option<i64>,
    /// `tags` (a JSON cell).
    pub tags: Vec<String>,
    /// `meta.note` (a serde struct in a JSON cell).
    pub remark: String,
    /// `text` (split, UTF-8 text).
    pub text: Fill,
    /// `zipped` (split, gzip).
    pub zipped: Option<Fill>,
    /// `bytes` (split, binary).
    pub bytes: Fill,
    /// `lines` (split, gzip over JSON).
    pub lines: Fill,
    /// `local` (split text, never offloaded).
    pub local: Fill,
    /// `file` (a blob content).
    pub file: Option<Fill>,
}

impl Spec {
    /// Roughly how many bytes the large values take: below 500,000 an
    /// entity has no continuation rows.
    pub fn large_bytes(&self) -> usize {
        // Text at its escaped size in a request body: about 4 bytes a unit when mixed.
        let text = |f: Fill| f.len * if f.mixed { 4 } else { 3 };
        let zipped = self.zipped.map_or(0, |f| f.len * 2);
        text(self.text) + zipped + self.bytes.len * 2 + self.lines.len * 20 + text(self.local)
    }
}

/// A flattened record.
#[derive(TableRecord, Debug, Clone, PartialEq)]
pub struct Place {
    /// A city.
    pub city: String,
    /// An optional number.
    pub level: Option<i64>,
}

/// A serde struct stored as one JSON cell.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Meta {
    /// A note.
    pub note: String,
    /// Always `[1, 2]`.
    pub marks: Vec<u8>,
}

/// An entity without large values.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Plain {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub name: String,
    pub n: i64,
    pub flag: bool,
    pub note: Option<String>,
    #[table(flatten)]
    pub place: Place,
    pub tags: Vec<String>,
    #[table(json)]
    pub meta: Meta,
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// An entity with large values of every encoding and a file.
#[derive(TableEntity, Debug, Clone, PartialEq)]
pub struct Large {
    #[table(partition_key)]
    pub pk: String,
    #[table(row_key)]
    pub rk: String,
    pub name: String,
    pub n: i64,
    pub flag: bool,
    pub note: Option<String>,
    #[table(flatten)]
    pub place: Place,
    pub tags: Vec<String>,
    #[table(json)]
    pub meta: Meta,
    #[table(split = "text")]
    pub text: String,
    #[table(split = "gzip")]
    pub zipped: Option<String>,
    #[table(split = "binary")]
    pub bytes: Vec<u8>,
    #[table(split = "gzip")]
    pub lines: Vec<String>,
    #[table(split = "text", offload = "never")]
    pub local: String,
    #[blob_content]
    pub file: Option<BlobContent>,
    #[table(etag)]
    pub etag: Option<ETag>,
}

/// An entity type under test.
pub trait Subject:
    TableEntity + unified_tables::HasETag + Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static
{
    /// Whether the type has large values (the README's costs differ).
    const LARGE: bool;
    /// A short name for messages.
    const NAME: &'static str;
    /// The entity holding `spec` at `key`, without an ETag.
    fn build(key: K, spec: &Spec) -> Self;
    /// The part of `spec` this type stores (the rest at its default).
    fn stored(spec: Spec) -> Spec;
    /// The ETag field.
    fn etag_mut(&mut self) -> &mut Option<ETag>;
    /// Takes the file out (files are compared by their bytes).
    fn take_file(&mut self) -> Option<BlobContent>;
    /// The mutate intent: `n += delta` and a tag appended.
    fn bump(&mut self, delta: i64);
    /// The transition's precondition: the flag is not set.
    fn unflagged(&self) -> bool;
    /// The transition: set the flag and add one.
    fn flag_it(&mut self);
    /// The typed partial update.
    fn patch(p: &PatchSpec, etag: Option<ETag>) -> Self::Updater;
    /// Query options for a partition and an optional typed filter.
    fn options(pk: &str, filter: Option<FilterSpec>) -> QueryOptions<Self>;
}

macro_rules! common {
    ($ty:ident) => {
        fn etag_mut(&mut self) -> &mut Option<ETag> {
            &mut self.etag
        }
        fn bump(&mut self, delta: i64) {
            self.n += delta;
            self.tags.push(format!("m{delta}"));
        }
        fn unflagged(&self) -> bool {
            !self.flag
        }
        fn flag_it(&mut self) {
            self.flag = true;
            self.n += 1;
        }
        fn patch(p: &PatchSpec, etag: Option<ETag>) -> Self::Updater {
            let mut b = $ty::update();
            if let Some(v) = &p.name {
                b = b.name(v.clone());
            }
            if let Some(v) = p.n {
                b = b.n(v);
            }
            if let Some(v) = p.flag {
                b = b.flag(v);
            }
            if let Some(v) = &p.city {
                let v = v.clone();
                b = b.place(move |pl| pl.city(v));
            }
            if let Some(e) = etag {
                b = b.with_etag(e);
            }
            b
        }
        fn options(pk: &str, filter: Option<FilterSpec>) -> QueryOptions<Self> {
            let o = QueryOptions::partition(pk);
            match filter {
                None => o,
                Some(FilterSpec::NAtLeast(x)) => o.filter($ty::filter(|c| c.n.ge(x))),
                Some(FilterSpec::City(city)) => o.filter($ty::filter(|c| c.place.city.eq(city))),
                Some(FilterSpec::Flagged) => o.filter($ty::filter(|c| c.flag.is_true())),
                Some(FilterSpec::LevelIs(x)) => o.filter($ty::filter(|c| c.place.level.eq(x))),
                Some(FilterSpec::NBelowOrUnflagged(x)) => o.filter($ty::filter(|c| c.n.lt(x) | !c.flag.is_true())),
            }
        }
    };
}

fn meta(spec: &Spec) -> Meta {
    Meta {
        note: spec.remark.clone(),
        marks: vec![1, 2],
    }
}

fn place(spec: &Spec) -> Place {
    Place {
        city: spec.city.clone(),
        level: spec.level,
    }
}

impl Subject for Plain {
    const LARGE: bool = false;
    const NAME: &'static str = "plain";

    fn build(key: K, spec: &Spec) -> Plain {
        Plain {
            pk: key.0.into(),
            rk: key.1.into(),
            name: spec.name.clone(),
            n: spec.n,
            flag: spec.flag,
            note: spec.note.clone(),
            place: place(spec),
            tags: spec.tags.clone(),
            meta: meta(spec),
            etag: None,
        }
    }

    fn stored(spec: Spec) -> Spec {
        Spec {
            text: Fill::EMPTY,
            zipped: None,
            bytes: Fill::EMPTY,
            lines: Fill::EMPTY,
            local: Fill::EMPTY,
            file: None,
            ..spec
        }
    }

    fn take_file(&mut self) -> Option<BlobContent> {
        None
    }

    common!(Plain);
}

impl Subject for Large {
    const LARGE: bool = true;
    const NAME: &'static str = "large";

    fn build(key: K, spec: &Spec) -> Large {
        Large {
            pk: key.0.into(),
            rk: key.1.into(),
            name: spec.name.clone(),
            n: spec.n,
            flag: spec.flag,
            note: spec.note.clone(),
            place: place(spec),
            tags: spec.tags.clone(),
            meta: meta(spec),
            text: spec.text.text(),
            zipped: spec.zipped.map(|f| f.text()),
            bytes: spec.bytes.bytes(),
            lines: spec.lines.lines(),
            local: spec.local.text(),
            file: spec.file.map(|f| BlobContent::from_bytes(f.bytes(), FILE_TYPE)),
            etag: None,
        }
    }

    fn stored(spec: Spec) -> Spec {
        spec
    }

    fn take_file(&mut self) -> Option<BlobContent> {
        self.file.take()
    }

    common!(Large);
}
