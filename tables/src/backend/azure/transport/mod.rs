//! The one transport of the Azure backends, and what it logs.
//!
//! Every request of an [`AzureConnection`](super::AzureConnection)
//! (entities, transactions, queries, table management, blobs, leases) goes
//! through one pooled `hyper` client (one TLS set-up, one proxy rule, a
//! connect timeout that covers the TLS handshake), one retry loop (the
//! connection's [`RetryPolicy`]) and one signer for the
//! connection's credential, applied to each request right before `hyper`
//! takes it. No dependency sees an `Authorization` header or a SAS URL, so
//! none can log one.
//!
//! Telemetry, on the target [`TARGET`] (`unified_tables::http`):
//!
//! - one DEBUG span `http.request` per attempt, with
//!   `http.request.method`, `resource` (`entity`, `batch`, `query`,
//!   `table`, `blob`, `lease`, `container`, `account`), `server.address`,
//!   `server.port`, `url.template` (the endpoint and the table or container;
//!   keys, blob names and query values left out as `…`, and never a SAS's
//!   parameters), `http.request.resend_count` (0 for the first
//!   attempt), and once answered `http.response.status_code`, or
//!   `error.type` when the attempt failed (the service's error code, or
//!   `connect`, `timeout`, `cut_short`, `no_answer`). A read of an entity
//!   or a blob that does not exist is answered 404: that miss is an answer,
//!   not a failure, and carries no `error.type`;
//! - a DEBUG event `retrying` in that span when the attempt is sent again,
//!   with the delay before the next (`backoff_ms`: the backoff, or the
//!   answer's `x-ms-retry-after-ms` when that is longer) and the failure's
//!   `error.type` (as on the span);
//! - a TRACE event `answered` in that span with the status, the time the
//!   attempt took (`elapsed_us`) and the answer's length (`body_bytes`; a
//!   streamed blob's is its `Content-Length`).
//!
//! An answer's `x-ms-request-charge` (Cosmos DB's request units) is added
//! to the request's and the operation's charge (see [`crate::telemetry`]).
//!
//! No span or event carries a header value, a key, a signature or a token.

mod connector;
#[cfg(feature = "entra-id")]
mod identity_client;
mod message;
mod sign;
#[cfg(feature = "entra-id")]
pub(crate) mod token;
mod url_text;
pub(crate) mod wire;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_LENGTH};
use hyper::Uri;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use rustls_pki_types::CertificateDer;
use tracing::field::Empty;
use tracing::Instrument as _;

use self::connector::Connector;
#[cfg(feature = "entra-id")]
#[cfg_attr(docsrs, doc(cfg(feature = "entra-id")))]
pub use self::identity_client::IdentityHttpClient;
pub(crate) use self::message::{header, Answer, Outgoing, Resource, Service, Streamed};
pub(crate) use self::sign::Signer;
use self::sign::Signing;
use self::url_text::{Printed, Template};
use self::wire::{http_date, query_string, Endpoint};
use super::http::{deadline_passed_message, request_charge, retry_verdict, ServiceFailure, REQUEST_ID};
use crate::backend::retry::RetryPolicy;
use crate::error::{BoxError, Error, Result};
use crate::service::{REQUEST_CHARGE_HEADER, RETRY_AFTER_MS_HEADER};
use crate::value::{DateTime, Guid};

/// The `tracing` target of the transport's spans and events.
pub const TARGET: &str = "unified_tables::http";

/// Idle pooled connections are dropped before Azurite's 5 s keep-alive closes them.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(3);
/// The service version every request asks for.
const VERSION: HeaderValue = HeaderValue::from_static("2022-11-02");
const MS_DATE: HeaderName = HeaderName::from_static("x-ms-date");
const MS_VERSION: HeaderName = HeaderName::from_static("x-ms-version");
const CLIENT_REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-client-request-id");
const ERROR_CODE: &str = "x-ms-error-code";

/// The pooled HTTP/1.1 client every request of a connection takes, and its connector.
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: Client<Connector, Full<Bytes>>,
    connector: Connector,
}

