//! List Blobs: the request, and its XML answer read into a [`BlobListing`].
//!
//! The answer is `<EnumerationResults>` with `<Blob>` items (a `<Name>`
//! and `<Properties>`), `<BlobPrefix>` items (a `<Name>`) and a
//! `<NextMarker>`; a name the XML cannot hold comes percent-encoded, with
//! `Encoded="true"`. The listing XML carries ETags bare: they are quoted as
//! the `ETag` header quotes them.

use crate::backend::blob::{BlobItem, BlobListing, BlobProperties};
use crate::error::{Error, Result};

use super::blob_headers::{parse_http_date, quoted};

/// The elements `<tag ..>..</tag>` (or `<tag ../>`) directly in `xml`, in
/// order: each one's attributes and inner text.
fn elements<'a>(xml: &'a str, tag: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
    let mut from = 0;
    std::iter::from_fn(move || loop {
        let at = from + xml[from..].find('<')?;
        let rest = &xml[at + 1..];
        from = at + 1;
        let Some(after) = rest.strip_prefix(tag) else {
            continue;
        };
        if !after.starts_with(['>', ' ', '/', '\t', '\r', '\n']) {
            continue;
        }
        let head_end = after.find('>')?;
        let head = &after[..head_end];
        let open_end = at + 1 + tag.len() + head_end + 1;
        if let Some(attributes) = head.strip_suffix('/') {
            from = open_end;
            return Some((attributes, ""));
        }
        let close = format!("</{tag}>");
        let inner_end = open_end + xml[open_end..].find(&close)?;
        from = inner_end + close.len();
        return Some((head, &xml[open_end..inner_end]));
    })
}

/// The text of the first `<tag>` in `xml`, unescaped (decoded when `Encoded="true"`).
fn text(xml: &str, tag: &str) -> Option<String> {
    let (attributes, inner) = elements(xml, tag).next()?;
    let text = unescape(inner);
    if attributes.contains("Encoded=\"true\"") {
        return Some(percent_decode(&text));
    }
    Some(text)
}

fn unescape(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';') else { break };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn unreadable(what: &str) -> Error {
    Error::malformed_response(format!("the blob listing has an unreadable {what}"))
}

/// Reads a List Blobs answer.
pub(super) fn parse_listing(body: &[u8]) -> Result<BlobListing> {
    let xml = std::str::from_utf8(body).map_err(|e| unreadable("text (not UTF-8)").with_source(e))?;
    let (_, results) = elements(xml, "EnumerationResults")
        .next()
        .ok_or_else(|| unreadable("body (no EnumerationResults)"))?;
    let mut listing = BlobListing {
        next_marker: text(results, "NextMarker").filter(|m| !m.is_empty()),
        ..BlobListing::default()
    };
    let blobs = elements(results, "Blobs").next().map_or("", |(_, inner)| inner);
    for (_, blob) in elements(blobs, "Blob") {
        let name = text(blob, "Name").ok_or_else(|| unreadable("blob (no Name)"))?;
        let properties = elements(blob, "Properties").next().map_or("", |(_, inner)| inner);
        let etag = text(properties, "Etag").ok_or_else(|| unreadable("blob (no Etag)"))?;
        let last_modified =
            parse_http_date(&text(properties, "Last-Modified").ok_or_else(|| unreadable("blob (no Last-Modified)"))?)?;
        let length = text(properties, "Content-Length")
            .unwrap_or_default()
            .trim()
            .parse()
            .map_err(|e| unreadable("Content-Length").with_source(e))?;
        listing.items.push(BlobItem {
            name,
            properties: BlobProperties {
                etag: quoted(&etag),
                last_modified,
                length,
                content_type: text(properties, "Content-Type").filter(|t| !t.is_empty()),
                content_encoding: text(properties, "Content-Encoding").filter(|e| !e.is_empty()),
            },
        });
    }
    for (_, prefix) in elements(blobs, "BlobPrefix") {
        listing
            .prefixes
            .push(text(prefix, "Name").ok_or_else(|| unreadable("prefix (no Name)"))?);
    }
    Ok(listing)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTING: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<EnumerationResults ServiceEndpoint="http://h/acct" ContainerName="c"><Prefix>a</Prefix><MaxResults>2</MaxResults><Delimiter>/</Delimiter><Blobs><Blob><Name>a&amp;b &lt;1&gt;</Name><Properties><Creation-Time>Tue, 05 Mar 2024 10:11:12 GMT</Creation-Time><Last-Modified>Tue, 05 Mar 2024 10:11:12 GMT</Last-Modified><Etag>0x8DC3D</Etag><Content-Length>3</Content-Length><Content-Type>text/plain</Content-Type><Content-Encoding /><BlobType>BlockBlob</BlobType></Properties><OrMetadata /></Blob><BlobPrefix><Name>a/</Name></BlobPrefix><Blob><Name Encoded="true">t%09ab</Name><Properties><Last-Modified>Tue, 05 Mar 2024 10:11:13 GMT</Last-Modified><Etag>"0x8DC3E"</Etag><Content-Length>0</Content-Length><Content-Type /><Content-Encoding>gzip</Content-Encoding></Properties></Blob></Blobs><NextMarker>a2</NextMarker></EnumerationResults>"#;

    #[test]
    fn a_listing_is_read_with_its_items_prefixes_and_marker() {
        let listing = parse_listing(LISTING.as_bytes()).unwrap();
        let names: Vec<&str> = listing.items.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["a&b <1>", "t\tab"]);
        assert_eq!(listing.prefixes, ["a/"]);
        assert_eq!(listing.next_marker.as_deref(), Some("a2"));
        let first = &listing.items[0].properties;
        assert_eq!(first.etag, "\"0x8DC3D\"");
        assert_eq!(first.length, 3);
        assert_eq!(first.content_type.as_deref(), Some("text/plain"));
        assert_eq!(first.content_encoding, None);
        let second = &listing.items[1].properties;
        assert_eq!(second.etag, "\"0x8DC3E\"");
        assert_eq!(second.content_type, None);
        assert_eq!(second.content_encoding.as_deref(), Some("gzip"));
    }

    #[test]
    fn an_empty_listing_has_no_marker_and_a_broken_one_is_an_error() {
        let empty = r#"<EnumerationResults><Blobs /><NextMarker /></EnumerationResults>"#;
        let listing = parse_listing(empty.as_bytes()).unwrap();
        assert!(listing.items.is_empty() && listing.prefixes.is_empty() && listing.next_marker.is_none());
        assert!(matches!(
            parse_listing(b"<html>busy</html>"),
            Err(Error::MalformedResponse { .. })
        ));
    }
}
