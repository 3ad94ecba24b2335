//! [`IdentityHttpClient`]: the crate's own transport as an `azure_core`
//! [`HttpClient`](azure_core::http::HttpClient), for the token requests of
//! `azure_identity`'s credentials.
//!
//! `azure_core` 1.x sends through reqwest unless a credential is given a
//! transport of its own; reqwest 0.13 would be a second HTTP stack with a
//! second TLS library (aws-lc-rs) and a second proxy rule, in every build
//! with the feature `entra-id`, only for a request an hour. The crate
//! depends on `azure_core` and `azure_identity` without their default
//! features instead, and gives their credentials this client: the same
//! `hyper` connector as the storage requests (rustls, the public roots and
//! any the user trusts, `HTTPS_PROXY`/`NO_PROXY`, the connect timeout of
//! [`RetryPolicy::default`](crate::RetryPolicy::default)). The credential's
//! own pipeline keeps its retry policy (it knows the token endpoints'
//! rules, e.g. the managed identity endpoint's), so this client sends each
//! attempt once.

use std::fmt;
use std::time::Duration;

use azure_core::error::{Error as CoreError, ErrorKind as CoreErrorKind};
use azure_core::http::headers::Headers;
use azure_core::http::{AsyncRawResponse, Body, ClientOptions, Request, StatusCode, Transport};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::header::{HeaderName, HeaderValue};
use hyper::Uri;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::CertificateDer;

use super::{http_client, HttpClient};
use crate::backend::retry::RetryPolicy;
use crate::error::{Error, Result};

/// How long one token request may take, its answer read whole.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);

/// The crate's HTTP client for the token requests of `azure_identity`'s
/// credentials (feature `entra-id`), so that they take the same TLS set-up,
/// roots and proxy rule as the storage requests and no second HTTP stack is
/// built.
///
/// `azure_core` 1.x, built without its default features (as this crate
/// builds it), has no HTTP client of its own: give every credential that
/// sends requests (managed identity, workload identity, client secret,
/// client assertion) [`client_options`](Self::client_options), or depend on
/// `azure_identity` with its default features, which bring reqwest for it.
/// The Azure CLI credentials send nothing and need none.
///
/// ```no_run
/// use azure_identity::{ManagedIdentityCredential, ManagedIdentityCredentialOptions};
/// use unified_tables::backend::azure::transport::IdentityHttpClient;
/// use unified_tables::backend::azure::AzureConnection;
/// use unified_tables::Tables;
///
/// let credential = ManagedIdentityCredential::new(Some(ManagedIdentityCredentialOptions {
///     client_options: IdentityHttpClient::new()?.client_options(),
///     ..Default::default()
/// }))
/// .map_err(|e| unified_tables::Error::config("the managed identity").with_source(e))?;
/// let db = Tables::connect_with(AzureConnection::with_token_credential("AccountName=myaccount", credential)?)?;
/// # let _ = db;
/// # Ok::<(), unified_tables::Error>(())
/// ```
#[derive(Clone)]
pub struct IdentityHttpClient {
    client: HttpClient,
}

impl fmt::Debug for IdentityHttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IdentityHttpClient(..)")
    }
}

impl IdentityHttpClient {
    /// The client, trusting the usual public roots.
    pub fn new() -> Result<IdentityHttpClient> {
        IdentityHttpClient::trusting(&[])
    }

    /// The client, also trusting the certificate authorities in `pem` (one
    /// or more PEM certificates): for a token endpoint behind a proxy with a
    /// certificate of its own. Text that holds no certificate is
    /// [`Error::Config`].
    pub fn with_trusted_certificates_pem(pem: &[u8]) -> Result<IdentityHttpClient> {
        let roots = CertificateDer::pem_slice_iter(pem)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::config("trusted certificates: not PEM certificates").with_source(e))?;
        if roots.is_empty() {
            return Err(Error::config(
                "trusted certificates: the PEM text holds no `BEGIN CERTIFICATE` block",
            ));
        }
        IdentityHttpClient::trusting(&roots)
    }

    fn trusting(roots: &[CertificateDer<'static>]) -> Result<IdentityHttpClient> {
        Ok(IdentityHttpClient {
            client: http_client(&RetryPolicy::default(), roots)?,
        })
    }

    /// `azure_core` client options whose transport is this client, for a
    /// credential's options (`client_options` of
    /// `ManagedIdentityCredentialOptions`, `ClientSecretCredentialOptions`,
    /// `ClientAssertionCredentialOptions`, …).
    pub fn client_options(self) -> ClientOptions {
        ClientOptions {
            transport: Some(Transport::new(std::sync::Arc::new(self))),
            ..ClientOptions::default()
        }
    }
}

fn failed(message: &'static str, source: impl std::error::Error + Send + Sync + 'static) -> CoreError {
    CoreError::with_error(CoreErrorKind::Io, source, message)
}

