//! Just enough HTTP/1.1 for the fault proxy: read one request or response
//! (head and body, framed by `Content-Length`, `chunked` or the end of the
//! connection) into memory, keeping its bytes exactly as they came.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest head (request or status line and headers) the proxy accepts.
const MAX_HEAD: usize = 64 * 1024;

/// A buffered reader over one side of a connection.
#[derive(Debug)]
pub(crate) struct Reader<R> {
    inner: R,
    buf: Vec<u8>,
}

/// One request or response: its head as it came, its body bytes on the wire
/// (chunk framing included) and what the proxy needs to know about it.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    /// The start line and headers, through the blank line.
    pub(crate) head: Vec<u8>,
    /// The body as framed on the wire.
    pub(crate) body: Vec<u8>,
    /// The start line (`GET /path HTTP/1.1` or `HTTP/1.1 200 OK`).
    pub(crate) start: String,
    /// Whether either side asked to close the connection after it.
    pub(crate) close: bool,
}

impl Message {
    /// The method of a request.
    pub(crate) fn method(&self) -> &str {
        self.start.split(' ').next().unwrap_or("")
    }

    /// The target (path and query) of a request.
    pub(crate) fn target(&self) -> &str {
        self.start.split(' ').nth(1).unwrap_or("")
    }

    /// The status of a response.
    #[cfg(test)]
    pub(crate) fn status(&self) -> u16 {
        self.start.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
    }

    /// The whole message as it goes on the wire.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.head.len() + self.body.len());
        all.extend_from_slice(&self.head);
        all.extend_from_slice(&self.body);
        all
    }
}

/// How a body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(usize),
    Chunked,
    UntilClose,
}

fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

impl<R: AsyncRead + Unpin> Reader<R> {
    pub(crate) fn into_inner(self) -> R {
        self.inner
    }

    pub(crate) fn new(inner: R) -> Self {
        Reader { inner, buf: Vec::new() }
    }

    /// Reads more bytes into the buffer; `false` at the end of the stream.
    async fn fill(&mut self) -> io::Result<bool> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.inner.read(&mut chunk).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    }

    /// Takes `n` bytes from the buffer, reading as needed.
    async fn take(&mut self, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < n {
            if !self.fill().await? {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the body ended early"));
            }
        }
        Ok(self.buf.drain(..n).collect())
    }

    /// Takes one line through its `\r\n`.
    async fn line(&mut self) -> io::Result<Vec<u8>> {
        loop {
            if let Some(at) = self.buf.windows(2).position(|w| w == b"\r\n") {
                return Ok(self.buf.drain(..at + 2).collect());
            }
            if self.buf.len() > MAX_HEAD {
                return Err(bad("a line longer than 64 KiB"));
            }
            if !self.fill().await? {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the line ended early"));
            }
        }
    }

    /// Reads the head of the next message, or `None` when the stream ends
    /// cleanly before one starts.
    async fn head(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(at) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                return Ok(Some(self.buf.drain(..at + 4).collect()));
            }
            if self.buf.len() > MAX_HEAD {
                return Err(bad("a head longer than 64 KiB"));
            }
            if !self.fill().await? {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the head ended early"))
                };
            }
        }
    }

    /// Reads the next request, or `None` at a clean end of the stream.
    pub(crate) async fn request(&mut self) -> io::Result<Option<Message>> {
        let Some(head) = self.head().await? else {
            return Ok(None);
        };
        let parsed = parse_head(&head)?;
        let framing = match (parsed.chunked, parsed.length) {
            (true, _) => Framing::Chunked,
            (false, Some(n)) => Framing::Length(n),
            (false, None) => Framing::None,
        };
        let body = self.body(framing).await?;
        Ok(Some(Message {
            head,
            body,
            start: parsed.start,
            close: parsed.close,
        }))
    }

    /// Reads the response to a request with method `method`.
    pub(crate) async fn response(&mut self, method: &str) -> io::Result<Message> {
        let head = self
            .head()
            .await?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "the connection closed before an answer"))?;
        let parsed = parse_head(&head)?;
        let status: u16 = parsed.start.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        let framing = if method == "HEAD" || status == 204 || status == 304 || (100..200).contains(&status) {
            Framing::None
        } else if parsed.chunked {
            Framing::Chunked
        } else if let Some(n) = parsed.length {
            Framing::Length(n)
        } else {
            Framing::UntilClose
        };
        let body = self.body(framing).await?;
        Ok(Message {
            head,
            body,
            start: parsed.start,
            close: parsed.close || framing == Framing::UntilClose,
        })
    }

    async fn body(&mut self, framing: Framing) -> io::Result<Vec<u8>> {
        match framing {
            Framing::None => Ok(Vec::new()),
            Framing::Length(n) => self.take(n).await,
            Framing::UntilClose => {
                while self.fill().await? {}
                Ok(std::mem::take(&mut self.buf))
            }
            Framing::Chunked => {
                let mut body = Vec::new();
                loop {
                    let line = self.line().await?;
                    let text = std::str::from_utf8(&line).map_err(|_| bad("a chunk size that is not text"))?;
                    let size = text.trim_end().split(';').next().unwrap_or("").trim();
                    let size = usize::from_str_radix(size, 16).map_err(|_| bad(format!("chunk size `{size}`")))?;
                    body.extend_from_slice(&line);
                    if size == 0 {
                        // Trailers, then the blank line.
                        loop {
                            let trailer = self.line().await?;
                            body.extend_from_slice(&trailer);
                            if trailer == b"\r\n" {
                                return Ok(body);
                            }
                        }
                    }
                    body.extend_from_slice(&self.take(size + 2).await?);
                }
            }
        }
    }
}

