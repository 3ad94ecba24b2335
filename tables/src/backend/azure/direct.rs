//! Entity requests sent straight through `hyper`, for a connection
//! authorised by the account key or a shared access signature: signed here
//! with a key schedule prepared once, headers of static values, the answer's
//! headers kept as `hyper` read them, and the retries, the deadline and the
//! capture of service errors of the pipeline ([`super::http`]) applied by the
//! same rules. A token credential's requests go through the pipeline, and
//! so do every connection's when the environment names a proxy
//! ([`proxy_named`]): the pipeline's `reqwest` client is the one that uses it.
//!
//! What is sent is what the pipeline sends: the same URL, headers
//! (`x-ms-date`, `x-ms-version`, `x-ms-client-request-id`, `Content-Length`)
//! and Shared Key signature (`VERB`, `Content-MD5`, `Content-Type`, the date
//! and `/{account}{path}`), or the signature's parameters added to the query,
//! over the same TLS (rustls with the public roots of `webpki-roots` and the
//! connection's own), with the policy's connect and per-attempt timeouts.
//! Sending through `hyper` itself spares each request the three URL parses
//! `reqwest` makes of it (its redirect policy, its cookie layer and its
//! answer), about half the client's own work on a point operation.

use std::sync::Arc;
use std::time::Instant;

use azure_core::Url;
use base64::Engine as _;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use rustls_pki_types::CertificateDer;
use sha2::Sha256;

use super::connection_string::Credentials;
use super::http::{
    deadline_passed_message, retry_verdict, wait_to_retry, ServiceFailure, POOL_IDLE_TIMEOUT, REQUEST_ID,
};
use crate::backend::retry::RetryPolicy;
use crate::error::{redact, BoxError, Error, Result};
use crate::value::{DateTime, Guid};

/// The pooled HTTP/1.1 client: plain TCP or rustls, by the URL's scheme.
type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The service version the crate family sends.
const VERSION: HeaderValue = HeaderValue::from_static("2022-11-02");
const MS_DATE: HeaderName = HeaderName::from_static("x-ms-date");
const MS_VERSION: HeaderName = HeaderName::from_static("x-ms-version");
const CLIENT_REQUEST_ID: HeaderName = HeaderName::from_static("x-ms-client-request-id");
const ERROR_CODE: &str = "x-ms-error-code";

/// How a request is authorised.
#[derive(Clone)]
enum Signer {
    /// Shared Key: the account and the HMAC-SHA256 keyed with the account key.
    Key { account: String, mac: Hmac<Sha256> },
    /// A shared access signature's parameters, added to every URL.
    Sas(Vec<(String, String)>),
}

/// Sends entity requests with its own pooled client, the connection's signer and retry policy.
#[derive(Clone)]
pub(super) struct Direct {
    http: HttpClient,
    signer: Signer,
    policy: RetryPolicy,
}

/// An answer: its headers and its body.
pub(super) struct Answer {
    pub(super) headers: HeaderMap,
    pub(super) body: Vec<u8>,
}

impl Answer {
    /// The value of the header `name`, if it is present and text.
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The service's `x-ms-request-id` of this answer.
    pub(super) fn request_id(&self) -> Option<&str> {
        self.header(REQUEST_ID)
    }
}

impl Direct {
    /// The sender for `credentials` of `account`, trusting `roots` beside the public roots.
    pub(super) fn new(
        account: &str,
        credentials: &Credentials,
        policy: RetryPolicy,
        roots: &[CertificateDer<'static>],
    ) -> Result<Direct> {
        let http = http_client(&policy, roots)?;
        let signer = match credentials {
            Credentials::AccountKey(key) => {
                let key = base64::engine::general_purpose::STANDARD
                    .decode(key.trim())
                    .map_err(|e| Error::config("connection string: AccountKey is not base64").with_source(e))?;
                let mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|e| {
                    Error::config("connection string: AccountKey cannot key HMAC-SHA256").with_source(e)
                })?;
                Signer::Key {
                    account: account.to_owned(),
                    mac,
                }
            }
            Credentials::SharedAccessSignature(sas) => {
                let sas = sas.trim_start_matches('?');
                let parsed = Url::parse(&format!("http://sas.invalid/?{sas}")).map_err(|e| {
                    Error::config("connection string: SharedAccessSignature cannot be read").with_source(e)
                })?;
                Signer::Sas(parsed.query_pairs().into_owned().collect())
            }
        };
        Ok(Direct { http, signer, policy })
    }

