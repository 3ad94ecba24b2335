//! One signer per credential, applied by the transport to each request
//! right before it is handed to `hyper`, below every point where a log
//! line could show it:
//!
//! - **Shared Key** (the account key): HMAC-SHA256 of the request's
//!   canonical form, keyed once per connection. The table service signs
//!   `VERB`, `Content-MD5`, `Content-Type`, the date and the resource; the
//!   blob service also the content and condition headers, every `x-ms-`
//!   header and every query parameter.
//! - **A shared access signature**: its parameters added to every URL.
//! - **Bearer tokens** (feature `entra-id`): `Authorization: Bearer ..`
//!   from the connection's token cache ([`super::token`]).

use base64::Engine as _;
use hmac::{Hmac, Mac};
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use sha2::Sha256;

use super::Service;
use crate::backend::azure::connection_string::AccountCredentials;
use crate::error::{Error, Result};

/// How the requests of one connection are authorised.
#[derive(Clone)]
pub(crate) enum Signer {
    /// Shared Key: the account and the HMAC-SHA256 keyed with the account key.
    Key { account: String, mac: Hmac<Sha256> },
    /// A shared access signature: its query, added to every URL as given.
    Sas(String),
    /// Bearer tokens from a token credential.
    #[cfg(feature = "entra-id")]
    Token(std::sync::Arc<super::token::TokenCache>),
}

/// What a signature covers of a request about to be sent.
pub(crate) struct Signing<'a> {
    pub(crate) service: Service,
    pub(crate) method: &'a str,
    /// The path as sent (percent-encoded), the endpoint's own path included.
    pub(crate) path: &'a str,
    /// The query parameters, not encoded.
    pub(crate) query: &'a [(&'static str, String)],
    pub(crate) content_length: usize,
}

