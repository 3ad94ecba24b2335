//! Outcomes reduced to what is compared, and the messages of a difference.

use unified_tables::Error;

use super::ops::Op;

/// An outcome reduced to what the README promises about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `Error::NotFound`.
    NotFound,
    /// `Error::AlreadyExists`.
    AlreadyExists,
    /// `Error::Conflict`.
    Conflict,
    /// `Error::MissingETag`.
    MissingETag,
    /// `Error::InvalidKey`.
    InvalidKey,
    /// `Error::BatchFailed` with the entities committed, the failing row key and the cause.
    BatchFailed(usize, String, Box<Kind>),
    /// `Error::Service` with its HTTP status.
    Service(u16),
    /// Any other error, as displayed.
    Other(String),
}

/// The kind of an error.
pub fn kind(e: &Error) -> Kind {
    match e {
        Error::NotFound { .. } => Kind::NotFound,
        Error::AlreadyExists { .. } => Kind::AlreadyExists,
        Error::Conflict { .. } => Kind::Conflict,
        Error::MissingETag { .. } => Kind::MissingETag,
        Error::InvalidKey { .. } => Kind::InvalidKey,
        Error::BatchFailed {
            committed,
            row_key,
            source,
            ..
        } => Kind::BatchFailed(*committed, row_key.clone(), Box::new(kind(source))),
        Error::Service { status, .. } => Kind::Service(*status),
        other => Kind::Other(other.to_string()),
    }
}

/// An operation's `Debug` text, shortened.
pub fn short(op: &Op) -> String {
    let text = format!("{op:?}");
    if text.len() > 300 {
        format!("{}…", &text[..text.floor_char_boundary_compat(300)])
    } else {
        text
    }
}

/// The nearest character boundary at or before a byte index.
pub trait FloorCharBoundary {
    /// The largest character boundary not after `at`.
    fn floor_char_boundary_compat(&self, at: usize) -> usize;
}

impl FloorCharBoundary for str {
    fn floor_char_boundary_compat(&self, at: usize) -> usize {
        (0..=at.min(self.len()))
            .rev()
            .find(|&i| self.is_char_boundary(i))
            .unwrap_or(0)
    }
}

/// Where two `Debug` texts first differ, with some context.
pub fn difference(got: &str, want: &str) -> String {
    let at = got
        .bytes()
        .zip(want.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let window = |s: &str| {
        let from = s.floor_char_boundary_compat(at.saturating_sub(120));
        let to = s.floor_char_boundary_compat(at + 120);
        s[from..to].to_owned()
    };
    format!(
        "lengths {} / {}, first difference at {at}:\n  got:  …{}…\n  want: …{}…",
        got.len(),
        want.len(),
        window(got),
        window(want)
    )
}

/// Checks that an outcome is the error `want`.
pub fn expect_kind<V: std::fmt::Debug>(got: &Result<V, Error>, want: Kind) -> Result<(), String> {
    match got {
        Err(e) if kind(e) == want => Ok(()),
        Err(e) => Err(format!("expected {want:?}, got the error {:?}: {e}", kind(e))),
        Ok(v) => Err(format!("expected {want:?}, got Ok({})", short_debug(v))),
    }
}

/// A `Debug` text, shortened.
pub fn short_debug(v: &impl std::fmt::Debug) -> String {
    let text = format!("{v:?}");
    if text.len() > 400 {
        format!(
            "{}… ({} chars)",
            &text[..text.floor_char_boundary_compat(400)],
            text.len()
        )
    } else {
        text
    }
}

/// The value of a success, or a message naming the unexpected error.
pub fn ok<V>(got: Result<V, Error>) -> Result<V, String> {
    got.map_err(|e| format!("expected success, got {:?}: {e}", kind(&e)))
}
