//! The HTTP side: the reqwest client, our retry policy, the policy that turns
//! the service's error answers into [`ServiceFailure`], and the mapping of
//! `azure_core` errors to [`Error`].

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use azure_core::error::ErrorKind;
use azure_core::headers::{HeaderName, Headers, CLIENT_REQUEST_ID, ERROR_CODE};
use azure_core::{ClientOptions, Context, Policy, PolicyResult, Request, RetryOptions, StatusCode, TransportOptions};
use azure_storage::clients::ServiceType;

use crate::backend::retry::RetryPolicy;
use crate::error::{redact, Error};
use crate::value::Guid;

/// Idle pooled connections are dropped before Azurite's 5 s keep-alive closes them.
pub(super) const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(3);
/// The header carrying the service's id of a request, for its logs.
pub(crate) const REQUEST_ID: &str = "x-ms-request-id";

/// A non-success answer of the service, carried through `azure_core` as the
/// inner error of an [`azure_core::Error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceFailure {
    pub(crate) status: u16,
    pub(crate) code: String,
    pub(crate) message: String,
    /// The service's `x-ms-request-id`, when the answer carried one.
    pub(crate) request_id: Option<String>,
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
    /// Reads the error code and message from the headers (`x-ms-error-code`)
    /// and the body (`odata.error` JSON, a plain JSON error, or the XML form).
    pub(crate) fn from_parts(status: u16, headers: Option<&Headers>, body: &[u8]) -> ServiceFailure {
        let header = |name: &HeaderName| headers.and_then(|h| h.get_optional_string(name));
        ServiceFailure::from_answer(
            status,
            header(&ERROR_CODE),
            header(&HeaderName::from_static(REQUEST_ID)),
            body,
        )
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
            StatusCode::try_from(status)
                .map(|s| s.canonical_reason().to_owned())
                .unwrap_or_else(|_| format!("HTTP {status}"))
        });
        ServiceFailure {
            status,
            code,
            message,
            request_id: request_id.filter(|id| !id.is_empty()),
        }
    }

    /// Whether a retry may help: 408, 500, 502, 503 and 504.
    fn is_transient(&self) -> bool {
        matches!(self.status, 408 | 500 | 502 | 503 | 504)
    }
}

