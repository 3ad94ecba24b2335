//! Entity-group transactions, written and read by us: the crate's
//! `TransactionBuilder` does not escape `'` in keys, ends the batch without
//! its closing delimiter, and reports a failed transaction as `Ok` with only
//! the failing operation's status (no code, no message, no index).

use crate::backend::{IfMatch, UpdateMode, WriteOp, WriteOutcome};
use crate::error::Error;
use crate::value::{wire, ETag};

use super::http::ServiceFailure;
use super::{entity_path, timestamp_from_etag};

/// One operation's answer inside a batch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartResponse {
    pub(crate) status: u16,
    pub(crate) content_id: Option<String>,
    pub(crate) etag: Option<String>,
    pub(crate) error_code: Option<String>,
    pub(crate) body: String,
}

/// The multipart body of `POST /$batch` for `ops` on `table`, whose table
/// endpoint is `endpoint` (no trailing `/`).
pub(crate) fn build_body(
    endpoint: &str,
    table: &str,
    ops: &[WriteOp],
    batch_boundary: &str,
    changeset_boundary: &str,
) -> Result<String, Error> {
    let mut s = String::with_capacity(512 * ops.len() + 256);
    let crlf = "\r\n";
    s.push_str(&format!("--{batch_boundary}{crlf}"));
    s.push_str(&format!(
        "Content-Type: multipart/mixed; boundary={changeset_boundary}{crlf}{crlf}"
    ));
    for (i, op) in ops.iter().enumerate() {
        s.push_str(&format!("--{changeset_boundary}{crlf}"));
        s.push_str(&format!(
            "Content-Type: application/http{crlf}Content-Transfer-Encoding: binary{crlf}{crlf}"
        ));
        let (pk, rk) = op.keys();
        let entity_url = format!("{endpoint}/{}", entity_path(table, pk, rk));
        let (method, url, if_match, body) = match op {
            WriteOp::Insert(row) => ("POST", format!("{endpoint}/{table}"), None, Some(row)),
            WriteOp::Update { row, mode, condition } => (method_of(*mode), entity_url, Some(condition), Some(row)),
            WriteOp::Upsert { row, mode } => (method_of(*mode), entity_url, None, Some(row)),
            WriteOp::Delete { condition, .. } => ("DELETE", entity_url, Some(condition), None),
        };
        s.push_str(&format!("{method} {url} HTTP/1.1{crlf}"));
        s.push_str(&format!("Content-ID: {}{crlf}", i + 1));
        s.push_str(&format!("Accept: application/json;odata=minimalmetadata{crlf}"));
        s.push_str(&format!("DataServiceVersion: 3.0;{crlf}"));
        if let Some(condition) = if_match {
            let value = match condition {
                IfMatch::Any => "*",
                IfMatch::ETag(e) => e.as_str(),
            };
            s.push_str(&format!("If-Match: {value}{crlf}"));
        }
        match body {
            Some(row) => {
                let json = String::from_utf8(wire::row_body(row)).map_err(|e| {
                    Error::encode(format!(
                        "the body of the entity with PartitionKey `{pk}` and RowKey `{rk}` is not UTF-8"
                    ))
                    .with_source(e)
                })?;
                if matches!(op, WriteOp::Insert(_)) {
                    s.push_str(&format!("Prefer: return-no-content{crlf}"));
                }
                s.push_str(&format!("Content-Type: application/json{crlf}"));
                s.push_str(&format!("Content-Length: {}{crlf}{crlf}", json.len()));
                s.push_str(&json);
                s.push_str(crlf);
            }
            None => s.push_str(crlf),
        }
    }
    s.push_str(&format!("--{changeset_boundary}--{crlf}"));
    s.push_str(&format!("--{batch_boundary}--{crlf}"));
    Ok(s)
}

fn method_of(mode: UpdateMode) -> &'static str {
    match mode {
        UpdateMode::Replace => "PUT",
        UpdateMode::Merge => "MERGE",
    }
}