impl Signer {
    /// The signer of `credentials` for `account`.
    pub(crate) fn of(account: &str, credentials: &AccountCredentials) -> Result<Signer> {
        Ok(match credentials {
            AccountCredentials::AccountKey(key) => {
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
            AccountCredentials::SharedAccessSignature(sas) => {
                crate::backend::azure::connection_string::check_sas(sas)?;
                Signer::Sas(sas.trim().trim_start_matches('?').to_owned())
            }
        })
    }

    /// The query a SAS adds to every URL.
    pub(crate) fn sas_query(&self) -> Option<&str> {
        match self {
            Signer::Sas(query) => Some(query),
            _ => None,
        }
    }

    /// Adds the `Authorization` header of `request` to `headers` (which hold
    /// its `x-ms-date` and every other header it carries). A SAS adds no
    /// header: its query goes on the URL.
    pub(crate) async fn authorize(&self, request: &Signing<'_>, headers: &mut HeaderMap) -> Result<()> {
        let value = match self {
            Signer::Sas(_) => return Ok(()),
            Signer::Key { account, mac } => {
                let mut mac = mac.clone();
                match request.service {
                    Service::Table => table_string_to_sign(&mut mac, account, request, headers),
                    Service::Blob => blob_string_to_sign(&mut mac, account, request, headers),
                }
                let signature = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
                HeaderValue::try_from(format!("SharedKey {account}:{signature}"))
                    .map_err(|e| Error::config("the account name cannot stand in a header").with_source(e))?
            }
            #[cfg(feature = "entra-id")]
            Signer::Token(cache) => cache.authorization().await?,
        };
        let mut value = value;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
        Ok(())
    }
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> &'h str {
    headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

/// The table service's Shared Key string: `VERB`, `Content-MD5`,
/// `Content-Type`, the date, and `/{account}{path}` with `?comp=` when the
/// query names one.
fn table_string_to_sign(mac: &mut Hmac<Sha256>, account: &str, request: &Signing<'_>, headers: &HeaderMap) {
    for part in [
        request.method,
        "\n",
        header(headers, "content-md5"),
        "\n",
        header(headers, "content-type"),
        "\n",
        header(headers, "x-ms-date"),
        "\n/",
        account,
        request.path,
    ] {
        mac.update(part.as_bytes());
    }
    if let Some((_, comp)) = request.query.iter().find(|(name, _)| *name == "comp") {
        mac.update(b"?comp=");
        mac.update(comp.as_bytes());
    }
}

/// The blob service's Shared Key string (version 2015-02-21 and later).
fn blob_string_to_sign(mac: &mut Hmac<Sha256>, account: &str, request: &Signing<'_>, headers: &HeaderMap) {
    let length = match request.content_length {
        0 => String::new(),
        n => n.to_string(),
    };
    mac.update(request.method.as_bytes());
    mac.update(b"\n");
    for name in ["content-encoding", "content-language"] {
        mac.update(header(headers, name).as_bytes());
        mac.update(b"\n");
    }
    mac.update(length.as_bytes());
    mac.update(b"\n");
    for name in [
        "content-md5",
        "content-type",
        "date",
        "if-modified-since",
        "if-match",
        "if-none-match",
        "if-unmodified-since",
        "range",
    ] {
        mac.update(header(headers, name).as_bytes());
        mac.update(b"\n");
    }
    let mut ms: Vec<(&str, &str)> = headers
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("x-ms-"))
        .map(|(name, value)| (name.as_str(), value.to_str().unwrap_or("").trim()))
        .collect();
    ms.sort_by(|a, b| a.0.cmp(b.0));
    for (name, value) in ms {
        mac.update(name.as_bytes());
        mac.update(b":");
        mac.update(value.as_bytes());
        mac.update(b"\n");
    }
    mac.update(b"/");
    mac.update(account.as_bytes());
    mac.update(request.path.as_bytes());
    let mut query: Vec<(String, &str)> = request
        .query
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.as_str()))
        .collect();
    query.sort();
    for (name, value) in query {
        mac.update(b"\n");
        mac.update(name.as_bytes());
        mac.update(b":");
        mac.update(value.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(
        service: Service,
        method: &str,
        path: &str,
        query: &[(&'static str, String)],
        headers: &HeaderMap,
    ) -> String {
        // The emulator's well-known key.
        let signer = Signer::of(
            "devstoreaccount1",
            &AccountCredentials::AccountKey(crate::backend::azure::EMULATOR_ACCOUNT_KEY.to_owned()),
        )
        .unwrap();
        let mut headers = headers.clone();
        let request = Signing {
            service,
            method,
            path,
            query,
            content_length: 0,
        };
        futures::executor::block_on(signer.authorize(&request, &mut headers)).unwrap();
        headers[AUTHORIZATION].to_str().unwrap().to_owned()
    }

    #[test]
    fn a_key_that_is_not_base64_is_refused_by_name() {
        let Err(e) = Signer::of("acct", &AccountCredentials::AccountKey("not base64!".into())) else {
            panic!("a key that is not base64 was taken")
        };
        assert!(e.to_string().contains("AccountKey"), "{e}");
    }

    #[test]
    fn the_authorization_header_is_marked_sensitive() {
        let signer = Signer::of("a", &AccountCredentials::AccountKey("a2V5".into())).unwrap();
        let mut headers = HeaderMap::new();
        let request = Signing {
            service: Service::Table,
            method: "GET",
            path: "/T()",
            query: &[],
            content_length: 0,
        };
        futures::executor::block_on(signer.authorize(&request, &mut headers)).unwrap();
        assert!(headers[AUTHORIZATION].is_sensitive());
        assert!(!format!("{headers:?}").contains("SharedKey"), "{headers:?}");
    }

    #[test]
    fn blob_signatures_cover_the_query_and_ms_headers_and_table_ones_do_not() {
        let mut headers = HeaderMap::new();
        headers.insert("x-ms-date", HeaderValue::from_static("Wed, 02 Dec 2026 14:05:09 GMT"));
        let list = [("comp", "list".to_owned()), ("restype", "container".to_owned())];
        let blob = signature(Service::Blob, "GET", "/devstoreaccount1/c", &list, &headers);
        let other = signature(Service::Blob, "GET", "/devstoreaccount1/c", &list[..1], &headers);
        assert_ne!(blob, other, "a blob signature covers every query parameter");
        let table = signature(
            Service::Table,
            "GET",
            "/devstoreaccount1/T()",
            &[("$top", "1".into())],
            &headers,
        );
        let plain = signature(Service::Table, "GET", "/devstoreaccount1/T()", &[], &headers);
        assert_eq!(table, plain, "a table signature covers `comp` only");
        headers.insert("x-ms-lease-id", HeaderValue::from_static("x"));
        assert_ne!(
            signature(Service::Blob, "GET", "/devstoreaccount1/c", &list, &headers),
            blob
        );
    }
}
