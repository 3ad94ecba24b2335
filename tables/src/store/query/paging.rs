//! Pages with resumable cursors, bounded counts.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::backend::{PageToken, QueryRequest};
use crate::entity::{KeyMode, TableEntity};
use crate::error::{Error, Result};
use crate::service::MAX_PAGE_SIZE;
use crate::store::query::sealed::{is_sealed, CursorKey};
use crate::store::{QueryOptions, Store};

/// The default page size of [`Store::page`].
pub const DEFAULT_PAGE_SIZE: usize = 100;

/// A position in a query, bound to that query (partition, prefix, page size
/// and filter). Send it back with [`QueryOptions::after`]; it round-trips as
/// text (`Display` / `FromStr`).
///
/// # What a cursor shows
///
/// A cursor of a handle without a [`CursorKey`] is **not encrypted**: it is
/// base64 text that anyone holding it can decode, and it shows
///
/// - the query's partition key and key prefix, and its page size;
/// - the filter's text, with every value it compares (`Status eq 'open'`);
/// - the partition key and row key where the next page starts; on a pool of
///   accounts, each account's position (its next keys and the keys of the
///   last row it returned);
/// - for a soft-deletable type, which view it reads.
///
/// Its checksum detects damage, not forgery (anyone can compute it; over a
/// pool the positions are signed with the pool's key), and the binding to
/// its query refuses it on another query. Do not hand such a cursor to a
/// client that must not see those keys and values. Give the handle a key
/// with [`Tables::with_cursor_key`](crate::Tables::with_cursor_key) and its
/// cursors are **sealed**: encrypted and authenticated, showing none of the
/// above (only their length and an id of the key), and refused when
/// altered, forged or sealed under another key.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Cursor(String);

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cursor({})", self.0)
    }
}

impl FromStr for Cursor {
    type Err = Error;
    /// Accepts a cursor's text as given to a client; it is checked when used.
    fn from_str(s: &str) -> Result<Cursor> {
        Ok(Cursor(s.to_owned()))
    }
}

/// Length-prefixed text, so that no two different values join to the same fingerprint.
fn lp(s: Option<&str>) -> String {
    match s {
        Some(s) => format!("{}:{s}", s.chars().count()),
        None => "~".to_owned(),
    }
}

fn fingerprint<T, S>(options: &QueryOptions<T, S>, page_size: usize) -> String {
    let filter = options.filter.as_ref().map(|f| f.to_odata());
    format!(
        "{}|{}|{page_size}|{}",
        lp(options.partition.as_deref()),
        lp(options.prefix.as_deref()),
        lp(filter.as_deref())
    )
}

fn checksum(payload: &str) -> String {
    let digest = Sha256::digest(payload.as_bytes());
    crate::value::hex(&digest[..12])
}

impl Cursor {
    /// The cursor of `next` for the query of `fingerprint`, sealed under
    /// `key` when the handle has one.
    pub(crate) fn encode(fingerprint: &str, next: &PageToken, key: Option<&CursorKey>) -> Cursor {
        let payload = format!(
            "{}\n{}\n{}",
            lp(Some(fingerprint)),
            lp(Some(&next.next_partition_key)),
            lp(next.next_row_key.as_deref())
        );
        if let Some(key) = key {
            return Cursor(key.seal(&payload));
        }
        let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.as_bytes());
        Cursor(format!("{text}.{}", checksum(&payload)))
    }

    /// The page token of this cursor, once it is checked to be of the query
    /// of `fingerprint` (and sealed under `key`, when the handle has one).
    pub(crate) fn decode(&self, fingerprint: &str, key: Option<&CursorKey>) -> Result<PageToken> {
        let damaged = || Error::InvalidCursor("the cursor is damaged; start the query again without one".into());
        let payload = match key {
            Some(key) => key.open(&self.0)?,
            None if is_sealed(&self.0) => {
                return Err(Error::InvalidCursor(
                    "the cursor is sealed: resume it on a handle with the cursor key that sealed it \
                     (Tables::with_cursor_key), or start the query again without one"
                        .into(),
                ))
            }
            None => {
                let (text, sum) = self.0.rsplit_once('.').ok_or_else(damaged)?;
                let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(text)
                    .map_err(|_| damaged())?;
                let payload = String::from_utf8(bytes).map_err(|_| damaged())?;
                if checksum(&payload) != sum {
                    return Err(damaged());
                }
                payload
            }
        };
        let mut rest = payload.as_str();
        let mut next_field = || -> Result<Option<String>> {
            if let Some(r) = rest.strip_prefix('~') {
                rest = r.strip_prefix('\n').unwrap_or(r);
                return Ok(None);
            }
            let (len, r) = rest.split_once(':').ok_or_else(damaged)?;
            let len: usize = len.parse().map_err(|_| damaged())?;
            let end = r.char_indices().nth(len).map(|(i, _)| i).unwrap_or(r.len());
            let value = r[..end].to_owned();
            rest = r[end..].strip_prefix('\n').unwrap_or(&r[end..]);
            Ok(Some(value))
        };
        let bound = next_field()?.ok_or_else(damaged)?;
        let next_partition_key = next_field()?.ok_or_else(damaged)?;
        let next_row_key = next_field()?;
        if bound != fingerprint {
            return Err(Error::InvalidCursor(
                "the cursor belongs to another query (partition, prefix, page size or filter differ); send it back with the query that returned it".into(),
            ));
        }
        Ok(PageToken {
            next_partition_key,
            next_row_key,
        })
    }
}

