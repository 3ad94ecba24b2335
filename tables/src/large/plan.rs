//! Planning where each large value goes: one cell, split cells on the main
//! row and continuation rows, or a blob.

use std::borrow::Cow;

use std::sync::Arc;

use super::cells::{chunks, fits_one_cell, inline_name, manifest, stored_bytes_hashed, MAX_INFLATED_VALUE_BYTES};
#[cfg(test)]
use crate::backend::pack::TRANSACTION_BODY_BUDGET;
use crate::backend::pack::{key_weight, row_weight};
use crate::entity::{Column, ColumnKind, LargeEncoding, LargeForm, Schema};
use crate::error::{Error, KeyKind, Result};
use crate::layout::{
    blob_cell, blob_name, chunk_cell, continuation_key, is_continuation_key, BlobRef, CONTINUATION_SUFFIX_UNITS,
    MAX_CONTINUATION_ROWS, SPLIT_INDEX, SPLIT_OF, SPLIT_PARTS,
};
use crate::service::{BlobName, MAX_PROPERTIES, MAX_TRANSACTION_OPS};
use crate::value::{sha256_hex, utf16_len, wire, Row, Value};

/// Estimated stored bytes the cells that stay on the main row may take.
pub(crate) const MAIN_ROW_BUDGET: usize = 1_000_000;
/// Request-body bytes one row may take (the emulator enforces 1 MiB per
/// row), counted as [`wire::wire_size`] counts them: six bytes per non-ASCII
/// UTF-16 unit, so a row holds 32,000 UTF-16 units of a split value's
/// non-ASCII text per 192 KB of this budget (ASCII: 32 KB).
pub(crate) const ROW_WIRE_BUDGET: usize = 960_000;
/// The longest RowKey of a type with large values, in UTF-16 units: room is
/// left for a continuation row's `~0001`, within the 512 units the storage
/// emulator allows a key (the service allows 1,024).
pub(crate) const MAX_LARGE_ROW_KEY: usize = 512 - CONTINUATION_SUFFIX_UNITS - 27;

/// A large column of an entity type.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LargeColumn {
    pub(crate) name: &'static str,
    pub(crate) aliases: &'static [&'static str],
    pub(crate) encoding: LargeEncoding,
    pub(crate) offload: bool,
    pub(crate) form: LargeForm,
}

/// The large columns of a schema.
pub(crate) fn large_columns(columns: &'static [Column]) -> Vec<LargeColumn> {
    columns
        .iter()
        .filter_map(|c| match c.kind {
            ColumnKind::Large {
                encoding,
                offload,
                form,
            } => Some(LargeColumn {
                name: c.name,
                aliases: c.aliases,
                encoding,
                offload,
                form,
            }),
            _ => None,
        })
        .collect()
}

/// A blob to upload before the rows are written.
#[derive(Debug, Clone)]
pub(crate) struct PlannedBlob {
    pub(crate) reference: BlobRef,
    /// Shared with nothing once the plan is made, so the upload moves it.
    pub(crate) bytes: Arc<Vec<u8>>,
    pub(crate) content_encoding: Option<String>,
}

/// The rows and blobs of one entity.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) main: Row,
    pub(crate) continuations: Vec<Row>,
    pub(crate) blobs: Vec<PlannedBlob>,
}

/// What the planner may use.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) threshold: usize,
    pub(crate) blobs: bool,
    /// Operations the transaction carries besides this entity's rows (deletes of stale rows).
    pub(crate) extra_ops: usize,
    /// The request-body budget of one transaction on the service written to
    /// ([`ServiceProfile::transaction_body_budget`](crate::service::ServiceProfile::transaction_body_budget)).
    pub(crate) budget: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tier {
    Inline,
    Split,
    Blob,
}

struct Candidate<'r> {
    column: LargeColumn,
    cell: &'r Value,
    /// The cell's stored size (computed once: it walks the whole value).
    size: usize,
    stored: Option<Cow<'r, [u8]>>,
    /// The SHA-256 of the stored bytes (computed once, with them where it can be).
    sha: Option<String>,
    /// The blob's bytes, once the value is offloaded.
    blob: Option<Arc<Vec<u8>>>,
    chunks: Option<Vec<Value>>,
    tier: Tier,
}

