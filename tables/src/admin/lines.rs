//! One logical entity as one line of JSON: the service's own OData shape
//! (`"Count@odata.type": "Edm.Int64"`, Int64 as a string, Binary as
//! base64, dates as ISO 8601), so any tool that reads the service's JSON
//! reads it; large values whole under their column, each with an
//! annotation [`LARGE_ANNOTATION`] saying how it was stored.

use serde_json::{Map, Value as Json};

use crate::error::{Error, Result};
use crate::large::logical::{LargeValue, LogicalEntity, Tier};
use crate::value::{wire, Row};

/// The annotation of a large value's column: `"Body@unified-tables.large":
/// {"tier": "continuation", "encoding": "gzip", "storedBytes": 1234, "sha256": "…"}`.
/// An importer plans the value anew with the same encoding.
pub const LARGE_ANNOTATION: &str = "@unified-tables.large";

/// The JSON line of a logical entity (no line break). Blob references stay
/// as their `{Col}__blob` cells; the blob's bytes go in a file of their own.
pub fn entity_to_line(entity: &LogicalEntity) -> String {
    // The service's own request body (non-ASCII escaped), then the annotations.
    let mut out = Vec::with_capacity(256);
    wire::write_row(&entity.row, &mut out);
    out.pop();
    let mut extra = Map::new();
    if let Some(t) = entity.row.timestamp {
        extra.insert("Timestamp@odata.type".into(), Json::String("Edm.DateTime".into()));
        extra.insert("Timestamp".into(), Json::String(t.to_string()));
    }
    for value in entity.large.iter().filter(|v| v.tier != Tier::Blob) {
        let annotation = serde_json::json!({
            "tier": value.tier,
            "encoding": value.encoding,
            "storedBytes": value.stored_bytes,
            "sha256": value.sha256,
        });
        extra.insert(format!("{}{LARGE_ANNOTATION}", value.column), annotation);
    }
    for (name, value) in extra {
        out.push(b',');
        out.extend_from_slice(Json::String(name).to_string().as_bytes());
        out.push(b':');
        out.extend_from_slice(value.to_string().as_bytes());
    }
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

/// Reads a line written by [`entity_to_line`] (or any JSON object in the
/// service's shape): the row, and the large values it annotates. The
/// Timestamp is not a property and is dropped.
pub fn entity_from_line(line: &str) -> Result<(Row, Vec<LargeValue>)> {
    let bad = |reason: String| Error::Archive {
        path: "line".into(),
        reason,
        source: None,
    };
    let mut obj: Map<String, Json> =
        serde_json::from_str(line).map_err(|e| bad("not a JSON object".into()).with_source(e))?;
    let mut large = Vec::new();
    let annotated: Vec<String> = obj.keys().filter(|k| k.ends_with(LARGE_ANNOTATION)).cloned().collect();
    for key in annotated {
        let column = key[..key.len() - LARGE_ANNOTATION.len()].to_owned();
        let Some(Json::Object(a)) = obj.remove(&key) else {
            return Err(bad(format!("`{key}` is not an object")));
        };
        let text = |name: &str| a.get(name).and_then(Json::as_str).map(str::to_owned);
        let tier = match text("tier").as_deref() {
            Some("split") => Tier::Split,
            _ => Tier::Continuation,
        };
        large.push(LargeValue {
            column,
            tier,
            encoding: text("encoding"),
            stored_bytes: a.get("storedBytes").and_then(Json::as_u64).unwrap_or(0),
            sha256: text("sha256").unwrap_or_default(),
        });
    }
    obj.remove("Timestamp");
    obj.remove("Timestamp@odata.type");
    let row = wire::row_from_json(&obj).map_err(bad)?;
    Ok((row, large))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{DateTime, Guid, Value};

    /// Each cause is kept as the error's source and printed once: the
    /// message says what is wrong with which file, the chain says why.
    #[test]
    fn an_export_error_keeps_its_cause_as_the_source() {
        use std::error::Error as _;

        let err = entity_from_line("{not json").unwrap_err();
        assert!(matches!(err, Error::Archive { .. }), "{err}");
        let cause = err.source().expect("the parser's error");
        assert!(cause.downcast_ref::<serde_json::Error>().is_some(), "{cause:?}");
        assert!(!err.to_string().contains(&cause.to_string()), "{err}");

        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = super::super::ArchiveManifest::read(&missing).unwrap_err();
        let file = missing.join(super::super::archive::MANIFEST);
        assert_eq!(err.to_string(), format!("export `{}`: cannot be read", file.display()));
        let cause = err.source().expect("the file system's error");
        let io = cause.downcast_ref::<std::io::Error>().expect("an io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert!(cause.source().is_none());
    }

    #[test]
    fn lines_round_trip_every_cell_type_with_the_service_annotations() {
        let row = Row::new("p", "r")
            .with("S", Value::String("é\n\"".into()))
            .with("B", Value::Bool(true))
            .with("I", Value::Int32(-3))
            .with("L", Value::Int64(1 << 40))
            .with("D", Value::Double(2.5))
            .with("T", Value::DateTime(DateTime::MIN_STORABLE))
            .with("G", Value::Guid(Guid([3; 16])))
            .with("X", Value::Binary(vec![0, 255]))
            .with("Body", Value::String("x".repeat(10)));
        let large = vec![LargeValue {
            column: "Body".into(),
            tier: Tier::Continuation,
            encoding: Some("gzip".into()),
            stored_bytes: 7,
            sha256: "ab".into(),
        }];
        let entity = LogicalEntity {
            row: row.clone(),
            large: large.clone(),
            blobs: Vec::new(),
            raw: Vec::new(),
        };
        let line = entity_to_line(&entity);
        assert!(!line.contains('\n'));
        assert!(line.contains(r#""L@odata.type":"Edm.Int64""#), "{line}");
        assert!(line.contains(r#""L":"1099511627776""#), "{line}");
        let (back, back_large) = entity_from_line(&line).unwrap();
        assert_eq!(back.properties, row.properties);
        assert_eq!(back_large, large);
    }
}