    /// Sends one request, retried as the policy allows (a table write only
    /// when its attempt never left), and returns its answer, or the
    /// service's error answer as [`Error::Service`].
    pub(super) async fn send(
        &self,
        method: reqwest::Method,
        mut url: Url,
        mut headers: HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<Answer> {
        let table_write = super::http::is_table_write(method.as_str(), &url);
        let date = http_date(DateTime::now());
        headers.insert(MS_VERSION, VERSION);
        headers.insert(CLIENT_REQUEST_ID, header_value(&Guid::new_random().to_string())?);
        match &self.signer {
            Signer::Key { account, mac } => {
                let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
                let mut mac = mac.clone();
                for part in [
                    method.as_str(),
                    "\n\n",
                    content_type,
                    "\n",
                    &date,
                    "\n/",
                    account,
                    url.path(),
                ] {
                    mac.update(part.as_bytes());
                }
                let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
                headers.insert(
                    AUTHORIZATION,
                    header_value(&format!("SharedKey {account}:{signature}"))?,
                );
            }
            // The URLs built here never carry a signature of their own.
            Signer::Sas(pairs) => {
                url.query_pairs_mut().extend_pairs(pairs);
            }
        }
        headers.insert(MS_DATE, header_value(&date)?);
        let uri = hyper::Uri::try_from(url.as_str())
            .map_err(|e| Error::encode("a request URL that HTTP cannot carry").with_source(e))?;
        // Bytes: each attempt's copy of the request shares them.
        let body = match body {
            Some(body) => Bytes::from(body),
            None => {
                headers.insert(CONTENT_LENGTH, HeaderValue::from_static("0"));
                Bytes::new()
            }
        };

        let start = Instant::now();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut request = hyper::Request::new(Full::new(body.clone()));
            *request.method_mut() = method.clone();
            *request.uri_mut() = uri.clone();
            *request.headers_mut() = headers.clone();
            let attempt = self.attempt(request);
            let result = match self.policy.deadline() {
                None => attempt.await,
                Some(deadline) => match tokio::time::timeout(deadline.saturating_sub(start.elapsed()), attempt).await {
                    Ok(result) => result,
                    Err(_) => return Err(Error::transport(deadline_passed_message(deadline, attempts))),
                },
            };
            let (transient, error) = match result {
                Ok(answer) => return Ok(answer),
                Err(Failed::Service(failure)) => {
                    let verdict = retry_verdict(table_write, Some(&failure), false);
                    (verdict, Error::from(failure))
                }
                Err(Failed::Transport { what, connect, source }) => {
                    // The URL names the request; a SAS's secrets never show.
                    let what = format!("{what} ({method} {})", redact(url.as_str()));
                    // A connection never made: the request never left.
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
            if !wait_to_retry(&self.policy, transient, attempts, start, &error).await {
                return Err(error);
            }
        }
    }

    /// One attempt, within the policy's time for one: the answer, or what failed.
    async fn attempt(&self, request: hyper::Request<Full<Bytes>>) -> std::result::Result<Answer, Failed> {
        let limit = self.policy.request_timeout();
        let exchange = async {
            let response = self.http.request(request).await.map_err(|e| {
                let connect = e.is_connect();
                Failed::Transport {
                    what: (if connect { "cannot connect" } else { "no answer" }).into(),
                    connect,
                    source: Some(Box::new(e)),
                }
            })?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await.map_err(|e| Failed::Transport {
                what: "the answer was cut short".into(),
                connect: false,
                source: Some(Box::new(e)),
            })?;
            Ok((parts, body.to_bytes()))
        };
        let (parts, body) = tokio::time::timeout(limit, exchange)
            .await
            .map_err(|_| Failed::Transport {
                what: format!("no whole answer within the retry policy's {limit:?} per attempt"),
                connect: false,
                source: None,
            })??;
        let answer = Answer {
            headers: parts.headers,
            body: Vec::from(body),
        };
        if parts.status.is_success() {
            return Ok(answer);
        }
        Err(Failed::Service(ServiceFailure::from_answer(
            parts.status.as_u16(),
            answer.header(ERROR_CODE).map(str::to_owned),
            answer.request_id().map(str::to_owned),
            &answer.body,
        )))
    }
}

/// What made an attempt fail.
enum Failed {
    /// The service answered with an error.
    Service(ServiceFailure),
    /// No whole answer: the connection (`connect`: it could not be made), a
    /// time-out, or the answer's body cut short.
    Transport {
        what: String,
        connect: bool,
        source: Option<BoxError>,
    },
}

/// Whether the environment names a proxy (`HTTP_PROXY`, `HTTPS_PROXY` or
/// `ALL_PROXY`, in either case), as `lookup` reads it: entity requests then
/// go through the pipeline's `reqwest` client, which sends through it.
pub(super) fn proxy_named(lookup: impl Fn(&str) -> Option<String>) -> bool {
    [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ]
    .iter()
    .any(|name| lookup(name).is_some_and(|value| !value.trim().is_empty()))
}

/// The client: HTTP/1.1 over TCP without Nagle's delay, or over rustls with
/// the public roots and `roots`; the policy's connect timeout; idle
/// connections closed as the pipeline's client closes them.
fn http_client(policy: &RetryPolicy, roots: &[CertificateDer<'static>]) -> Result<HttpClient> {
    let mut trusted = rustls::RootCertStore::empty();
    trusted.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for root in roots {
        trusted
            .add(root.clone())
            .map_err(|e| Error::config("trusted certificates: a certificate cannot be a root").with_source(e))?;
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::config("cannot set up TLS").with_source(e))?
        .with_root_certificates(trusted)
        .with_no_client_auth();
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    tcp.set_connect_timeout(Some(policy.connect_timeout()));
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    Ok(Client::builder(TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .pool_timer(TokioTimer::new())
        .build(connector))
}

/// `at` as HTTP writes a date (RFC 1123, GMT): `Tue, 02 Dec 2026 14:05:09 GMT`.
fn http_date(at: DateTime) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
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

fn header_value(text: &str) -> Result<HeaderValue> {
    HeaderValue::from_str(text).map_err(|e| Error::encode("a header value that HTTP cannot carry").with_source(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_written_as_http_writes_them() {
        let at = |text: &str| DateTime::try_parse(text).expect("a date");
        assert_eq!(http_date(at("2026-12-02T14:05:09Z")), "Wed, 02 Dec 2026 14:05:09 GMT");
        assert_eq!(http_date(at("2000-02-29T00:00:00Z")), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(
            http_date(at("1999-01-01T23:59:59.9999999Z")),
            "Fri, 01 Jan 1999 23:59:59 GMT"
        );
    }

    #[test]
    fn a_proxy_named_by_the_environment_is_seen_in_either_case() {
        let only =
            |name: &'static str, value: &'static str| move |asked: &str| (asked == name).then(|| value.to_owned());
        assert!(!proxy_named(|_| None));
        assert!(proxy_named(only("HTTPS_PROXY", "http://proxy:3128")));
        assert!(proxy_named(only("http_proxy", "http://proxy:3128")));
        assert!(proxy_named(only("all_proxy", "socks5://proxy:1080")));
        assert!(!proxy_named(only("HTTPS_PROXY", "  ")), "an empty value names no proxy");
        assert!(!proxy_named(only("NO_PROXY", "*")));
    }

    #[test]
    fn a_key_that_is_not_base64_is_refused_by_name() {
        let refused = Direct::new(
            "acct",
            &Credentials::AccountKey("not base64!".into()),
            RetryPolicy::default(),
            &[],
        );
        let Err(e) = refused else {
            panic!("a key that is not base64 was taken")
        };
        assert!(e.to_string().contains("AccountKey"), "{e}");
    }
}