/// One page of entities and the cursor of the next one.
#[derive(Debug, Clone)]
pub struct EntityPage<T> {
    /// The entities, in key order (in the service's order on Cosmos DB for
    /// Table). A page can be empty and still not be the last.
    pub items: Vec<T>,
    /// Where the next page starts; `None` only at the end. Loop on this, not on `items.len()`.
    pub cursor: Option<Cursor>,
}

impl<T> EntityPage<T> {
    /// Whether another page may follow.
    pub fn has_more(&self) -> bool {
        self.cursor.is_some()
    }
}

/// A count that may have stopped at a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// Exactly this many.
    Exact(u64),
    /// At least this many (the count stopped at its bound); shown as `n+`.
    AtLeast(u64),
}

impl fmt::Display for Count {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Count::Exact(n) => write!(f, "{n}"),
            Count::AtLeast(n) => write!(f, "{n}+"),
        }
    }
}

impl<T: TableEntity> Store<T> {
    /// The backend request for `options` of any reader but [`Store::page`],
    /// which alone takes a cursor: a cursor anywhere else is refused, never ignored.
    pub(crate) fn request_for<S>(&self, options: &QueryOptions<T, S>) -> Result<QueryRequest> {
        if options.cursor.is_some() {
            return Err(Error::InvalidCursor(
                "only Store::page continues after a cursor; query, stream and count read from the start: drop `.after(..)`, or call page".into(),
            ));
        }
        self.listing_request(options)
    }

    /// The backend request for `options`, with the keys normalized as the
    /// type's ids are and the projection resolved.
    fn listing_request<S>(&self, options: &QueryOptions<T, S>) -> Result<QueryRequest> {
        let normalized;
        let options = match T::SCHEMA.keys {
            KeyMode::CompositeId { normalize: true } => {
                normalized = options.with_normalized_keys();
                &normalized
            }
            _ => options,
        };
        let mut request = options.request()?;
        self.scope_request(&mut request)?;
        self.exclude_index_rows(&mut request)?;
        if let Some(selection) = &options.select {
            request.select = crate::store::query::projection::select_list(T::SCHEMA, selection)?;
        }
        Ok(request)
    }