impl<'r> Candidate<'r> {
    fn new(column: LargeColumn, cell: &'r Value) -> Candidate<'r> {
        Candidate {
            column,
            tier: if fits_one_cell(cell) { Tier::Inline } else { Tier::Split },
            // Exact for a value that fits one cell; for a larger one, two bytes per
            // UTF-8 byte (an upper bound, without walking the text).
            size: match cell {
                Value::String(s) if !fits_one_cell(cell) => s.len() * 2 + 4,
                _ => cell.stored_size(),
            },
            cell,
            stored: None,
            sha: None,
            blob: None,
            chunks: None,
        }
    }

    /// The stored bytes: the value's own bytes for `text` and `binary`, gzip
    /// for `gzip` (hashed while it is compressed).
    fn stored(&mut self) -> &[u8] {
        let (cell, encoding) = (self.cell, self.column.encoding);
        if self.stored.is_none() {
            self.stored = Some(match (encoding, cell) {
                (LargeEncoding::Gzip, _) => {
                    let (bytes, sha) = stored_bytes_hashed(cell, encoding);
                    self.sha = Some(sha);
                    Cow::Owned(bytes)
                }
                (_, Value::String(s)) => Cow::Borrowed(s.as_bytes()),
                (_, Value::Binary(b)) => Cow::Borrowed(b.as_slice()),
                _ => Cow::Owned(Vec::new()),
            });
        }
        self.stored.as_deref().unwrap_or_default()
    }

    /// The SHA-256 of the stored bytes.
    fn sha(&mut self) -> String {
        if self.sha.is_none() {
            let sha = sha256_hex(self.stored());
            self.sha = Some(sha);
        }
        self.sha.clone().unwrap_or_default()
    }

    /// The bytes to upload and their SHA-256: gzip output is moved, a
    /// value's own bytes are copied and hashed in one pass.
    fn blob(&mut self) -> (Arc<Vec<u8>>, String) {
        if self.blob.is_none() {
            self.stored();
            let bytes = match self.stored.take() {
                Some(Cow::Owned(bytes)) => bytes,
                Some(Cow::Borrowed(bytes)) if self.sha.is_some() => bytes.to_vec(),
                _ => {
                    let (bytes, sha) = stored_bytes_hashed(self.cell, LargeEncoding::Binary);
                    self.sha = Some(sha);
                    bytes
                }
            };
            self.blob = Some(Arc::new(bytes));
        }
        let sha = self.sha();
        (self.blob.clone().unwrap_or_default(), sha)
    }

    fn chunks(&mut self) -> &[Value] {
        if self.chunks.is_none() {
            let (cell, encoding) = (self.cell, self.column.encoding);
            let parts = chunks(cell, self.stored(), encoding);
            self.chunks = Some(parts);
        }
        self.chunks.as_deref().unwrap_or_default()
    }

    fn cell_size(&self) -> usize {
        self.size
    }
}

fn content_type(form: LargeForm) -> &'static str {
    match form {
        LargeForm::Text => "text/plain; charset=utf-8",
        LargeForm::Json => "application/json",
        LargeForm::Bytes => "application/octet-stream",
    }
}

/// Bytes a chunk cell adds to a row: (stored, wire).
fn chunk_cost(name: &str, value: &Value) -> (usize, usize) {
    let stored = 8 + 2 * utf16_len(name) + value.stored_size();
    let wire = match value {
        Value::String(s) => wire::string_size(s) + name.len() + 4,
        Value::Binary(b) => b.len().div_ceil(3) * 4 + 2 * name.len() + 40,
        _ => 64,
    };
    (stored, wire)
}

fn oversized(column: &str, bytes: usize, limit: usize, reason: String) -> Error {
    Error::OversizedValue {
        column: column.to_owned(),
        bytes,
        limit,
        reason,
    }
}