struct Head {
    start: String,
    length: Option<usize>,
    chunked: bool,
    close: bool,
}

fn parse_head(head: &[u8]) -> io::Result<Head> {
    let text = std::str::from_utf8(head).map_err(|_| bad("a head that is not text"))?;
    let mut lines = text.split("\r\n");
    let start = lines.next().unwrap_or("").to_owned();
    let mut parsed = Head {
        close: start.ends_with("HTTP/1.0"),
        start,
        length: None,
        chunked: false,
    };
    for line in lines.filter(|l| !l.is_empty()) {
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad(format!("header line `{line}`")));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                parsed.length = Some(value.parse().map_err(|_| bad(format!("Content-Length `{value}`")))?)
            }
            "transfer-encoding" => parsed.chunked = value.to_ascii_lowercase().contains("chunked"),
            "connection" => parsed.close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_are_framed_by_length_chunks_and_close() {
        let wire = b"POST /a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        let mut r = Reader::new(&wire[..]);
        let a = r.request().await.unwrap().unwrap();
        assert_eq!((a.method(), a.target(), &a.body[..]), ("POST", "/a", &b"abc"[..]));
        let b = r.request().await.unwrap().unwrap();
        assert_eq!((b.method(), b.body.len()), ("GET", 0));
        assert!(r.request().await.unwrap().is_none());

        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n0\r\nT: 1\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
        let mut r = Reader::new(&chunked[..]);
        let first = r.response("GET").await.unwrap();
        assert_eq!(first.body, b"3;x=1\r\nabc\r\n0\r\nT: 1\r\n\r\n");
        assert_eq!(r.response("DELETE").await.unwrap().status(), 204);

        let until_close = b"HTTP/1.0 200 OK\r\n\r\nall of it";
        let m = Reader::new(&until_close[..]).response("GET").await.unwrap();
        assert!(m.close && m.body == b"all of it");
        let head_only = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
        assert!(Reader::new(&head_only[..])
            .response("HEAD")
            .await
            .unwrap()
            .body
            .is_empty());
        let short = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
        assert!(Reader::new(&short[..]).response("GET").await.is_err());
    }
}