    /// Reads one page: at most `take` entities (default 100, at most 1000),
    /// starting after the cursor in the options. The returned cursor is bound
    /// to this query; replaying it against another query, or a damaged one,
    /// is [`Error::InvalidCursor`]. On Cosmos DB for Table a page holds some
    /// of the matches in the service's order, and its cursor the service's
    /// opaque token (see [`guide::cosmos`](crate::guide::cosmos)).
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables, QueryOptions};
    /// # #[derive(TableEntity)] struct Msg { #[table(partition_key)] pk: String, #[table(row_key)] rk: String }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let store = Tables::memory().store::<Msg>();
    /// let mut options = QueryOptions::partition("room-1").take(50);
    /// loop {
    ///     let page = store.page(options.clone()).await?;
    ///     for msg in &page.items { /* show it */ }
    ///     match page.cursor {
    ///         Some(next) => options = options.after(next),   // an empty page can still have more
    ///         None => break,
    ///     }
    /// }
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn page<S>(&self, options: QueryOptions<T, S>) -> Result<EntityPage<T>> {
        self.op("page")
            .run(async move {
                let page_size = options
                    .take
                    .unwrap_or(DEFAULT_PAGE_SIZE)
                    .clamp(1, MAX_PAGE_SIZE as usize);
                let bound = self.scoped_fingerprint(fingerprint(&options, page_size));
                let token = match &options.cursor {
                    Some(c) => Some(c.decode(&bound, self.shared.cursor_key.as_ref())?),
                    None => None,
                };
                let mut request = self.listing_request(&options)?;
                request.top = Some(page_size as u32);
                self.ensure_created().await?;
                let page = self.shared.backend.query(&self.table, &request, token.as_ref()).await?;
                let mut items = Vec::with_capacity(page.rows.len());
                for row in page.rows {
                    if let Some(entity) = self.decode_listed(row).await? {
                        items.push(entity);
                    }
                }
                Ok(EntityPage {
                    items,
                    cursor: page
                        .next
                        .map(|c| Cursor::encode(&bound, &c, self.shared.cursor_key.as_ref())),
                })
            })
            .await
    }

    /// Counts the selected rows with a keys-only projection, stopping once
    /// `bound` is reached: [`Count::AtLeast`] then, rendered `n+`.
    pub async fn count_bounded<S>(&self, options: QueryOptions<T, S>, bound: u64) -> Result<Count> {
        self.op("count_bounded")
            .run(async move {
                let n = self.count(options.take(bound.min(usize::MAX as u64) as usize)).await?;
                Ok(if n >= bound {
                    Count::AtLeast(bound)
                } else {
                    Count::Exact(n)
                })
            })
            .await
    }

    /// Whether any row matches: a query of one row.
    pub async fn any<S>(&self, options: QueryOptions<T, S>) -> Result<bool> {
        self.op("any")
            .run(async move {
                let mut request = self.request_for(&options)?;
                request.select = Some(vec!["RowKey".to_owned(), crate::layout::SPLIT_OF.to_owned()]);
                request.top = Some(1);
                let mut pages = self.pages_in_any_order(request).await?;
                // One row answers: no page is read ahead.
                while let Some(rows) = pages.next(|_| false).await? {
                    if rows.iter().any(|r| r.get(crate::layout::SPLIT_OF).is_none()) {
                        return Ok(true);
                    }
                }
                Ok(false)
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_is_bound_to_its_query() {
        let next = PageToken {
            next_partition_key: "p:1\n~".into(),
            next_row_key: Some("r".into()),
        };
        let cursor = Cursor::encode("q", &next, None);
        assert_eq!(cursor.decode("q", None).unwrap(), next);
        assert!(matches!(cursor.decode("other", None), Err(Error::InvalidCursor(_))));
        let key = CursorKey::from_bytes([9; 32]);
        let sealed = Cursor::encode("q", &next, Some(&key));
        assert_eq!(sealed.decode("q", Some(&key)).unwrap(), next);
        assert!(matches!(
            sealed.decode("other", Some(&key)),
            Err(Error::InvalidCursor(_))
        ));
        assert!(matches!(sealed.decode("q", None), Err(Error::InvalidCursor(_))));
        assert!(matches!(cursor.decode("q", Some(&key)), Err(Error::InvalidCursor(_))));
    }

    proptest::proptest! {
        #![proptest_config(crate::fuzz::config())]

        /// Any text as a cursor: refused as damaged, never a panic.
        #[test]
        fn any_text_is_refused_as_a_cursor(text in "\\PC{0,80}") {
            proptest::prop_assert!(Cursor(text).decode("q", None).is_err());
        }

        /// A payload with a valid checksum (anyone can compute one) but any
        /// content: a token or `InvalidCursor`, never a panic or a huge allocation.
        #[test]
        fn any_signed_payload_is_a_token_or_refused(payload in "(\\PC|\n|~|:|[0-9]){0,80}") {
            let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.as_bytes());
            let cursor = Cursor(format!("{text}.{}", checksum(&payload)));
            match cursor.decode("q", None) {
                Ok(_) | Err(Error::InvalidCursor(_)) => {}
                Err(other) => proptest::prop_assert!(false, "unexpected error: {other}"),
            }
        }
    }
}
