//! The rules every request follows, whatever it is: which failures are
//! sent again, and how the service's error answers are read into
//! [`ServiceFailure`] (then [`Error::Service`]).

use std::fmt;
use std::time::Duration;

use hyper::StatusCode;

use crate::error::{redact, Error};
use crate::service::COSMOS_THROTTLED_STATUS;

/// The header carrying the service's id of a request, for its logs.
pub(crate) const REQUEST_ID: &str = "x-ms-request-id";

/// A non-success answer of the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceFailure {
    pub(crate) status: u16,
    pub(crate) code: String,
    pub(crate) message: String,
    /// The service's `x-ms-request-id`, when the answer carried one.
    pub(crate) request_id: Option<String>,
    /// How long the answer asked the client to wait before sending again
    /// (`x-ms-retry-after-ms`), when it said.
    pub(crate) retry_after: Option<Duration>,
}

impl fmt::Display for ServiceFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code, self.message)?;
        if let Some(id) = &self.request_id {
            write!(f, " (request id {id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ServiceFailure {}

impl ServiceFailure {
    /// The failure of an answer with `status` and no body.
    pub(crate) fn from_status(status: u16, body: &[u8]) -> ServiceFailure {
        ServiceFailure::from_answer(status, None, None, body)
    }

    /// The failure of an answer with `status`, its `x-ms-error-code` and
    /// `x-ms-request-id` headers and `body`.
    pub(crate) fn from_answer(
        status: u16,
        code: Option<String>,
        request_id: Option<String>,
        body: &[u8],
    ) -> ServiceFailure {
        let (body_code, message) = error_from_body(body);
        let code = code.filter(|c| !c.is_empty()).or(body_code).unwrap_or_default();
        // An authentication failure's message may quote what was signed.
        let message = message.map(|m| redact(&m).into_owned()).unwrap_or_else(|| {
            StatusCode::from_u16(status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .map_or_else(|| format!("HTTP {status}"), str::to_owned)
        });
        ServiceFailure {
            status,
            code,
            message,
            request_id: request_id.filter(|id| !id.is_empty()),
            retry_after: None,
        }
    }

    /// The same failure, with the wait its answer's `x-ms-retry-after-ms`
    /// header asks for (`header`: that header's value, if any; one that is
    /// not a number of milliseconds is ignored).
    pub(crate) fn with_retry_after_header(mut self, header: Option<&str>) -> ServiceFailure {
        self.retry_after = header.and_then(retry_after_ms);
        self
    }

    /// Whether a retry may help: 408, 429, 500, 502, 503 and 504.
    fn is_transient(&self) -> bool {
        matches!(self.status, 408 | COSMOS_THROTTLED_STATUS | 500 | 502 | 503 | 504)
    }
}

/// The wait an `x-ms-retry-after-ms` header names: a decimal number of
/// milliseconds (`"300"`, `"12.5"`). `None` for anything else (negative,
/// not a number, or too large for a [`Duration`]).
pub(crate) fn retry_after_ms(header: &str) -> Option<Duration> {
    let ms: f64 = header.trim().parse().ok()?;
    if !ms.is_finite() || ms < 0.0 {
        return None;
    }
    Duration::try_from_secs_f64(ms / 1000.0).ok()
}

/// The request units an `x-ms-request-charge` header names: a decimal
/// number (`"1"`, `"5.71"`). `None` for anything else (negative, or not a
/// finite number).
pub(crate) fn request_charge(header: &str) -> Option<f64> {
    let units: f64 = header.trim().parse().ok()?;
    (units.is_finite() && units >= 0.0).then_some(units)
}

impl From<ServiceFailure> for Error {
    fn from(f: ServiceFailure) -> Error {
        Error::Service {
            status: f.status,
            code: f.code,
            message: f.message,
            request_id: f.request_id,
            retry_after: f.retry_after,
        }
    }
}

/// Extracts `(code, message)` from an error body in any of the service's forms.
pub(crate) fn error_from_body(body: &[u8]) -> (Option<String>, Option<String>) {
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(body) {
        let inner = json
            .get("odata.error")
            .or_else(|| json.get("error"))
            .or_else(|| json.get("Error"))
            .unwrap_or(&json);
        let code = inner
            .get("code")
            .or_else(|| inner.get("Code"))
            .and_then(|c| c.as_str())
            .map(str::to_owned);
        let message = inner.get("message").or_else(|| inner.get("Message")).and_then(|m| {
            m.as_str()
                .or_else(|| m.get("value").and_then(|v| v.as_str()))
                .map(str::to_owned)
        });
        return (code, message);
    }
    // XML: `<Error><Code>..</Code><Message>..</Message></Error>` (storage) or
    // `<error><code>..</code><message xml:lang="en-US">..</message></error>` (OData).
    let text = String::from_utf8_lossy(body);
    let tag = |name: &str| -> Option<String> {
        let lower = name.to_ascii_lowercase();
        [name, lower.as_str()].iter().find_map(|n| {
            let mut from = 0;
            while let Some(at) = text[from..].find(&format!("<{n}")) {
                let after = from + at + 1 + n.len();
                match text[after..].chars().next() {
                    Some('>') | Some(' ') => {
                        let start = after + text[after..].find('>')? + 1;
                        let end = start + text[start..].find(&format!("</{n}>"))?;
                        return Some(text[start..end].trim().to_owned());
                    }
                    _ => from = after,
                }
            }
            None
        })
    };
    (tag("Code"), tag("Message"))
}

/// Whether an attempt that failed may be sent again: an error answer
/// (`failure`) when it is transient, except to a table write, which the
/// store classifies; no answer when the request is not a table write or
/// never left (`never_sent`: the connection could not be made).
pub(crate) fn retry_verdict(table_write: bool, failure: Option<&ServiceFailure>, never_sent: bool) -> bool {
    match failure {
        Some(_) if table_write => false,
        Some(failure) => failure.is_transient(),
        None => !table_write || never_sent,
    }
}

/// What a request cut short by the policy's deadline says.
pub(crate) fn deadline_passed_message(deadline: Duration, attempts: u32) -> String {
    format!("the request did not complete within the retry policy's deadline of {deadline:?} ({attempts} attempts)")
}
