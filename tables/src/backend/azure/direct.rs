//! Entity requests sent straight through `reqwest`, for a connection
//! authorised by the account key or a shared access signature: signed here
//! with a key schedule prepared once, headers of static values, the answer's
//! headers kept as `reqwest` read them, and the retries, the deadline and the
//! capture of service errors of the pipeline ([`super::http`]) applied by the
//! same rules. A token credential's requests go through the pipeline.
//!
//! What is sent is what the pipeline sends: the same URL, headers
//! (`x-ms-date`, `x-ms-version`, `x-ms-client-request-id`, `Content-Length`)
//! and Shared Key signature (`VERB`, `Content-MD5`, `Content-Type`, the date
//! and `/{account}{path}`), or the signature's parameters added to the query.

use std::time::Instant;

use azure_core::Url;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use sha2::Sha256;

use super::connection_string::Credentials;
use super::http::{deadline_passed_message, retry_verdict, wait_to_retry, ServiceFailure, REQUEST_ID};
use crate::backend::retry::RetryPolicy;
use crate::error::{redact, Error, Result};
use crate::value::{DateTime, Guid};

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

/// Sends entity requests with the connection's client, signer and retry policy.
#[derive(Clone)]
pub(super) struct Direct {
    http: reqwest::Client,
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
    /// The sender for `credentials` of `account`.
    pub(super) fn new(
        http: reqwest::Client,
        account: &str,
        credentials: &Credentials,
        policy: RetryPolicy,
    ) -> Result<Direct> {
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
        let mut request = self.http.request(method, url).headers(headers);
        request = match body {
            // Bytes: each attempt's copy of the request shares them.
            Some(body) => request.body(bytes::Bytes::from(body)),
            None => request.header(reqwest::header::CONTENT_LENGTH, HeaderValue::from_static("0")),
        };
        let request = request.build().map_err(transport_error)?;

        let start = Instant::now();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let attempt = self.attempt(request.try_clone().expect("a body held in memory"));
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
                Err(Failed::Transport(e)) => (retry_verdict(table_write, None, e.is_connect()), transport_error(e)),
            };
            if !wait_to_retry(&self.policy, transient, attempts, start, &error).await {
                return Err(error);
            }
        }
    }

    /// One attempt: the answer, or what failed.
    async fn attempt(&self, request: reqwest::Request) -> std::result::Result<Answer, Failed> {
        let mut response = self.http.execute(request).await.map_err(Failed::Transport)?;
        let status = response.status();
        let headers = std::mem::take(response.headers_mut());
        let body = Vec::from(response.bytes().await.map_err(Failed::Transport)?);
        let answer = Answer { headers, body };
        if status.is_success() {
            return Ok(answer);
        }
        Err(Failed::Service(ServiceFailure::from_answer(
            status.as_u16(),
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
    /// No answer: the connection, a time-out, or the answer's body cut short.
    Transport(reqwest::Error),
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

/// A `reqwest` error as ours: a request that could not be built here is
/// [`Error::Encode`], anything else [`Error::Transport`], the URL it names
/// with the secrets of a SAS redacted.
fn transport_error(mut e: reqwest::Error) -> Error {
    if let Some(url) = e.url_mut() {
        if let Some(query) = url.query().map(|q| redact(q).into_owned()) {
            url.set_query(Some(&query));
        }
    }
    match e.is_builder() {
        true => Error::encode("").with_source(e),
        false => Error::transport("").with_source(e),
    }
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
    fn a_key_that_is_not_base64_is_refused_by_name() {
        let refused = Direct::new(
            reqwest::Client::new(),
            "acct",
            &Credentials::AccountKey("not base64!".into()),
            RetryPolicy::default(),
        );
        let Err(e) = refused else {
            panic!("a key that is not base64 was taken")
        };
        assert!(e.to_string().contains("AccountKey"), "{e}");
    }
}
