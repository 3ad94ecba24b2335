//! The in-memory backend under the Cosmos DB for Table profile: what that
//! service documents differently from Table Storage, with seeded randomness
//! so a failing run can be repeated.
//!
//! - Query results come in no order: every query walks its matches in an
//!   order drawn from the seed and the query itself, so two queries of one
//!   table see the same rows in different orders.
//! - Pages are cut at random sizes (up to the `$top` asked, which is not
//!   capped at 1,000), some pages come back empty with a token, and the
//!   token is opaque: it names a position in that drawn order, not a key.
//! - RowKeys longer than 255 bytes, transactions over 2 MB and the reserved
//!   property names are refused as the service refuses them.
//! - Optionally, every n-th request is answered 429 with a retry-after.
//! - Every request admitted reports a request charge ([`charge`]), as the
//!   service's `x-ms-request-charge` does: a model, not the service's pricing.

use std::collections::BTreeMap;
use std::time::Duration;

use super::span::Span;
use super::{project, RowId};
use crate::backend::{Page, PageToken, QueryRequest, WriteOp};
use crate::error::{Error, Result};
use crate::service::{
    COSMOS_MAX_ROW_KEY_BYTES, COSMOS_MAX_TRANSACTION_BYTES, COSMOS_RESERVED_NAMES, COSMOS_THROTTLED_CODE,
    COSMOS_THROTTLED_STATUS,
};
use crate::value::Row;

/// The most rows one page holds when a query asks for no `$top`.
const DEFAULT_PAGE_ROWS: usize = 1000;
/// One page in this many comes back empty (with a token) while rows remain.
const EMPTY_PAGE_ONE_IN: u64 = 8;
/// How long a throttled request is told to wait.
const RETRY_AFTER: Duration = Duration::from_millis(5);

/// The settings of the Cosmos profile of one in-memory backend.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cosmos {
    /// The seed of every random choice.
    pub(super) seed: u64,
    /// Every `throttle_every`-th request is answered 429 (0: never).
    pub(super) throttle_every: u64,
}

/// A 64-bit mix of `seed` and `bytes` (FNV-1a, then a splitmix finaliser):
/// stable across runs and platforms, so a seed names one run.
fn mix(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// A place in a query's drawn order: the draw of a row, then its keys.
type Place = (u64, RowId);

/// The opaque token of a place: nothing in it reads as a key.
fn token_of((draw, id): &Place) -> PageToken {
    PageToken {
        next_partition_key: format!("+RID~{draw:016x}"),
        next_row_key: Some(format!("{}.{}", hex(&id.partition_key), hex(&id.row_key))),
    }
}

fn place_of(token: &PageToken) -> Result<Place> {
    let bad = || {
        Error::service(
            400,
            "BadRequest",
            "The continuation token is malformed or does not belong to this query.",
        )
    };
    let draw = token
        .next_partition_key
        .strip_prefix("+RID~")
        .and_then(|d| u64::from_str_radix(d, 16).ok())
        .ok_or_else(bad)?;
    let (pk, rk) = token
        .next_row_key
        .as_deref()
        .and_then(|r| r.split_once('.'))
        .ok_or_else(bad)?;
    match (unhex(pk), unhex(rk)) {
        (Some(pk), Some(rk)) => Ok((draw, RowId::new(&pk, &rk))),
        _ => Err(bad()),
    }
}

impl Cosmos {
    /// The draw that orders `id` among the results of the query `salt` names.
    fn draw(&self, salt: u64, id: &RowId) -> u64 {
        let mut bytes = Vec::with_capacity(id.partition_key.len() + id.row_key.len() + 9);
        bytes.extend_from_slice(&salt.to_le_bytes());
        bytes.extend_from_slice(id.partition_key.as_bytes());
        bytes.push(0xff);
        bytes.extend_from_slice(id.row_key.as_bytes());
        mix(self.seed, &bytes)
    }

    /// Whether request number `n` of the backend is throttled, and the answer.
    pub(super) fn throttle(&self, n: u64) -> Result<()> {
        if self.throttle_every > 0 && n.is_multiple_of(self.throttle_every) {
            return Err(Error::service(
                COSMOS_THROTTLED_STATUS,
                COSMOS_THROTTLED_CODE,
                "Request rate is large. More Request Units may be needed, so no changes were made. Please retry this request later.",
            )
            .with_retry_after(RETRY_AFTER));
        }
        Ok(())
    }

    /// One page of a query: the matches in the query's drawn order, after
    /// the token's place, cut at a drawn size (page `page` of the backend).
    pub(super) fn page(
        &self,
        rows: &BTreeMap<RowId, Row>,
        request: &QueryRequest,
        token: Option<&PageToken>,
        page: u64,
    ) -> Result<Page> {
        let after = token.map(place_of).transpose()?;
        let salt = mix(
            self.seed,
            format!("{:?}{:?}", request.filter, request.select).as_bytes(),
        );
        let span = Span::of(request.filter.as_ref());
        let scanned: Box<dyn Iterator<Item = (&RowId, &Row)>> = match span.partition {
            Some(p) => Box::new(
                rows.range(RowId::new(p, span.from.unwrap_or_default())..)
                    .take_while(move |(id, _)| !span.passed(&id.partition_key, &id.row_key)),
            ),
            None => Box::new(rows.iter()),
        };
        let mut matches: Vec<(Place, &Row)> = Vec::new();
        for (id, row) in scanned {
            let matched = match &request.filter {
                Some(filter) => filter.matches(row)?,
                None => true,
            };
            if !matched {
                continue;
            }
            let place = (self.draw(salt, id), id.clone());
            if after.as_ref().is_none_or(|a| &place >= a) {
                matches.push((place, row));
            }
        }
        matches.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let cut = mix(self.seed ^ page, b"page cut");
        let limit = request.top.map_or(DEFAULT_PAGE_ROWS, |t| t as usize).max(1);
        let size = if cut.is_multiple_of(EMPTY_PAGE_ONE_IN) && !matches.is_empty() {
            0
        } else {
            1 + (cut >> 8) as usize % limit
        };
        let select = request.select.as_deref();
        let next = matches.get(size).map(|(place, _)| token_of(place));
        let rows: Vec<Row> = matches.iter().take(size).map(|(_, row)| project(row, select)).collect();
        charge(Some(self), Charged::QueryPage(rows.len()));
        Ok(Page { rows, next })
    }
}

/// What a request of the Cosmos profile is charged as.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Charged {
    /// A point read: 1 RU.
    PointRead,
    /// `n` entity writes (one, or a transaction's): 5 RU each.
    Writes(usize),
    /// Creating or deleting a table: 1 RU.
    Table,
    /// A query page of `n` rows: 1 RU, and 1 more per 10 rows.
    QueryPage(usize),
}

