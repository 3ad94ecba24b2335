//! A query page as the service sent it: its JSON body, read by whoever
//! takes it (into rows, or straight into entities).

use std::borrow::Cow;

use super::{Page, PageToken};
use crate::error::{Error, Result};
use crate::value::{wire, Row};

/// What [`Backend::query_body`](super::Backend::query_body) answers: the
/// page's rows, or the body they are read from.
#[derive(Debug)]
pub enum PageAnswer {
    /// The rows, read already (the in-memory backend, or any backend that
    /// keeps the default of `query_body`).
    Rows(Page),
    /// The service's JSON body, not read yet.
    Body(PageBody),
}

impl PageAnswer {
    /// The page as rows: the body read with [`wire::page_from_slice`].
    pub fn into_page(self) -> Result<Page> {
        match self {
            PageAnswer::Rows(page) => Ok(page),
            PageAnswer::Body(body) => body.into_page(),
        }
    }

    /// Where the next page starts, or `None` at the end.
    pub fn next(&self) -> Option<&PageToken> {
        match self {
            PageAnswer::Rows(page) => page.next.as_ref(),
            PageAnswer::Body(body) => body.next.as_ref(),
        }
    }
}

/// The JSON body of one Query Entities answer (`{"value":[..]}`) with the
/// page token of its headers.
///
/// ```
/// use unified_tables::backend::PageBody;
/// let body = br#"{"value":[{"PartitionKey":"p","RowKey":"a"}]}"#.to_vec();
/// let page = PageBody::new(body, None).into_page().unwrap();
/// assert_eq!(page.rows[0].row_key, "a");
/// assert!(PageBody::new(b"{".to_vec(), None).into_page().is_err());
/// ```
#[derive(Debug, Clone)]
pub struct PageBody {
    body: Cow<'static, [u8]>,
    next: Option<PageToken>,
    request_id: Option<String>,
}

impl PageBody {
    /// The body of a page (owned, or a static one a test or benchmark
    /// answers with every time), and where the next page starts (`None` at
    /// the end).
    pub fn new(body: impl Into<Cow<'static, [u8]>>, next: Option<PageToken>) -> PageBody {
        PageBody {
            body: body.into(),
            next,
            request_id: None,
        }
    }

    /// The service's request id of the answer, which an error reading it carries.
    pub fn with_request_id(mut self, request_id: Option<&str>) -> PageBody {
        self.request_id = request_id.map(str::to_owned);
        self
    }

    /// The JSON body.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Where the next page starts, or `None` at the end.
    pub fn next(&self) -> Option<&PageToken> {
        self.next.as_ref()
    }

    /// The rows of the body; a body that is not a query answer is
    /// [`Error::MalformedResponse`] saying where and why.
    pub fn rows(&self) -> Result<Vec<Row>> {
        wire::page_from_slice(&self.body).map_err(|reason| {
            Error::malformed_response(format!("an entity that cannot be read: {reason}"))
                .with_request_id(self.request_id.as_deref())
        })
    }

    /// The page as rows (see [`rows`](Self::rows)).
    pub fn into_page(self) -> Result<Page> {
        Ok(Page {
            rows: self.rows()?,
            next: self.next,
        })
    }
}