#[async_trait::async_trait]
impl azure_core::http::HttpClient for IdentityHttpClient {
    async fn execute_request(&self, request: &Request) -> azure_core::Result<AsyncRawResponse> {
        let body = match request.body() {
            Body::Bytes(bytes) => Bytes::copy_from_slice(bytes),
            Body::SeekableStream(_) => {
                return Err(CoreError::with_message(
                    CoreErrorKind::Other,
                    "a streamed request body; token requests have whole bodies",
                ))
            }
        };
        let uri: Uri = request
            .url()
            .as_str()
            .parse()
            .map_err(|e| failed("a token request URL that HTTP cannot carry", e))?;
        let mut outgoing = hyper::Request::new(Full::new(body));
        *outgoing.method_mut() = hyper::Method::from_bytes(request.method().as_str().as_bytes())
            .map_err(|e| failed("a token request method that HTTP cannot carry", e))?;
        for (name, value) in request.headers().iter() {
            let name = HeaderName::from_bytes(name.as_str().as_bytes())
                .map_err(|e| failed("a token request header name that HTTP cannot carry", e))?;
            let mut value = HeaderValue::from_str(value.as_str())
                .map_err(|e| failed("a token request header value that HTTP cannot carry", e))?;
            value.set_sensitive(true);
            outgoing.headers_mut().insert(name, value);
        }
        if let Some(authorization) = self.client.connector.forward_proxy_authorization(&uri) {
            outgoing
                .headers_mut()
                .insert(hyper::header::PROXY_AUTHORIZATION, authorization);
        }
        *outgoing.uri_mut() = uri;
        let exchange = async {
            let response = self
                .client
                .client
                .request(outgoing)
                .await
                .map_err(|e| failed("the token request got no answer", e))?;
            let (parts, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|e| failed("the token request's answer was cut short", e))?
                .to_bytes();
            Ok::<_, CoreError>((parts, body))
        };
        let (parts, body) = tokio::time::timeout(ATTEMPT_TIMEOUT, exchange).await.map_err(|_| {
            CoreError::with_message(
                CoreErrorKind::Io,
                format!("the token request got no whole answer within {ATTEMPT_TIMEOUT:?}"),
            )
        })??;
        let mut headers = Headers::new();
        for (name, value) in &parts.headers {
            if let Ok(value) = value.to_str() {
                headers.insert(name.as_str().to_owned(), value.to_owned());
            }
        }
        Ok(AsyncRawResponse::from_bytes(
            StatusCode::from(parts.status.as_u16()),
            headers,
            body,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use azure_core::http::HttpClient as _;
    use std::io::{Read as _, Write as _};

    #[test]
    fn text_without_a_certificate_is_a_config_error() {
        let err = IdentityHttpClient::with_trusted_certificates_pem(b"no certificate here").unwrap_err();
        assert!(matches!(err, Error::Config { .. }), "{err:?}");
        assert!(err.to_string().contains("trusted certificates"), "{err}");
    }

    #[tokio::test]
    async fn a_token_request_is_sent_whole_and_its_answer_read_whole() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut tcp, _) = listener.accept().unwrap();
            let mut received = Vec::new();
            let mut buffer = [0u8; 1024];
            while !String::from_utf8_lossy(&received).contains("grant_type=client_credentials") {
                let n = tcp.read(&mut buffer).unwrap();
                assert!(n > 0, "the request ended early: {}", String::from_utf8_lossy(&received));
                received.extend_from_slice(&buffer[..n]);
            }
            let body = r#"{"access_token":"t"}"#;
            let answer = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nx-ms-request-id: r-1\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            tcp.write_all(answer.as_bytes()).unwrap();
            String::from_utf8(received).unwrap()
        });
        let url = azure_core::http::Url::parse(&format!("http://127.0.0.1:{port}/tenant/oauth2/v2.0/token")).unwrap();
        let mut request = Request::new(url, azure_core::http::Method::Post);
        request.insert_header("content-type", "application/x-www-form-urlencoded");
        request.set_body("client_id=c&grant_type=client_credentials");
        let client = IdentityHttpClient::new().unwrap();
        let answer = client.execute_request(&request).await.unwrap();
        let (status, headers, body) = answer.deconstruct();
        assert_eq!(u16::from(status), 400, "an error answer is the credential's to read");
        assert_eq!(headers.get_optional_str(&"x-ms-request-id".into()), Some("r-1"));
        assert_eq!(body.collect().await.unwrap().as_ref(), br#"{"access_token":"t"}"#);
        let sent = server.join().unwrap();
        assert!(
            sent.starts_with("POST /tenant/oauth2/v2.0/token HTTP/1.1\r\n"),
            "{sent}"
        );
        assert!(
            sent.contains("content-type: application/x-www-form-urlencoded\r\n"),
            "{sent}"
        );
        assert!(
            sent.ends_with("\r\n\r\nclient_id=c&grant_type=client_credentials"),
            "{sent}"
        );
    }
}
