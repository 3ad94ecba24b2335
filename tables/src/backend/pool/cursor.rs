//! The page token of a query merged across a pool's accounts: where each
//! account stands (its own continuation, and the last of its rows already
//! returned), signed with a key of the handle and bound to the query, so a
//! token altered, forged, or sent back with another query is refused.

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::backend::{PageToken, QueryRequest};
use crate::error::{Error, Result};

/// What a merged query's page token starts with.
const PREFIX: &str = "pool1.";

/// Where one account stands in a merged query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Place {
    /// Every matching row of the account has been returned.
    Done,
    /// Read the account from `token` (its own continuation; its start
    /// without one), leaving out its rows up to `after`, which were returned.
    At {
        /// The account's continuation: `(NextPartitionKey, NextRowKey)`.
        token: Option<(String, Option<String>)>,
        /// The last of its rows returned: `(PartitionKey, RowKey)`.
        after: Option<(String, String)>,
    },
}

impl Place {
    /// An account not read yet.
    pub(super) const START: Place = Place::At {
        token: None,
        after: None,
    };
}

/// The key merged page tokens are signed with.
#[derive(Clone)]
pub(super) struct CursorKey([u8; 32]);

impl std::fmt::Debug for CursorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorKey(..)")
    }
}

impl CursorKey {
    /// A key of this process alone.
    pub(super) fn random() -> CursorKey {
        CursorKey(rand::random())
    }

    /// The key of every handle of the pool with id `pool_id` (a random id
    /// that only the pool's accounts hold), so that a page token made by one
    /// process is taken by another.
    pub(super) fn of_pool(pool_id: &str) -> CursorKey {
        let mut digest = Sha256::new();
        digest.update(b"unified-tables merged query cursor\n");
        digest.update(pool_id.as_bytes());
        CursorKey(digest.finalize().into())
    }

    /// The signature of `places` for `request` on `table`.
    fn sign(&self, table: &str, request: &QueryRequest, payload: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        let filter = request.filter.as_ref().map(|f| f.to_odata());
        let select = request.select.as_ref().map(|s| s.join(","));
        for part in [
            Some(table),
            filter.as_deref(),
            select.as_deref(),
            request.top.map(|t| t.to_string()).as_deref(),
            Some(payload),
        ] {
            // Length-prefixed, so no two queries join to the same text.
            match part {
                Some(text) => mac.update(format!("{}:{text}\n", text.len()).as_bytes()),
                None => mac.update(b"~\n"),
            }
        }
        crate::value::hex(&mac.finalize().into_bytes()[..16])
    }

    /// The page token of `places`.
    pub(super) fn encode(&self, table: &str, request: &QueryRequest, places: &[Place]) -> PageToken {
        let payload = serde_json::to_string(places).expect("places are JSON");
        let signature = self.sign(table, request, &payload);
        let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.as_bytes());
        PageToken {
            next_partition_key: format!("{PREFIX}{text}"),
            next_row_key: Some(signature),
        }
    }

    /// The places a page token holds, and its signature, once the signature
    /// is checked against this key and `request`.
    pub(super) fn decode(
        &self,
        table: &str,
        request: &QueryRequest,
        token: &PageToken,
        accounts: usize,
    ) -> Result<(Vec<Place>, String)> {
        let refused = || {
            Error::InvalidCursor(
                "the cursor does not come from this query over this pool (it was altered, or belongs to another \
                 query or another pool): start the query again without one"
                    .into(),
            )
        };
        let text = token.next_partition_key.strip_prefix(PREFIX).ok_or_else(refused)?;
        let signature = token.next_row_key.as_deref().ok_or_else(refused)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| refused())?;
        let payload = String::from_utf8(bytes).map_err(|_| refused())?;
        let expected = self.sign(table, request, &payload);
        // Compared in full whatever the first difference, so the time taken says nothing of the key.
        let same = expected.len() == signature.len()
            && expected
                .bytes()
                .zip(signature.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        if !same {
            return Err(refused());
        }
        let places: Vec<Place> = serde_json::from_str(&payload).map_err(|_| refused())?;
        if places.len() != accounts {
            return Err(refused());
        }
        Ok((places, expected))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::Filter;
    use crate::value::Value;

    #[test]
    fn a_token_is_refused_when_altered_forged_or_replayed_on_another_query() {
        let key = CursorKey::random();
        let request = QueryRequest {
            filter: Some(Filter::eq("Kind", Value::String("a".into()))),
            ..QueryRequest::default()
        };
        let places = vec![
            Place::Done,
            Place::At {
                token: Some(("p".into(), Some("r".into()))),
                after: Some(("p".into(), "q".into())),
            },
        ];
        let token = key.encode("T", &request, &places);
        assert_eq!(key.decode("T", &request, &token, 2).unwrap().0, places);
        // Another query, table, page size or pool.
        let other = QueryRequest {
            top: Some(5),
            ..request.clone()
        };
        assert!(key.decode("T", &other, &token, 2).is_err());
        assert!(key.decode("U", &request, &token, 2).is_err());
        assert!(CursorKey::random().decode("T", &request, &token, 2).is_err());
        assert!(key.decode("T", &request, &token, 3).is_err());
        // Altered places, with the signature kept or with an unkeyed checksum recomputed.
        let forged_places = vec![Place::Done, Place::Done];
        let forged = PageToken {
            next_partition_key: key.encode("T", &request, &forged_places).next_partition_key,
            next_row_key: token.next_row_key.clone(),
        };
        assert!(matches!(
            key.decode("T", &request, &forged, 2),
            Err(Error::InvalidCursor(_))
        ));
        let payload = serde_json::to_string(&forged_places).unwrap();
        let unkeyed = crate::value::hex(&Sha256::digest(payload.as_bytes())[..16]);
        let forged = PageToken {
            next_partition_key: forged.next_partition_key,
            next_row_key: Some(unkeyed),
        };
        assert!(key.decode("T", &request, &forged, 2).is_err());
        // The same pool's key in another process takes it.
        let shared = CursorKey::of_pool("abc");
        let token = shared.encode("T", &request, &places);
        assert!(CursorKey::of_pool("abc").decode("T", &request, &token, 2).is_ok());
        assert!(CursorKey::of_pool("abd").decode("T", &request, &token, 2).is_err());
    }
}
