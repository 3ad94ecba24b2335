//! How entities look: JSON for programs, aligned text for people.

use serde_json::{Map, Value as Json};
use unified_tables::admin::{entity_to_line, LogicalEntity};
use unified_tables::wire::row_to_json;
use unified_tables::Value;

/// The entity as one JSON object: its line in the export format (the
/// service's annotations, large values whole), with each JSON cell and
/// each blob value decoded under its column.
pub fn entity_json(entity: &LogicalEntity) -> Json {
    let mut obj: Map<String, Json> = serde_json::from_str(&entity_to_line(entity)).unwrap_or_default();
    for (column, value) in entity.json_values() {
        match value {
            Ok(v) => obj.insert(column, v),
            Err(e) => obj.insert(format!("{column}@error"), Json::String(e.to_string())),
        };
    }
    for (column, value) in entity.blob_values() {
        match value {
            Ok(v) => put(&mut obj, &column, &v),
            Err(e) => {
                obj.insert(format!("{column}@error"), Json::String(e.to_string()));
            }
        }
    }
    if let Some(etag) = &entity.row.etag {
        obj.insert("odata.etag".into(), Json::String(etag.to_string()));
    }
    Json::Object(obj)
}

fn put(obj: &mut Map<String, Json>, column: &str, value: &Value) {
    let one = unified_tables::Row::new("", "").with(column, value.clone());
    for (k, v) in row_to_json(&one) {
        if k != "PartitionKey" && k != "RowKey" {
            obj.insert(k, v);
        }
    }
}

/// The raw rows as JSON objects (the service's shape, with their ETags).
pub fn raw_json(entity: &LogicalEntity) -> Json {
    Json::Array(
        entity
            .raw
            .iter()
            .map(|row| {
                let mut obj = row_to_json(row);
                if let Some(etag) = &row.etag {
                    obj.insert("odata.etag".into(), Json::String(etag.to_string()));
                }
                Json::Object(obj)
            })
            .collect(),
    )
}

/// A value shortened for a terminal.
pub fn short(json: &Json, max: usize) -> String {
    let text = match json {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    };
    let chars = text.chars().count();
    if chars <= max {
        return text.replace('\n', "\\n");
    }
    let head: String = text.chars().take(max).collect();
    format!("{}… ({chars} characters)", head.replace('\n', "\\n"))
}

/// The entity as aligned `name  value` lines, long values shortened,
/// then one line per large value saying how it is stored.
pub fn entity_text(entity: &LogicalEntity) -> String {
    let json = entity_json(entity);
    let mut out = String::new();
    let Json::Object(obj) = json else { return out };
    let names: Vec<&String> = obj.keys().filter(|k| !k.contains('@')).collect();
    let width = names.iter().map(|k| k.chars().count()).max().unwrap_or(0);
    for name in names {
        let ty = obj
            .get(&format!("{name}@odata.type"))
            .and_then(Json::as_str)
            .map(|t| format!(" ({t})"))
            .unwrap_or_default();
        out.push_str(&format!("{name:width$}  {}{ty}\n", short(&obj[name], 120)));
    }
    for v in &entity.large {
        out.push_str(&format!(
            "  large {}: {:?}, {} stored bytes, encoding {}, sha256 {}\n",
            v.column,
            v.tier,
            v.stored_bytes,
            v.encoding.as_deref().unwrap_or("-"),
            v.sha256
        ));
    }
    out
}

/// Rows as a table: the keys and the first columns, shortened to fit.
pub fn table(rows: &[Json], columns: usize) -> String {
    let mut names: Vec<String> = vec!["PartitionKey".into(), "RowKey".into()];
    for row in rows {
        if let Json::Object(obj) = row {
            for k in obj.keys() {
                let skip = k.contains('@') || k.starts_with("odata.") || k == "Timestamp";
                if !skip && !names.contains(k) && names.len() < columns + 2 {
                    names.push(k.clone());
                }
            }
        }
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            names
                .iter()
                .map(|n| row.get(n).map(|v| short(v, 30)).unwrap_or_default())
                .collect()
        })
        .collect();
    let widths: Vec<usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .chain([n.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |values: &[String]| {
        let padded: Vec<String> = values.iter().zip(&widths).map(|(v, w)| format!("{v:w$}")).collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    let mut out = line(&names);
    for c in &cells {
        out.push_str(&line(c));
    }
    out
}