/// Splits a batch response body into the operations' answers, in order.
pub(crate) fn parse_parts(body: &str) -> Vec<PartResponse> {
    let mut parts = Vec::new();
    let mut lines = body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).peekable();
    while let Some(line) = lines.next() {
        let Some(rest) = line.strip_prefix("HTTP/1.") else {
            continue;
        };
        let status = rest
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse::<u16>().ok())
            .unwrap_or(0);
        let mut part = PartResponse {
            status,
            content_id: None,
            etag: None,
            error_code: None,
            body: String::new(),
        };
        // Headers, up to the blank line.
        for line in lines.by_ref() {
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                let value = value.trim().to_owned();
                match name.trim().to_ascii_lowercase().as_str() {
                    "content-id" => part.content_id = Some(value),
                    "etag" => part.etag = Some(value),
                    "x-ms-error-code" => part.error_code = Some(value),
                    _ => {}
                }
            }
        }
        // Body, up to the next boundary line (or the next status line).
        let mut body_lines = Vec::new();
        while let Some(next) = lines.peek() {
            if next.starts_with("--") || next.starts_with("HTTP/1.") {
                break;
            }
            body_lines.push(*next);
            lines.next();
        }
        part.body = body_lines.join("\n").trim().to_owned();
        parts.push(part);
    }
    parts
}