/// Refuses RowKeys a type with large values or files cannot use: the
/// continuation-row shape, and keys too long for a continuation suffix.
/// Refuses a `gzip` value larger than a reader unpacks
/// ([`MAX_INFLATED_VALUE_BYTES`]), before it is compressed: stored, it could
/// never be read back.
fn refuse_gzip_past_the_read_bound(candidates: &[Candidate<'_>]) -> Result<()> {
    for c in candidates.iter().filter(|c| c.column.encoding == LargeEncoding::Gzip) {
        let raw = match c.cell {
            Value::String(s) => s.len(),
            Value::Binary(b) => b.len(),
            _ => 0,
        };
        if raw > MAX_INFLATED_VALUE_BYTES {
            return Err(oversized(
                c.column.name,
                raw,
                MAX_INFLATED_VALUE_BYTES,
                format!(
                    "a gzip value is read back only up to {MAX_INFLATED_VALUE_BYTES} bytes unpacked; store less, or use #[table(split = \"text\")] / \"binary\" (offloaded to a blob at any size)"
                ),
            ));
        }
    }
    Ok(())
}

pub(crate) fn check_row_key(schema: &Schema, row_key: &str) -> Result<()> {
    if !schema.has_large_values() {
        return Ok(());
    }
    if is_continuation_key(row_key) {
        return Err(Error::InvalidKey {
            which: KeyKind::RowKey,
            key: row_key.to_owned(),
            reason: "it ends with `~` and four digits, the shape of a continuation row of an entity with large values; choose another key".into(),
        });
    }
    if utf16_len(row_key) > MAX_LARGE_ROW_KEY {
        return Err(Error::InvalidKey {
            which: KeyKind::RowKey,
            key: row_key.chars().take(64).collect(),
            reason: format!(
                "an entity with large values needs room for its continuation rows' `~0001` suffix: keep RowKeys to {MAX_LARGE_ROW_KEY} UTF-16 units"
            ),
        });
    }
    Ok(())
}

/// The blob name of a value of this row, refused before anything is
/// uploaded or written when the service could not store it (a name over
/// 1,024 characters, from long keys).
pub(crate) fn checked_blob_name(
    table: &str,
    partition_key: &str,
    row_key: &str,
    column: &str,
    sha256: &str,
) -> Result<String> {
    let name = blob_name(table, partition_key, row_key, column, sha256);
    if let Err(e) = BlobName::parse(&name) {
        let (which, key) = if partition_key.len() >= row_key.len() {
            (KeyKind::PartitionKey, partition_key)
        } else {
            (KeyKind::RowKey, row_key)
        };
        return Err(Error::InvalidKey {
            which,
            key: key.chars().take(64).collect(),
            reason: format!(
                "the value of `{column}` goes to a blob, and the blob name built from the table, both keys and the column ({} characters once escaped) is one the blob service refuses ({e}); use shorter keys",
                name.chars().count()
            ),
        });
    }
    Ok(name)
}

/// Plans the rows and blobs of `row`, whose large columns hold their full
/// one-cell form. A row without large columns is a plan of that one row.
pub(crate) fn plan(table: &str, full: Cow<'_, Row>, columns: &[LargeColumn], limits: Limits) -> Result<Plan> {
    if columns.is_empty() {
        return Ok(Plan {
            main: full.into_owned(),
            continuations: Vec::new(),
            blobs: Vec::new(),
        });
    }
    plan_large(table, &full, columns, limits)
}

/// [`plan`] of a row with large columns.
fn plan_large(table: &str, full: &Row, columns: &[LargeColumn], limits: Limits) -> Result<Plan> {
    let names: Vec<String> = columns.iter().map(|c| inline_name(c.name, c.form)).collect();
    // The ordinary cells, without the large values (which are only borrowed).
    let row = Row {
        partition_key: full.partition_key.clone(),
        row_key: full.row_key.clone(),
        properties: full
            .properties
            .iter()
            .filter(|(k, _)| !names.iter().any(|n| n.as_str() == k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        etag: None,
        timestamp: None,
    };
    let mut candidates: Vec<Candidate> = columns
        .iter()
        .zip(&names)
        .filter_map(|(c, name)| full.get(name).map(|cell| Candidate::new(*c, cell)))
        .collect();
    refuse_gzip_past_the_read_bound(&candidates)?;
    for c in candidates.iter_mut().filter(|c| c.tier == Tier::Split) {
        if c.stored().len() > limits.threshold && c.column.offload && limits.blobs {
            c.tier = Tier::Blob;
        }
    }
    loop {
        // The cells that must stay on the main row.
        let mut main = row.clone();
        let mut blobs = Vec::new();
        let mut any_split = false;
        for c in candidates.iter_mut() {
            match c.tier {
                Tier::Inline => main.insert(inline_name(c.column.name, c.column.form), (*c.cell).clone()),
                Tier::Split => {
                    any_split = true;
                    let name = c.column.name;
                    let encoding = c.column.encoding;
                    let count = c.chunks().len();
                    let (len, sha) = (c.stored().len(), c.sha());
                    for (k, v) in manifest(name, count, len, &sha, encoding) {
                        main.insert(k, v);
                    }
                }
                Tier::Blob => {
                    let column = c.column;
                    let (stored, sha) = c.blob();
                    let reference = BlobRef {
                        path: checked_blob_name(table, &row.partition_key, &row.row_key, column.name, &sha)?,
                        sha256: sha,
                        length: stored.len() as u64,
                        content_type: Some(content_type(column.form).to_owned()),
                        encoding: Some(column.encoding.name().to_owned()),
                    };
                    main.insert(blob_cell(column.name), Value::String(reference.to_cell()));
                    blobs.push(PlannedBlob {
                        reference,
                        content_encoding: (column.encoding == LargeEncoding::Gzip).then(|| "gzip".to_owned()),
                        bytes: stored,
                    });
                }
            }
        }
        if any_split {
            main.insert(SPLIT_PARTS, Value::Int32(0));
        }
        let over_stored = main.stored_size() > MAIN_ROW_BUDGET;
        if over_stored || wire::wire_size(&main) > ROW_WIRE_BUDGET {
            // Move the largest value still in one cell into split form.
            if let Some(c) = candidates
                .iter_mut()
                .filter(|c| c.tier == Tier::Inline)
                .max_by_key(|c| c.cell_size())
            {
                c.tier = Tier::Split;
                continue;
            }
        }
        if over_stored {
            let (name, size) = main
                .properties
                .iter()
                .map(|(k, v)| (k.clone(), v.stored_size()))
                .max_by_key(|(_, s)| *s)
                .unwrap_or_default();
            return Err(oversized(
                &name,
                size,
                MAIN_ROW_BUDGET,
                format!(
                    "the cells that must stay on the main row take {} bytes, over one entity; mark the large fields #[table(split = ..)], or store less in one entity",
                    main.stored_size()
                ),
            ));
        }
        if main.properties.len() > MAX_PROPERTIES {
            let largest = candidates
                .iter_mut()
                .filter(|c| c.tier == Tier::Split)
                .max_by_key(|c| c.cell_size());
            let (name, size) = largest.map(|c| (c.column.name, c.cell_size())).unwrap_or(("", 0));
            return Err(oversized(
                name,
                size,
                MAX_PROPERTIES,
                format!(
                    "the entity needs {} properties (a split value takes 4 manifest cells on the main row) and the service allows {MAX_PROPERTIES}; store fewer fields in one entity, or lower the offload threshold so the value becomes one blob reference",
                    main.properties.len()
                ),
            ));
        }
        // Place the chunks: the main row first, then continuation rows.
        let mut rows = vec![main];
        let (mut stored_size, mut wire_size) = (rows[0].stored_size(), wire::wire_size(&rows[0]));
        for c in candidates.iter_mut().filter(|c| c.tier == Tier::Split) {
            let name = c.column.name;
            for (i, chunk) in c.chunks().iter().cloned().enumerate() {
                let cell = chunk_cell(name, i);
                let (s, w) = chunk_cost(&cell, &chunk);
                let full = {
                    let last = rows.last().map(|r| r.properties.len()).unwrap_or(0);
                    stored_size + s > MAIN_ROW_BUDGET || wire_size + w > ROW_WIRE_BUDGET || last >= MAX_PROPERTIES
                };
                if full {
                    let index = rows.len();
                    let cont = Row::new(rows[0].partition_key.clone(), continuation_key(&rows[0].row_key, index))
                        .with(SPLIT_OF, Value::String(rows[0].row_key.clone()))
                        .with(SPLIT_INDEX, Value::Int32(index as i32));
                    stored_size = cont.stored_size();
                    wire_size = wire::wire_size(&cont);
                    rows.push(cont);
                }
                stored_size += s;
                wire_size += w;
                if let Some(last) = rows.last_mut() {
                    last.insert(cell, chunk);
                }
            }
        }
        let parts = rows.len() - 1;
        if any_split {
            rows[0].insert(SPLIT_PARTS, Value::Int32(parts as i32));
        }
        let stale_deletes =
            limits.extra_ops * key_weight(&rows[0].partition_key, &continuation_key(&rows[0].row_key, 1));
        let total_wire: usize = rows.iter().map(row_weight).sum::<usize>() + stale_deletes;
        if rows.len() + limits.extra_ops <= MAX_TRANSACTION_OPS
            && total_wire <= limits.budget
            && parts <= MAX_CONTINUATION_ROWS
        {
            let main = rows.remove(0);
            return Ok(Plan {
                main,
                continuations: rows,
                blobs,
            });
        }
        // Too large for one transaction: offload the largest split value.
        let offloadable = candidates
            .iter_mut()
            .filter(|c| c.tier == Tier::Split && c.column.offload && limits.blobs)
            .max_by_key(|c| c.cell_size());
        match offloadable {
            Some(c) => c.tier = Tier::Blob,
            None => {
                let largest = candidates
                    .iter_mut()
                    .filter(|c| c.tier == Tier::Split)
                    .max_by_key(|c| c.cell_size());
                let (name, bytes, offload) = match largest {
                    Some(c) => {
                        let offload = c.column.offload;
                        (c.column.name, c.stored().len(), offload)
                    }
                    None => ("", total_wire, true),
                };
                let budget = limits.budget;
                let reason = if !offload {
                    format!("the value does not fit one entity-group transaction (100 rows, {budget} bytes) and the field is #[table(offload = \"never\")]: allow offload, or store less")
                } else {
                    format!("the value does not fit one entity-group transaction (100 rows, {budget} bytes) and no blob container is configured: configure blob offload (Tables::with_blobs), or store less")
                };
                return Err(oversized(name, bytes, budget, reason));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: LargeColumn = LargeColumn {
        name: "Body",
        aliases: &[],
        encoding: LargeEncoding::Text,
        offload: true,
        form: LargeForm::Text,
    };
    const LIMITS: Limits = Limits {
        threshold: 3_145_728,
        blobs: true,
        extra_ops: 0,
        budget: TRANSACTION_BODY_BUDGET,
    };

    fn row_with(text: &str) -> Row {
        Row::new("p", "r")
            .with("Body", Value::String(text.to_owned()))
            .with("Title", Value::String("t".into()))
    }

    #[test]
    fn tiers_by_size() {
        let inline = plan("T", Cow::Owned(row_with(&"a".repeat(32_767))), &[BODY], LIMITS).unwrap();
        assert!(inline.main.get("Body").is_some() && inline.continuations.is_empty() && inline.blobs.is_empty());

        let split = plan("T", Cow::Owned(row_with(&"a".repeat(32_768))), &[BODY], LIMITS).unwrap();
        assert!(split.main.get("Body").is_none());
        assert_eq!(split.main.get("Body__chunks"), Some(&Value::Int32(2)));
        assert_eq!(split.main.get(SPLIT_PARTS), Some(&Value::Int32(0)));

        let rows = plan("T", Cow::Owned(row_with(&"a".repeat(2_000_000))), &[BODY], LIMITS).unwrap();
        assert!(!rows.continuations.is_empty());
        assert_eq!(
            rows.main.get(SPLIT_PARTS),
            Some(&Value::Int32(rows.continuations.len() as i32))
        );
        assert_eq!(rows.continuations[0].row_key, "r~0001");
        assert_eq!(rows.continuations[0].get(SPLIT_OF), Some(&Value::String("r".into())));

        let blob = plan("T", Cow::Owned(row_with(&"a".repeat(3_145_729))), &[BODY], LIMITS).unwrap();
        assert_eq!(blob.blobs.len(), 1);
        assert!(blob.main.get("Body__blob").is_some() && blob.main.get("Body__chunks").is_none());
    }

    /// Every row of a plan within the per-row body budget, all within one transaction.
    fn assert_within_budgets(plan: &Plan) {
        let rows: Vec<&Row> = std::iter::once(&plan.main).chain(&plan.continuations).collect();
        for row in &rows {
            assert!(
                wire::wire_size(row) <= ROW_WIRE_BUDGET,
                "{}: {}",
                row.row_key,
                wire::wire_size(row)
            );
        }
        assert!(rows.iter().map(|r| row_weight(r)).sum::<usize>() <= TRANSACTION_BODY_BUDGET);
    }

    #[test]
    fn non_ascii_text_is_planned_on_its_escaped_size() {
        // 3.0 MB of UTF-8 fit a transaction raw; escaped (9 MB) they go to a blob.
        let cyrillic: String = ('А'..='я').cycle().take(1_500_000).collect();
        let blob = plan("T", Cow::Owned(row_with(&cyrillic)), &[BODY], LIMITS).unwrap();
        assert_eq!(blob.blobs.len(), 1);
        assert!(blob.continuations.is_empty());
        let emoji: String = ('😀'..='🙏').cycle().take(700_000).collect();
        let blob = plan("T", Cow::Owned(row_with(&emoji)), &[BODY], LIMITS).unwrap();
        assert_eq!(blob.blobs.len(), 1);
        // Without a blob container, refused by the planner, not by the service.
        let no_blobs = Limits { blobs: false, ..LIMITS };
        let err = plan("T", Cow::Owned(row_with(&cyrillic)), &[BODY], no_blobs).unwrap_err();
        assert!(err.to_string().contains("no blob container"), "{err}");
        // 3.0 MB escaped: continuation rows, each under the per-row budget.
        for text in [&cyrillic[..1_000_000], &emoji[..1_000_000]] {
            let rows = plan("T", Cow::Owned(row_with(text)), &[BODY], LIMITS).unwrap();
            assert!(rows.blobs.is_empty() && rows.continuations.len() >= 3);
            assert_within_budgets(&rows);
        }
    }

    #[test]
    fn cells_over_the_row_body_budget_move_to_split_form() {
        // Six cells of 30,000 Cyrillic characters: 360 KB stored, 1.08 MB escaped.
        let columns: Vec<LargeColumn> = ["A", "B", "C", "D", "E", "F"]
            .into_iter()
            .map(|name| LargeColumn { name, ..BODY })
            .collect();
        let cell: String = ('А'..='я').cycle().take(30_000).collect();
        let mut row = Row::new("p", "r");
        for c in &columns {
            row.insert(c.name, Value::String(cell.clone()));
        }
        assert!(row.stored_size() < MAIN_ROW_BUDGET && wire::wire_size(&row) > ROW_WIRE_BUDGET);
        let planned = plan("T", Cow::Owned(row), &columns, LIMITS).unwrap();
        let moved = columns.iter().filter(|c| planned.main.get(c.name).is_none()).count();
        assert!(moved >= 1, "only as many as needed, at least one");
        assert_within_budgets(&planned);
    }

    #[test]
    fn refusals_name_the_column() {
        let never = LargeColumn { offload: false, ..BODY };
        let err = plan("T", Cow::Owned(row_with(&"€".repeat(1_500_000))), &[never], LIMITS).unwrap_err();
        assert!(
            matches!(&err, Error::OversizedValue { column, .. } if column == "Body"),
            "{err}"
        );
        let no_blobs = Limits { blobs: false, ..LIMITS };
        let err = plan("T", Cow::Owned(row_with(&"a".repeat(5_000_000))), &[BODY], no_blobs).unwrap_err();
        assert!(err.to_string().contains("no blob container"), "{err}");
    }
}