impl From<ServiceFailure> for Error {
    fn from(f: ServiceFailure) -> Error {
        Error::Service {
            status: f.status,
            code: f.code,
            message: f.message,
            request_id: f.request_id,
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

/// The last policy before the transport: a non-success response becomes an
/// error that carries the service's status, code and message.
#[derive(Debug)]
struct CaptureServiceErrors;

#[async_trait::async_trait]
impl Policy for CaptureServiceErrors {
    async fn send(&self, ctx: &Context, request: &mut Request, next: &[Arc<dyn Policy>]) -> PolicyResult {
        let response = next[0].send(ctx, request, &next[1..]).await?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let (status, headers, body) = response.deconstruct();
        let body = body.collect().await?;
        let failure = ServiceFailure::from_parts(u16::from(status), Some(&headers), &body);
        let kind = ErrorKind::http_response(status, Some(failure.code.clone()).filter(|c| !c.is_empty()));
        let message = failure.to_string();
        Err(azure_core::Error::full(kind, failure, message))
    }
}

/// The first policy of the pipeline: retries transient failures (408, 5xx,
/// transport errors including time-outs) as the [`RetryPolicy`] says, and
/// holds the request and its retries to the policy's deadline.
///
/// A table write is retried here only when its attempt never left (the
/// connection could not be made): any other failure of a write goes back to
/// the store, which retries it with its write token and settles an answer
/// left in doubt by reading the row back (see [`Tables::with_retry`](crate::Tables::with_retry)).
/// Reads, and blob requests, are retried here as the policy allows.
#[derive(Debug)]
struct BoundedRetry {
    policy: RetryPolicy,
}

#[async_trait::async_trait]
impl Policy for BoundedRetry {
    async fn send(&self, ctx: &Context, request: &mut Request, next: &[Arc<dyn Policy>]) -> PolicyResult {
        let start = Instant::now();
        // Creating or deleting a table is safe to repeat (the store tolerates
        // `TableAlreadyExists`); an entity write is not.
        let table_write = matches!(ctx.get::<ServiceType>(), Some(ServiceType::Table))
            && is_table_write(request.method().as_ref(), request.url());
        let mut attempts = 0;
        loop {
            attempts += 1;
            let attempt = next[0].send(ctx, request, &next[1..]);
            let result = match self.policy.deadline() {
                None => attempt.await,
                Some(deadline) => match tokio::time::timeout(deadline.saturating_sub(start.elapsed()), attempt).await {
                    Ok(result) => result,
                    Err(_) => return Err(deadline_passed(deadline, attempts)),
                },
            };
            let error = match result {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            let transient = match service_failure(&error) {
                None if !table_write && !matches!(error.kind(), ErrorKind::Io) => false,
                failure => retry_verdict(table_write, failure, never_sent(&error)),
            };
            if !wait_to_retry(&self.policy, transient, attempts, start, &error).await {
                return Err(error);
            }
        }
    }
}

/// After attempt `attempts` of a request started at `start` failed with
/// `error`: when the failure is `transient` and the policy allows another
/// attempt, logs it, waits the policy's delay and returns true.
pub(crate) async fn wait_to_retry(
    policy: &RetryPolicy,
    transient: bool,
    attempts: u32,
    start: Instant,
    error: &(dyn fmt::Display + Sync),
) -> bool {
    let Some(delay) = transient
        .then(|| policy.next_delay(attempts, start.elapsed()))
        .flatten()
    else {
        return false;
    };
    tracing::debug!(
        attempt = attempts,
        ?delay,
        error = %redact(&error.to_string()),
        "retrying a transient storage failure"
    );
    tokio::time::sleep(delay).await;
    true
}

/// Whether a request to the table service with `method` to `url` writes
/// entities: anything but a read, and not a table's creation or deletion
/// (safe to repeat: the store tolerates `TableAlreadyExists`).
pub(crate) fn is_table_write(method: &str, url: &azure_core::Url) -> bool {
    !matches!(method, "GET" | "HEAD")
        && !url
            .path_segments()
            .and_then(|mut segments| segments.next_back())
            .is_some_and(|last| last.starts_with("Tables"))
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

/// Whether the attempt that failed with `error` never left: the connection
/// could not be made.
fn never_sent(error: &azure_core::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = error.get_ref().map(|e| e as _);
    while let Some(e) = current {
        if e.downcast_ref::<reqwest::Error>()
            .is_some_and(reqwest::Error::is_connect)
        {
            return true;
        }
        current = match e.downcast_ref::<azure_core::Error>() {
            Some(inner) => inner.get_ref().map(|e| e as _),
            None => e.source(),
        };
    }
    false
}

/// The error of a request cut short by the policy's deadline.
fn deadline_passed(deadline: Duration, attempts: u32) -> azure_core::Error {
    azure_core::Error::message(ErrorKind::Io, deadline_passed_message(deadline, attempts))
}

/// What a request cut short by the policy's deadline says.
pub(crate) fn deadline_passed_message(deadline: Duration, attempts: u32) -> String {
    format!("the request did not complete within the retry policy's deadline of {deadline:?} ({attempts} attempts)")
}

/// The reqwest client: the policy's timeouts, no transparent decompression,
/// and `roots` trusted beside the usual certificate authorities.
pub(crate) fn http_client(
    policy: &RetryPolicy,
    roots: &[rustls_pki_types::CertificateDer<'static>],
) -> Result<reqwest::Client, Error> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(policy.connect_timeout())
        .timeout(policy.request_timeout())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .no_gzip()
        .tcp_nodelay(true);
    for root in roots {
        let root = reqwest::Certificate::from_der(root)
            .map_err(|e| Error::config("trusted certificates: a certificate cannot be read").with_source(e))?;
        builder = builder.add_root_certificate(root);
    }
    builder
        .build()
        .map_err(|e| Error::config("cannot build the HTTP client").with_source(e))
}

/// Client options: our transport, our retry policy, the crate's retry disabled,
/// and our error capture right before the transport.
pub(crate) fn client_options(client: reqwest::Client, policy: RetryPolicy) -> ClientOptions {
    let mut options = ClientOptions::new(TransportOptions::new(Arc::new(client))).retry(RetryOptions::none());
    options.per_call_policies_mut().push(Arc::new(ClientRequestId));
    options.per_call_policies_mut().push(Arc::new(BoundedRetry { policy }));
    options.per_retry_policies_mut().push(Arc::new(CaptureServiceErrors));
    options
}

/// The [`ServiceFailure`] inside an `azure_core` error, searching through
/// wrapped errors and their sources.
pub(crate) fn service_failure(error: &azure_core::Error) -> Option<&ServiceFailure> {
    let mut current: &(dyn std::error::Error + 'static) = error.get_ref()?;
    loop {
        if let Some(f) = current.downcast_ref::<ServiceFailure>() {
            return Some(f);
        }
        if let Some(inner) = current.downcast_ref::<azure_core::Error>() {
            if let Some(next) = inner.get_ref() {
                current = next;
                continue;
            }
        }
        current = current.source()?;
    }
}

/// Maps an `azure_core` error to ours: a service answer to [`Error::Service`],
/// an answer that cannot be read to [`Error::MalformedResponse`], a token
/// credential's failure to [`Error::Credential`], a request that could not be
/// built here to [`Error::Encode`], anything else (connection, TLS,
/// time-out) to [`Error::Transport`]. The `azure_core` error becomes the
/// source, with the secrets of the URL it names (a SAS) redacted.
pub(crate) fn map_error(mut error: azure_core::Error) -> Error {
    if let Some(f) = service_failure(&error) {
        return f.clone().into();
    }
    if let ErrorKind::HttpResponse { status, error_code } = error.kind() {
        return Error::Service {
            status: u16::from(*status),
            code: error_code.clone().unwrap_or_default(),
            message: redact(&error.to_string()).into_owned(),
            request_id: None,
        };
    }
    redact_urls(&mut error);
    let built_here = reqwest_error(&error).is_some_and(reqwest::Error::is_builder);
    let variant = match error.kind() {
        ErrorKind::DataConversion => Error::malformed_response(""),
        ErrorKind::Credential => Error::credential(""),
        _ if built_here => Error::encode(""),
        _ => Error::transport(""),
    };
    // An error made of another alone prints it as its own text: keep the one.
    let repeats_its_source = error
        .get_ref()
        .is_some_and(|inner| inner.to_string() == error.to_string());
    match (repeats_its_source, error) {
        (true, error) => match error.into_inner() {
            Ok(inner) => variant.with_source(inner),
            Err(error) => variant.with_source(error),
        },
        (false, error) => variant.with_source(error),
    }
}

/// Maps the `azure_core` error of a step taken here before sending (a URL
/// or a request built from the endpoint and the names): [`Error::Encode`].
pub(crate) fn local_error(error: azure_core::Error) -> Error {
    Error::encode("").with_source(error)
}

/// The reqwest error an `azure_core` error wraps, searching through wrapped
/// `azure_core` errors.
fn reqwest_error(error: &azure_core::Error) -> Option<&reqwest::Error> {
    match error.downcast_ref::<reqwest::Error>() {
        Some(e) => Some(e),
        None => reqwest_error(error.downcast_ref::<azure_core::Error>()?),
    }
}

/// Redacts, in place, the secrets of the URL a wrapped reqwest error prints
/// (the request's URL carries a SAS's parameters).
fn redact_urls(error: &mut azure_core::Error) {
    if error.downcast_ref::<reqwest::Error>().is_some() {
        if let Some(url) = error.downcast_mut::<reqwest::Error>().and_then(reqwest::Error::url_mut) {
            if let Some(query) = url.query().map(|q| redact(q).into_owned()) {
                url.set_query(Some(&query));
            }
        }
    } else if let Some(inner) = error.downcast_mut::<azure_core::Error>() {
        redact_urls(inner);
    }
}

/// The first policy of the pipeline: gives each request an
/// `x-ms-client-request-id` (a fresh random id) unless it has one. It runs
/// once per call, so the retries of a request send the same id; the service
/// logs it beside its own `x-ms-request-id`.
#[derive(Debug)]
struct ClientRequestId;

#[async_trait::async_trait]
impl Policy for ClientRequestId {
    async fn send(&self, ctx: &Context, request: &mut Request, next: &[Arc<dyn Policy>]) -> PolicyResult {
        if request.headers().get_optional_str(&CLIENT_REQUEST_ID).is_none() {
            request.insert_header(CLIENT_REQUEST_ID, Guid::new_random().to_string());
        }
        next[0].send(ctx, request, &next[1..]).await
    }
}
