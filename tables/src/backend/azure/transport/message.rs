//! What the transport sends and what it hands back: a request to send
//! ([`Outgoing`]) and what it is about ([`Resource`]), a whole answer
//! ([`Answer`]) and one read as it arrives ([`Streamed`]).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::Method;

use super::super::http::REQUEST_ID;
use crate::error::{Error, Result};

/// Which service a request goes to: it decides how Shared Key signs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    Table,
    Blob,
}

/// What a request is about, as its span names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resource {
    /// One entity: a point read or a write.
    Entity,
    /// An entity-group transaction (`$batch`).
    Batch,
    /// A page of a query.
    Query,
    /// Creating or deleting a table.
    Table,
    /// A blob: read, written, deleted, its properties or metadata.
    Blob,
    /// A blob's lease.
    Lease,
    /// A container: created or listed.
    Container,
    /// The account (its clock).
    Account,
}

impl Resource {
    pub(super) fn name(self) -> &'static str {
        match self {
            Resource::Entity => "entity",
            Resource::Batch => "batch",
            Resource::Query => "query",
            Resource::Table => "table",
            Resource::Blob => "blob",
            Resource::Lease => "lease",
            Resource::Container => "container",
            Resource::Account => "account",
        }
    }

    pub(super) fn service(self) -> Service {
        match self {
            Resource::Entity | Resource::Batch | Resource::Query | Resource::Table => Service::Table,
            _ => Service::Blob,
        }
    }
}

/// A request to send: the path below the endpoint (percent-encoded), the
/// query (not encoded), the headers of its own and the body.
pub(crate) struct Outgoing {
    pub(crate) method: Method,
    pub(crate) resource: Resource,
    pub(crate) path: String,
    pub(crate) query: Vec<(&'static str, String)>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// The error code of a 404 its caller takes as an answer ("nothing
    /// there"): not recorded as an error on the attempt's span.
    pub(crate) absent: Option<&'static str>,
}

impl Outgoing {
    pub(crate) fn new(method: Method, resource: Resource, path: impl Into<String>) -> Outgoing {
        Outgoing {
            method,
            resource,
            path: path.into(),
            query: Vec::new(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            absent: None,
        }
    }

    /// A read whose 404 with the error `code` is an answer (the entity or
    /// blob does not exist), not an error.
    pub(crate) fn absent_is_an_answer(mut self, code: &'static str) -> Outgoing {
        self.absent = Some(code);
        self
    }

    pub(crate) fn query(mut self, name: &'static str, value: impl Into<String>) -> Outgoing {
        self.query.push((name, value.into()));
        self
    }

    pub(crate) fn header(mut self, name: HeaderName, value: HeaderValue) -> Outgoing {
        self.headers.insert(name, value);
        self
    }

    pub(crate) fn body(mut self, body: impl Into<Bytes>) -> Outgoing {
        self.body = body.into();
        self
    }

    /// A table write: the transport sends it again only when its attempt
    /// never left; otherwise the store settles it.
    pub(super) fn is_table_write(&self) -> bool {
        matches!(self.resource, Resource::Entity | Resource::Batch)
            && !matches!(self.method, Method::GET | Method::HEAD)
    }
}

/// A whole answer: its headers and its body.
pub(crate) struct Answer {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// The value of the header `name`, if it is present and text.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The service's `x-ms-request-id` of this answer.
    pub(crate) fn request_id(&self) -> Option<&str> {
        self.header(REQUEST_ID)
    }
}

pub(crate) fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// An answer whose body is read as it arrives, within what is left of its
/// attempt's time.
pub(crate) struct Streamed {
    pub(crate) headers: HeaderMap,
    pub(super) body: Incoming,
    pub(super) until: tokio::time::Instant,
    pub(super) limit: Duration,
}

impl Streamed {
    /// The next bytes of the body, or `None` at its end.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>> {
        loop {
            let frame = match tokio::time::timeout_at(self.until, self.body.frame()).await {
                Err(_) => {
                    return Err(Error::transport(format!(
                        "no whole answer within the retry policy's {:?} per attempt",
                        self.limit
                    )))
                }
                Ok(None) => return Ok(None),
                Ok(Some(Err(e))) => return Err(Error::transport("the answer was cut short").with_source(e)),
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                return Ok(Some(data));
            }
        }
    }
}
