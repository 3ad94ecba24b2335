//! How a connection is made: TCP without Nagle's delay, rustls with the
//! public roots of `webpki-roots` and the connection's own, through the
//! proxy the environment names (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
//! `NO_PROXY`, in either case): a `CONNECT` tunnel for `https://`
//! endpoints, absolute-form requests for `http://` ones. The policy's
//! connect timeout covers all of it: the TCP connection, the tunnel and the
//! TLS handshake, so a hung handshake fails as a connection that could not
//! be made (and a write is never left in doubt by it).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper::Uri;
use hyper_rustls::{HttpsConnector, MaybeHttpsStream};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use rustls_pki_types::CertificateDer;
use tokio::net::TcpStream;

use crate::error::{BoxError, Error, Result};

type Stream = MaybeHttpsStream<TokioIo<TcpStream>>;

/// Makes the client's connections (see the module's docs).
#[derive(Clone)]
pub(crate) struct Connector {
    direct: HttpsConnector<HttpConnector>,
    tcp: HttpConnector,
    tls: Arc<rustls::ClientConfig>,
    /// The environment's proxies, when it names any.
    proxies: Option<Arc<Matcher>>,
    timeout: Duration,
}

impl Connector {
    /// A connector trusting `roots` beside the public roots, with `timeout`
    /// for a whole connection (TCP, proxy tunnel and TLS handshake).
    pub(crate) fn new(roots: &[CertificateDer<'static>], timeout: Duration) -> Result<Connector> {
        let mut trusted = rustls::RootCertStore::empty();
        trusted.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for root in roots {
            trusted
                .add(root.clone())
                .map_err(|e| Error::config("trusted certificates: a certificate cannot be a root").with_source(e))?;
        }
        // aws-lc-rs, rustls's own default provider: it offers the hybrid
        // post-quantum key exchange (X25519MLKEM768) first, which the ring
        // provider lacks (deprecated since rustls 0.23.48 for that reason).
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::config("cannot set up TLS").with_source(e))?
            .with_root_certificates(trusted)
            .with_no_client_auth();
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        let direct = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls.clone())
            .https_or_http()
            .enable_http1()
            .wrap_connector(tcp.clone());
        Ok(Connector {
            direct,
            tcp,
            tls: Arc::new(tls),
            proxies: proxies_named(|name| std::env::var(name).ok()).then(|| Arc::new(Matcher::from_env())),
            timeout,
        })
    }

    /// The `Proxy-Authorization` a request to `endpoint` carries: the
    /// credentials of a forward proxy (an `http://` endpoint's) named with
    /// a user and password. A tunnel sends them in its `CONNECT`.
    pub(crate) fn forward_proxy_authorization(&self, endpoint: &Uri) -> Option<hyper::header::HeaderValue> {
        let intercept = self.proxies.as_ref()?.intercept(endpoint)?;
        (endpoint.scheme_str() == Some("http"))
            .then(|| intercept.basic_auth().cloned())
            .flatten()
    }

    async fn connect(mut self, uri: Uri) -> std::result::Result<Conn, BoxError> {
        use tower_service::Service as _;
        let intercept = self.proxies.as_ref().and_then(|m| m.intercept(&uri));
        match intercept {
            None => Ok(Conn {
                io: self.direct.call(uri).await?,
                proxied: false,
            }),
            Some(proxy) if uri.scheme_str() == Some("https") => {
                let mut tunnel = Tunnel::new(proxy.uri().clone(), self.tcp.clone());
                if let Some(auth) = proxy.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                let mut tls = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config((*self.tls).clone())
                    .https_only()
                    .enable_http1()
                    .wrap_connector(tunnel);
                Ok(Conn {
                    io: tls.call(uri).await?,
                    proxied: false,
                })
            }
            Some(proxy) => Ok(Conn {
                io: self.direct.call(proxy.uri().clone()).await?,
                proxied: true,
            }),
        }
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = std::result::Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::result::Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let timeout = self.timeout;
        let connect = self.clone().connect(uri);
        Box::pin(async move {
            match tokio::time::timeout(timeout, connect).await {
                Ok(result) => result,
                Err(_) => Err(format!("no connection (TCP, proxy and TLS handshake) within {timeout:?}").into()),
            }
        })
    }
}

/// Whether the environment names a proxy (`HTTP_PROXY`, `HTTPS_PROXY` or
/// `ALL_PROXY`, in either case), as `lookup` reads it.
pub(crate) fn proxies_named(lookup: impl Fn(&str) -> Option<String>) -> bool {
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

/// One connection: to the endpoint (TLS or not), or to a forward proxy.
pub(crate) struct Conn {
    io: Stream,
    /// Requests on it name the whole URL (absolute form): it goes to a forward proxy.
    proxied: bool,
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        let connected = self.io.connected();
        if self.proxied {
            connected.proxy(true)
        } else {
            connected
        }
    }
}

impl Read for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: ReadBufCursor<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl Write for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxy_named_by_the_environment_is_seen_in_either_case() {
        let only =
            |name: &'static str, value: &'static str| move |asked: &str| (asked == name).then(|| value.to_owned());
        assert!(!proxies_named(|_| None));
        assert!(proxies_named(only("HTTPS_PROXY", "http://proxy:3128")));
        assert!(proxies_named(only("http_proxy", "http://proxy:3128")));
        assert!(proxies_named(only("all_proxy", "socks5://proxy:1080")));
        assert!(
            !proxies_named(only("HTTPS_PROXY", "  ")),
            "an empty value names no proxy"
        );
        assert!(!proxies_named(only("NO_PROXY", "*")));
    }
}
