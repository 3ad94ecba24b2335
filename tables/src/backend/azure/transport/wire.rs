//! The small print of a request line: an endpoint split into what a request
//! needs, percent-encoding of path segments and query values, and HTTP dates.

use std::fmt::Write as _;

use hyper::Uri;

use crate::error::{Error, Result};
use crate::value::DateTime;

/// An endpoint (`https://acct.table.core.windows.net`,
/// `http://127.0.0.1:10002/devstoreaccount1`), read once.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The endpoint without a trailing `/`: every request's URL starts with it.
    pub(crate) base: String,
    /// Its path (`/devstoreaccount1`, or empty), as the signature's resource starts.
    pub(crate) path: String,
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Endpoint {
    /// Reads `endpoint` (already checked by the connection string's parser).
    pub(crate) fn parse(endpoint: &str) -> Result<Endpoint> {
        let base = endpoint.trim_end_matches('/').to_owned();
        let uri: Uri = base
            .parse()
            .map_err(|e| Error::config(format!("endpoint `{endpoint}` is not a URL")).with_source(e))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => {
                return Err(Error::config(format!(
                    "endpoint `{endpoint}` is not http:// or https://"
                )))
            }
        };
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| Error::config(format!("endpoint `{endpoint}` has no host")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path = uri.path().trim_end_matches('/').to_owned();
        Ok(Endpoint { base, path, host, port })
    }
}

/// Whether `b` stands for itself in a path segment or a query value.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Appends `text` to `out`, percent-encoding every byte but the unreserved
/// ones and those `keep` accepts.
pub(crate) fn encode_into(out: &mut String, text: &str, keep: impl Fn(u8) -> bool) {
    for &b in text.as_bytes() {
        if unreserved(b) || keep(b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// `text` as one path segment.
pub(crate) fn segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    encode_into(&mut out, text, |_| false);
    out
}

/// A blob's path: `/{container}/{name}`, each segment encoded, the name's `/` kept.
pub(crate) fn blob_path(container: &str, name: &str) -> String {
    let mut out = String::with_capacity(container.len() + name.len() + 2);
    out.push('/');
    encode_into(&mut out, container, |_| false);
    out.push('/');
    encode_into(&mut out, name, |b| b == b'/');
    out
}

/// `name=value&..`, the values percent-encoded.
pub(crate) fn query_string(pairs: &[(&'static str, String)]) -> String {
    let mut out = String::new();
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        encode_into(&mut out, name, |b| b == b'$');
        out.push('=');
        encode_into(&mut out, value, |_| false);
    }
    out
}

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// `at` as HTTP writes a date (RFC 1123, GMT): `Tue, 02 Dec 2026 14:05:09 GMT`.
pub(crate) fn http_date(at: DateTime) -> String {
    let (y, m, d, hh, mm, ss, _) = at.parts();
    // Sakamoto's weekday: 0 is Sunday.
    const OFFSETS: [i32; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
    let wy = if m < 3 { y - 1 } else { y };
    let weekday = (wy + wy / 4 - wy / 100 + wy / 400 + OFFSETS[m as usize - 1] + d as i32).rem_euclid(7);
    format!(
        "{}, {d:02} {} {y:04} {hh:02}:{mm:02}:{ss:02} GMT",
        DAYS[weekday as usize],
        MONTHS[m as usize - 1]
    )
}

/// Reads an RFC 1123 date (`Sun, 06 Nov 1994 08:49:37 GMT`).
pub(crate) fn parse_http_date(text: &str) -> Option<DateTime> {
    let rest = text.trim().split_once(", ").map_or(text.trim(), |(_, rest)| rest);
    let mut fields = rest.split_ascii_whitespace();
    let day = fields.next()?.parse().ok()?;
    let month = fields.next()?;
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as u32 + 1;
    let year = fields.next()?.parse().ok()?;
    let mut clock = fields.next()?.split(':').map(|p| p.parse::<u32>().ok());
    let (hour, minute, second) = (clock.next()??, clock.next()??, clock.next()??);
    if !matches!(fields.next(), Some("GMT" | "UTC")) || fields.next().is_some() {
        return None;
    }
    DateTime::from_parts(year, month, day, hour, minute, second, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_written_and_read_as_http_writes_them() {
        let at = |text: &str| DateTime::try_parse(text).expect("a date");
        assert_eq!(http_date(at("2026-12-02T14:05:09Z")), "Wed, 02 Dec 2026 14:05:09 GMT");
        assert_eq!(http_date(at("2000-02-29T00:00:00Z")), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(
            http_date(at("1999-01-01T23:59:59.9999999Z")),
            "Fri, 01 Jan 1999 23:59:59 GMT"
        );
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(at("1994-11-06T08:49:37Z"))
        );
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49 GMT"), None);
        assert_eq!(parse_http_date("yesterday"), None);
    }

    #[test]
    fn segments_and_values_keep_only_unreserved_bytes() {
        assert_eq!(segment("a b+c%'/é"), "a%20b%2Bc%25%27%2F%C3%A9");
        assert_eq!(blob_path("c", "a/b c/.d"), "/c/a/b%20c/.d");
        let pairs = [
            ("$filter", "PartitionKey eq 'p'".to_owned()),
            ("comp", "list".to_owned()),
        ];
        assert_eq!(query_string(&pairs), "$filter=PartitionKey%20eq%20%27p%27&comp=list");
    }

    #[test]
    fn an_endpoint_is_split_once() {
        let e = Endpoint::parse("http://127.0.0.1:10002/devstoreaccount1/").unwrap();
        assert_eq!(
            (e.base.as_str(), e.path.as_str(), e.host.as_str(), e.port),
            (
                "http://127.0.0.1:10002/devstoreaccount1",
                "/devstoreaccount1",
                "127.0.0.1",
                10002
            )
        );
        let e = Endpoint::parse("https://acct.table.core.windows.net").unwrap();
        assert_eq!((e.path.as_str(), e.port), ("", 443));
    }
}