impl Charged {
    /// The request units of this request in the model.
    pub(super) fn units(self) -> f64 {
        match self {
            Charged::PointRead | Charged::Table => 1.0,
            Charged::Writes(n) => 5.0 * n as f64,
            Charged::QueryPage(rows) => 1.0 + rows as f64 / 10.0,
        }
    }
}

/// Reports the request charge of one request admitted by a backend on the
/// Cosmos profile (`profile` is `Some`), as the service's
/// `x-ms-request-charge` does, through [`crate::telemetry::request_charge`].
/// The units are a model to see request charges flow through the telemetry
/// (1 a point read or a table, 5 a written entity, 1 + rows/10 a query
/// page), not what Cosmos DB charges: its charges depend on the item's
/// size, its indexing, the consistency level and more. Nothing on the
/// Table Storage profile (`None`).
pub(super) fn charge(profile: Option<&Cosmos>, request: Charged) {
    if profile.is_some() {
        crate::telemetry::request_charge(request.units());
    }
}

/// The checks Cosmos DB for Table makes on a written row besides those of
/// Table Storage: a RowKey of at most 255 bytes and no reserved name.
pub(super) fn check_op(op: &WriteOp) -> Result<()> {
    let (_, row_key) = op.keys();
    if row_key.len() > COSMOS_MAX_ROW_KEY_BYTES {
        return Err(Error::service(
            400,
            "KeyValueTooLarge",
            format!(
                "The RowKey is {} bytes long; the maximum is {COSMOS_MAX_ROW_KEY_BYTES} bytes.",
                row_key.len()
            ),
        ));
    }
    for name in op.row().into_iter().flat_map(|row| row.properties.keys()) {
        if name == "ETag" {
            // The service fails on this name rather than refusing it.
            return Err(Error::service(
                500,
                "InternalServerError",
                "The server encountered an internal error while reading the entity.",
            ));
        }
        if COSMOS_RESERVED_NAMES.contains(&name.as_str()) {
            return Err(Error::service(
                400,
                "PropertyNameInvalid",
                format!("The property name `{name}` is reserved by the service."),
            ));
        }
    }
    Ok(())
}

/// The 2 MB request-body limit of a Cosmos DB for Table transaction.
pub(super) fn check_transaction_size(bytes: usize) -> Result<()> {
    if bytes > COSMOS_MAX_TRANSACTION_BYTES {
        return Err(Error::service(
            413,
            "RequestBodyTooLarge",
            format!("The request body is too large ({bytes} bytes) and exceeds the maximum permissible limit ({COSMOS_MAX_TRANSACTION_BYTES} bytes)."),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_a_place_and_reads_as_no_key() {
        let place = (0x1234, RowId::new("p/é", "r.1"));
        let token = token_of(&place);
        assert!(!token.next_partition_key.contains('p'), "{token:?}");
        assert_eq!(place_of(&token).unwrap(), place);
        let forged = PageToken {
            next_partition_key: "p".into(),
            next_row_key: Some("r".into()),
        };
        assert_eq!(place_of(&forged).unwrap_err().service_code(), Some((400, "BadRequest")));
    }

    #[test]
    fn the_modelled_charges() {
        assert_eq!(Charged::PointRead.units(), 1.0);
        assert_eq!(Charged::Table.units(), 1.0);
        assert_eq!(Charged::Writes(3).units(), 15.0);
        assert_eq!(Charged::QueryPage(0).units(), 1.0);
        assert_eq!(Charged::QueryPage(25).units(), 3.5);
    }

    #[test]
    fn draws_differ_by_seed_and_by_query() {
        let a = Cosmos {
            seed: 1,
            throttle_every: 0,
        };
        let b = Cosmos {
            seed: 2,
            throttle_every: 0,
        };
        let id = RowId::new("p", "r");
        assert_ne!(a.draw(7, &id), b.draw(7, &id));
        assert_ne!(a.draw(7, &id), a.draw(8, &id));
        assert_eq!(a.draw(7, &id), a.draw(7, &id));
    }
}
