//! How a request's URL is shown: in an error (the whole URL, redacted,
//! never a SAS's parameters) and on its span (a template without keys,
//! blob names or query values).

use std::fmt;

use crate::error::redact;

/// A request's URL as it is printed: without a SAS's parameters, redacted.
pub(super) struct Printed<'a> {
    pub(super) endpoint: &'a str,
    pub(super) path: &'a str,
    pub(super) query: &'a str,
}

impl fmt::Display for Printed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut url = format!("{}{}", self.endpoint, self.path);
        if !self.query.is_empty() {
            url.push('?');
            url.push_str(self.query);
        }
        f.write_str(&redact(&url))
    }
}

/// A request's URL as its span shows it (`url.template`): the endpoint and
/// the table or container, every key, blob name and query value left out
/// (`…`), so no telemetry field holds a key or a value of a row.
pub(super) struct Template<'a> {
    pub(super) endpoint: &'a str,
    pub(super) path: &'a str,
    pub(super) query: &'a [(&'static str, String)],
}

impl fmt::Display for Template<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(self.endpoint))?;
        let path = self.path.strip_prefix('/').unwrap_or(self.path);
        if !path.is_empty() || self.path.starts_with('/') {
            f.write_str("/")?;
        }
        let first = path.split('/').next().unwrap_or("");
        let (name, keyed) = match first.split_once('(') {
            Some((name, _)) => (name, true),
            None => (first, false),
        };
        f.write_str(name)?;
        if keyed {
            f.write_str("(…)")?;
        }
        if path.len() > first.len() {
            f.write_str("/…")?;
        }
        for (i, (name, _)) in self.query.iter().enumerate() {
            f.write_str(if i == 0 { "?" } else { "&" })?;
            f.write_str(name)?;
            f.write_str("=…")?;
        }
        Ok(())
    }
}