/// The client: the policy's connect timeout (TCP, proxy and TLS), `roots`
/// trusted beside the public roots, idle connections closed after 3 s.
pub(crate) fn http_client(policy: &RetryPolicy, roots: &[CertificateDer<'static>]) -> Result<HttpClient> {
    let connector = Connector::new(roots, policy.connect_timeout())?;
    let client = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .pool_timer(TokioTimer::new())
        .build(connector.clone());
    Ok(HttpClient { client, connector })
}

/// Sends the requests to one endpoint: the connection's client, signer and policy.
#[derive(Clone)]
pub(crate) struct Transport {
    inner: Arc<Inner>,
}

struct Inner {
    client: HttpClient,
    signer: Signer,
    policy: RetryPolicy,
    endpoint: Endpoint,
    /// A forward proxy's credentials, when one with credentials takes this endpoint's requests.
    proxy_authorization: Option<HeaderValue>,
}

/// How an answer's body is taken.
enum Take {
    Whole,
    Streamed,
}

enum Received {
    Whole(Bytes),
    Streamed(Incoming, tokio::time::Instant),
}

/// What made an attempt fail.
enum Failed {
    /// The service answered with an error.
    Service(ServiceFailure),
    /// No whole answer: the connection (`connect`: it could not be made), a
    /// time-out, or the answer's body cut short.
    Transport {
        what: String,
        kind: &'static str,
        connect: bool,
        source: Option<BoxError>,
    },
}

impl Transport {
    pub(crate) fn new(client: HttpClient, signer: Signer, policy: RetryPolicy, endpoint: &str) -> Result<Transport> {
        let endpoint = Endpoint::parse(endpoint)?;
        let proxy_authorization = endpoint
            .base
            .parse::<Uri>()
            .ok()
            .and_then(|uri| client.connector.forward_proxy_authorization(&uri));
        Ok(Transport {
            inner: Arc::new(Inner {
                client,
                signer,
                policy,
                endpoint,
                proxy_authorization,
            }),
        })
    }

    /// Sends `out`, retried as the policy allows (a table write only when
    /// its attempt never left), and returns its answer, or the service's
    /// error answer as [`Error::Service`].
    pub(crate) async fn send(&self, out: Outgoing) -> Result<Answer> {
        match self.exchange(out, Take::Whole).await? {
            (headers, Received::Whole(body)) => Ok(Answer {
                headers,
                body: Vec::from(body),
            }),
            (_, Received::Streamed(..)) => unreachable!("a whole answer was asked for"),
        }
    }

    /// [`send`](Self::send), the body of a successful answer read as it arrives.
    pub(crate) async fn send_streamed(&self, out: Outgoing) -> Result<Streamed> {
        match self.exchange(out, Take::Streamed).await? {
            (headers, Received::Streamed(body, until)) => Ok(Streamed {
                headers,
                body,
                until,
                limit: self.inner.policy.request_timeout(),
            }),
            (_, Received::Whole(_)) => unreachable!("a streamed answer was asked for"),
        }
    }

    async fn exchange(&self, mut out: Outgoing, take: Take) -> Result<(HeaderMap, Received)> {
        let inner = &*self.inner;
        let table_write = out.is_table_write();
        if out.path.is_empty() && inner.endpoint.path.is_empty() {
            // The account itself, on an endpoint of its own host.
            out.path.push('/');
        }
        let path = format!("{}{}", inner.endpoint.path, out.path);
        let headers = &mut out.headers;
        headers.insert(MS_VERSION, VERSION);
        if !headers.contains_key(CLIENT_REQUEST_ID) {
            headers.insert(CLIENT_REQUEST_ID, header_value(&Guid::new_random().to_string())?);
        }
        headers.insert(MS_DATE, header_value(&http_date(DateTime::now()))?);
        headers.insert(CONTENT_LENGTH, HeaderValue::from(out.body.len()));
        if let Some(auth) = &inner.proxy_authorization {
            headers.insert(hyper::header::PROXY_AUTHORIZATION, auth.clone());
        }
        let signing = Signing {
            service: out.resource.service(),
            method: out.method.as_str(),
            path: &path,
            query: &out.query,
            content_length: out.body.len(),
        };
        inner.signer.authorize(&signing, &mut out.headers).await?;
        let mut url = format!("{}{}", inner.endpoint.base, out.path);
        let query = query_string(&out.query);
        let sas = inner.signer.sas_query();
        if !query.is_empty() || sas.is_some() {
            url.push('?');
            url.push_str(&query);
        }
        if let Some(sas) = sas {
            if !query.is_empty() {
                url.push('&');
            }
            url.push_str(sas);
        }
        let uri =
            Uri::try_from(url).map_err(|e| Error::encode("a request URL that HTTP cannot carry").with_source(e))?;
        let printed = Printed {
            endpoint: &inner.endpoint.base,
            path: &out.path,
            query: &query,
        };
        let template = Template {
            endpoint: &inner.endpoint.base,
            path: &out.path,
            query: &out.query,
        };

        let start = Instant::now();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let span = tracing::debug_span!(
                target: TARGET,
                "http.request",
                http.request.method = %out.method,
                resource = out.resource.name(),
                server.address = %inner.endpoint.host,
                server.port = inner.endpoint.port,
                url.template = %template,
                http.request.resend_count = attempts - 1,
                http.response.status_code = Empty,
                error.type = Empty,
            );
            let mut request = hyper::Request::new(Full::new(out.body.clone()));
            *request.method_mut() = out.method.clone();
            *request.uri_mut() = uri.clone();
            *request.headers_mut() = out.headers.clone();
            let attempt = self.attempt(request, &take, &span).instrument(span.clone());
            let result = match inner.policy.deadline() {
                None => attempt.await,
                Some(deadline) => match tokio::time::timeout(deadline.saturating_sub(start.elapsed()), attempt).await {
                    Ok(result) => result,
                    Err(_) => {
                        span.record("error.type", "deadline");
                        return Err(Error::transport(deadline_passed_message(deadline, attempts)));
                    }
                },
            };
            let (transient, error) = match result {
                Ok(answer) => {
                    let received = match &answer.1 {
                        Received::Whole(body) => body.len(),
                        Received::Streamed(..) => 0,
                    };
                    crate::telemetry::bytes(out.body.len(), received, out.resource.name());
                    return Ok(answer);
                }
                Err(Failed::Service(failure)) => {
                    let absent = failure.status == 404 && out.absent == Some(failure.code.as_str());
                    if !absent {
                        span.record("error.type", failure.code.as_str());
                    }
                    (retry_verdict(table_write, Some(&failure), false), Error::from(failure))
                }
                Err(Failed::Transport {
                    what,
                    kind,
                    connect,
                    source,
                }) => {
                    span.record("error.type", kind);
                    // The URL names the request; a SAS's parameters are not in it.
                    let what = format!("{what} ({} {printed})", out.method);
                    // A connection never made (TCP, proxy or TLS handshake): the request never left.
                    let error = if connect {
                        Error::unreachable(what)
                    } else {
                        Error::transport(what)
                    };
                    let error = match source {
                        Some(source) => error.with_source(source),
                        None => error,
                    };
                    (retry_verdict(table_write, None, connect), error)
                }
            };
            let delay = transient
                .then(|| inner.policy.pause_after(&error, attempts, start.elapsed()))
                .flatten();
            let Some(delay) = delay else {
                return Err(error);
            };
            span.in_scope(|| {
                tracing::debug!(
                    target: TARGET,
                    attempt = attempts,
                    backoff_ms = delay.as_millis() as u64,
                    error.type = error.service_code().map_or_else(|| crate::telemetry::error_type(&error), |(_, code)| code),
                    "retrying"
                )
            });
            crate::telemetry::retry("transport");
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt, within the policy's time for one: the answer, or what failed.
    async fn attempt(
        &self,
        request: hyper::Request<Full<Bytes>>,
        take: &Take,
        span: &tracing::Span,
    ) -> std::result::Result<(HeaderMap, Received), Failed> {
        let limit = self.inner.policy.request_timeout();
        let started = Instant::now();
        let until = tokio::time::Instant::now() + limit;
        let timed_out = || Failed::Transport {
            what: format!("no whole answer within the retry policy's {limit:?} per attempt"),
            kind: "timeout",
            connect: false,
            source: None,
        };
        let response = tokio::time::timeout_at(until, self.inner.client.client.request(request))
            .await
            .map_err(|_| timed_out())?
            .map_err(|e| {
                let connect = e.is_connect();
                Failed::Transport {
                    what: (if connect { "cannot connect" } else { "no answer" }).into(),
                    kind: if connect { "connect" } else { "no_answer" },
                    connect,
                    source: Some(Box::new(e)),
                }
            })?;
        let (parts, body) = response.into_parts();
        span.record("http.response.status_code", parts.status.as_u16());
        if let Some(units) = header(&parts.headers, REQUEST_CHARGE_HEADER).and_then(request_charge) {
            crate::telemetry::request_charge(units);
        }
        let success = parts.status.is_success();
        if success && matches!(take, Take::Streamed) {
            let length = header(&parts.headers, "content-length").unwrap_or("");
            tracing::trace!(target: TARGET, status = parts.status.as_u16(), elapsed_us = started.elapsed().as_micros() as u64, body_bytes = length, "answered");
            return Ok((parts.headers, Received::Streamed(body, until)));
        }
        let body = tokio::time::timeout_at(until, body.collect())
            .await
            .map_err(|_| timed_out())?
            .map_err(|e| Failed::Transport {
                what: "the answer was cut short".into(),
                kind: "cut_short",
                connect: false,
                source: Some(Box::new(e)),
            })?
            .to_bytes();
        tracing::trace!(target: TARGET, status = parts.status.as_u16(), elapsed_us = started.elapsed().as_micros() as u64, body_bytes = body.len(), "answered");
        if success {
            return Ok((parts.headers, Received::Whole(body)));
        }
        Err(Failed::Service(
            ServiceFailure::from_answer(
                parts.status.as_u16(),
                header(&parts.headers, ERROR_CODE).map(str::to_owned),
                header(&parts.headers, REQUEST_ID).map(str::to_owned),
                &body,
            )
            .with_retry_after_header(header(&parts.headers, RETRY_AFTER_MS_HEADER)),
        ))
    }
}

fn header_value(text: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(text).map_err(|e| Error::encode("a header value that HTTP cannot carry").with_source(e))
}

#[cfg(test)]
mod tests;