/// The outcome of a whole batch response: every operation's outcome, or the
/// failing operation as [`Error::Transaction`].
pub(crate) fn interpret(ops: &[WriteOp], parts: &[PartResponse]) -> Result<Vec<WriteOutcome>, Error> {
    if let Some((position, failed)) = parts.iter().enumerate().find(|(_, p)| !(200..300).contains(&p.status)) {
        let mut failure = ServiceFailure::from_status(failed.status, failed.body.as_bytes());
        if let Some(code) = failed.error_code.clone().filter(|c| !c.is_empty()) {
            if failure.code.is_empty() {
                failure.code = code;
            }
        }
        // The service prefixes the message with the 0-based index: "1:The specified entity already exists."
        let mut index = None;
        if let Some((head, tail)) = failure.message.split_once(':') {
            if !head.is_empty() && head.bytes().all(|b| b.is_ascii_digit()) {
                index = head.parse::<usize>().ok();
                failure.message = tail.to_owned();
            }
        }
        let index = index
            .or_else(|| {
                failed
                    .content_id
                    .as_deref()
                    .and_then(|c| c.parse::<usize>().ok())
                    .and_then(|c| c.checked_sub(1))
            })
            .or_else(|| (parts.len() == ops.len()).then_some(position))
            .unwrap_or(0);
        if index >= ops.len() {
            return Err(Error::malformed_response(format!(
                "the transaction answered that operation {index} failed, but {} were sent",
                ops.len()
            )));
        }
        return Err(Error::Transaction {
            index,
            source: Box::new(failure.into()),
        });
    }
    if parts.len() != ops.len() {
        return Err(Error::malformed_response(format!(
            "the transaction answered {} operations for {} sent",
            parts.len(),
            ops.len()
        )));
    }
    Ok(parts
        .iter()
        .zip(ops)
        .map(|(part, op)| match op {
            WriteOp::Delete { .. } => WriteOutcome {
                etag: None,
                timestamp: None,
            },
            _ => {
                let etag = part.etag.clone().map(ETag::new);
                WriteOutcome {
                    timestamp: etag.as_ref().and_then(timestamp_from_etag),
                    etag,
                }
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Row, Value};

    const FAILED: &str = "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n--changesetresponse_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 409 Conflict\r\nX-Content-Type-Options: nosniff\r\nDataServiceVersion: 3.0;\r\nContent-Type: application/json;odata=minimalmetadata;streaming=true;charset=utf-8\r\n\r\n{\"odata.error\":{\"code\":\"EntityAlreadyExists\",\"message\":{\"lang\":\"en-US\",\"value\":\"1:The specified entity already exists.\\nRequestId:x\\nTime:y\"}}}\r\n--changesetresponse_2--\r\n--batchresponse_1--\r\n";

    const OK: &str = "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n--changesetresponse_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 204 No Content\r\nContent-ID: 1\r\nETag: W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\"\r\n\r\n\r\n--changesetresponse_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nHTTP/1.1 204 No Content\r\nContent-ID: 2\r\n\r\n\r\n--changesetresponse_2--\r\n--batchresponse_1--\r\n";

    fn two_ops() -> Vec<WriteOp> {
        vec![
            WriteOp::Insert(Row::new("p", "a").with("N", Value::Int64(1))),
            WriteOp::Delete {
                partition_key: "p".into(),
                row_key: "b".into(),
                condition: IfMatch::Any,
            },
        ]
    }

    #[test]
    fn a_failed_part_becomes_a_transaction_error_with_the_index_code_and_message() {
        let parts = parse_parts(FAILED);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].status, 409);
        match interpret(&two_ops(), &parts) {
            Err(Error::Transaction { index, source }) => {
                assert_eq!(index, 1);
                match *source {
                    Error::Service {
                        status, code, message, ..
                    } => {
                        assert_eq!(status, 409);
                        assert_eq!(code, "EntityAlreadyExists");
                        assert!(message.starts_with("The specified entity already exists."), "{message}");
                    }
                    other => panic!("{other:?}"),
                }
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn successful_parts_give_outcomes_in_order() {
        let parts = parse_parts(OK);
        let outcomes = interpret(&two_ops(), &parts).unwrap();
        assert_eq!(outcomes.len(), 2);
        assert_eq!(
            outcomes[0].etag.as_ref().map(ETag::as_str),
            Some("W/\"datetime'2024-01-02T03%3A04%3A05.1234567Z'\"")
        );
        assert_eq!(
            outcomes[0].timestamp.map(|t| t.to_string()).as_deref(),
            Some("2024-01-02T03:04:05.1234567Z")
        );
        assert_eq!(outcomes[1].etag, None);
    }

    #[test]
    fn the_body_escapes_keys_and_closes_both_boundaries() {
        let ops = vec![WriteOp::Update {
            row: Row::new("it's", "a b+c%"),
            mode: UpdateMode::Merge,
            condition: IfMatch::Any,
        }];
        let body = build_body("http://h/acct", "T", &ops, "batch_x", "changeset_y").unwrap();
        assert!(
            body.contains("MERGE http://h/acct/T(PartitionKey='it''s',RowKey='a%20b%2Bc%25') HTTP/1.1\r\n"),
            "{body}"
        );
        assert!(body.contains("If-Match: *\r\n"));
        assert!(body.ends_with("--changeset_y--\r\n--batch_x--\r\n"));
    }

    proptest::proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any text as a batch answer: parts or a typed error, never a panic.
        #[test]
        fn any_answer_parses_or_is_an_error(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("HTTP/1\\.[01] [0-9]{0,5} [A-Za-z ]{0,8}").unwrap(),
                    proptest::string::string_regex("(Content-ID|ETag|x-ms-error-code): ?[ -~]{0,12}").unwrap(),
                    proptest::string::string_regex("--[a-z_0-9]{0,12}(--)?").unwrap(),
                    proptest::string::string_regex("\\{[ -~]{0,40}").unwrap(),
                    proptest::string::string_regex("\\PC{0,20}").unwrap(),
                    proptest::strategy::Just(String::new()),
                ],
                0..24,
            ),
            n_ops in 1usize..4,
        ) {
            let body = lines.join("\r\n");
            let parts = parse_parts(&body);
            let ops: Vec<WriteOp> = (0..n_ops)
                .map(|i| WriteOp::Insert(Row::new("p", format!("r{i}"))))
                .collect();
            match interpret(&ops, &parts) {
                Ok(outcomes) => proptest::prop_assert_eq!(outcomes.len(), ops.len()),
                Err(Error::Transaction { index, .. }) => proptest::prop_assert!(index < ops.len()),
                Err(Error::MalformedResponse { .. } | Error::Service { .. }) => {}
                Err(other) => proptest::prop_assert!(false, "unexpected error: {other}"),
            }
        }
    }
}
