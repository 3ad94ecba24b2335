//! The index part of [`Admin::fsck`], without the program's types: the
//! index rows say which index they belong to and which columns it indexes
//! (`_IndexOf`, `_IndexOn`), so the indexes of a table are learned from its
//! index rows, each index row is checked against the entity it names, and
//! each entity against the indexes learned.

use std::collections::{BTreeMap, HashSet};

use super::fsck::Finding;
use super::Admin;
use crate::backend::{IfMatch, QueryRequest, WriteOp};
use crate::error::{ErrorKind, Result};
use crate::index::rows::{entity_of, index_row, is_intent, reservation, RowKeys};
use crate::index::{IndexDef, Projection};
use crate::layout::{
    is_index_key, INDEX_OF, INDEX_ON, INDEX_PARTITION, INDEX_PREFIX, INDEX_PREFIX_END, INDEX_ROW, INDEX_UNIQUE_ROW,
    INDEX_VALUE_END,
};
use crate::query::{CmpOp, Filter};
use crate::service::MAX_PAGE_SIZE;
use crate::value::{DateTime, Row, Value};

/// The indexes of a table, as its index rows describe them, and the keys of
/// every index row.
#[derive(Debug, Default)]
pub(crate) struct Learned {
    defs: Vec<IndexDef>,
    keys: HashSet<RowKeys>,
}

/// Text kept for the life of the process (an index's name and columns: a
/// table has few).
fn kept(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

/// The index an index row belongs to, as it describes it.
fn def_of(row: &Row) -> Option<(String, Vec<String>, bool, bool)> {
    let name = row.get(INDEX_OF)?.as_str()?.to_owned();
    let columns: Vec<String> = row.get(INDEX_ON)?.as_str()?.split(',').map(str::to_owned).collect();
    let global = is_index_key(&row.partition_key);
    let unique = match global {
        true => row.row_key == INDEX_UNIQUE_ROW,
        false => {
            let entity = row.get(INDEX_ROW).and_then(Value::as_str).unwrap_or_default();
            entity.is_empty() || !row.row_key.ends_with(&format!("{INDEX_VALUE_END}{entity}"))
        }
    };
    Some((name, columns, unique, global))
}

impl Learned {
    /// The index rows an entity lacks: (index name, index row keys); only
    /// local ones with `local_only`.
    pub(crate) fn missing(&self, entity: &Row, local_only: bool) -> Vec<(&'static str, RowKeys)> {
        self.defs
            .iter()
            .filter(|d| !(local_only && d.global))
            .filter_map(|d| {
                index_row(d, entity)
                    .ok()
                    .flatten()
                    .map(|r| (d.name, (r.partition_key, r.row_key)))
            })
            .filter(|(_, k)| !self.keys.contains(k))
            .collect()
    }
}

impl Admin {
    /// The index rows and intents naming the entity at (`partition_key`,
    /// `row_key`): those of its partition, and the global ones (a scan of
    /// the index partitions, server-side).
    pub(crate) async fn index_rows_of(&self, partition_key: &str, row_key: &str) -> Result<Vec<Row>> {
        let text = |s: &str| Value::String(s.to_owned());
        let under = |key: &str| {
            Filter::cmp(key, CmpOp::Ge, text(INDEX_PREFIX)).and(Filter::cmp(key, CmpOp::Lt, text(INDEX_PREFIX_END)))
        };
        let names = Filter::eq(INDEX_ROW, text(row_key));
        let local = Filter::eq("PartitionKey", text(partition_key))
            .and(under("RowKey"))
            .and(names.clone());
        let global = under("PartitionKey")
            .and(Filter::eq(INDEX_PARTITION, text(partition_key)))
            .and(names);
        let mut out = Vec::new();
        for filter in [local, global] {
            let request = QueryRequest {
                filter: Some(filter),
                select: None,
                top: Some(MAX_PAGE_SIZE),
            };
            let mut pages = self.store.pages(request).await?;
            while let Some(rows) = pages.next(|_| true).await? {
                out.extend(rows);
            }
        }
        Ok(out)
    }

    /// Reads the keys and descriptions of every index row in scope (local
    /// rows of the partition, or every index row of the table).
    pub(crate) async fn learn_indexes(&self, partition: Option<&str>) -> Result<Learned> {
        let text = |s: &str| Value::String(s.to_owned());
        let under = |key: &str| {
            Filter::cmp(key, CmpOp::Ge, text(INDEX_PREFIX)).and(Filter::cmp(key, CmpOp::Lt, text(INDEX_PREFIX_END)))
        };
        let filter = match partition {
            Some(p) => Filter::eq("PartitionKey", text(p)).and(under("RowKey")),
            None => under("RowKey").or(under("PartitionKey")),
        };
        let request = QueryRequest {
            filter: Some(filter),
            select: Some(vec![
                "RowKey".into(),
                INDEX_OF.into(),
                INDEX_ON.into(),
                INDEX_ROW.into(),
                INDEX_PARTITION.into(),
            ]),
            top: Some(MAX_PAGE_SIZE),
        };
        let mut pages = self.store.pages(request).await?;
        let mut out = Learned::default();
        let mut seen: BTreeMap<String, ()> = BTreeMap::new();
        while let Some(rows) = pages.next(|_| true).await? {
            for row in rows.into_iter().filter(|r| r.get(INDEX_OF).is_some() && !is_intent(r)) {
                if let Some((name, columns, unique, global)) = def_of(&row) {
                    if seen.insert(name.clone(), ()).is_none() {
                        let columns: Vec<&'static str> = columns.iter().map(|c| kept(c)).collect();
                        out.defs.push(IndexDef {
                            name: kept(&name),
                            columns: Box::leak(columns.into_boxed_slice()),
                            unique,
                            global,
                            projection: Projection::Keys,
                        });
                    }
                }
                out.keys.insert((row.partition_key, row.row_key));
            }
        }
        Ok(out)
    }

    /// Checks one index row against the entity it names: an intent not
    /// applied, a row whose entity is gone, a row whose entity holds another
    /// value. With `repair`, a row whose entity (read again) does not need it
    /// is deleted on condition of the version scanned, unless it is the
    /// reservation of a write still in flight (reported, never repaired).
    pub(crate) async fn check_index_row(&self, learned: &Learned, row: Row, repair: bool) -> Result<Option<Finding>> {
        let (pk, rk) = (row.partition_key.clone(), row.row_key.clone());
        if is_intent(&row) {
            return Ok(Some(Finding::IndexIntent {
                partition_key: pk,
                row_key: rk,
            }));
        }
        let index = row.get(INDEX_OF).and_then(Value::as_str).unwrap_or_default().to_owned();
        // Learned when the check started (a row of an index first written since is left to the next check).
        let Some(def) = learned.defs.iter().find(|d| d.name == index) else {
            return Ok(None);
        };
        let Some((epk, erk)) = entity_of(&row) else {
            return Ok(None);
        };
        let entity = self.tables.shared.backend.get(&self.table, &epk, &erk).await?;
        // Only its keys and indexed cells are compared: projections are the program's.
        let needed = entity.as_ref().and_then(|e| index_row(def, e).ok().flatten());
        let holds = needed.is_some_and(|n| {
            n.partition_key == pk && n.row_key == rk && def.columns.iter().all(|c| n.get(c) == row.get(c))
        });
        if holds {
            return Ok(None);
        }
        // A write still in flight: its reservation is made, its entity not
        // written yet (or written since it was read). Not drift until it expires.
        if self.in_flight(&row) {
            return Ok(Some(Finding::IndexInFlight {
                index,
                partition_key: pk,
                row_key: rk,
            }));
        }
        let repaired = repair && self.delete_index_row(&row).await?;
        Ok(Some(match entity {
            None => Finding::IndexOrphan {
                index,
                partition_key: pk,
                row_key: rk,
                repaired,
            },
            Some(_) => Finding::IndexStale {
                index,
                partition_key: pk,
                row_key: rk,
                repaired,
            },
        }))
    }

    /// Whether a row is a reservation of a unique global value that is not
    /// confirmed and younger than the handle's
    /// [`StoreOptions::unique_reservation_timeout`](crate::StoreOptions::unique_reservation_timeout):
    /// its write may still land, so it is live whatever its entity says now
    /// (the rule of `Store::check_indexes` and of the reservation protocol).
    fn in_flight(&self, row: &Row) -> bool {
        let (at, confirmed) = reservation(row);
        let timeout = self.tables.shared.options.unique_reservation_timeout;
        let young = at.is_some_and(|at| {
            let nanos = DateTime::now().unix_nanos() - at.unix_nanos();
            u128::try_from(nanos).map_or(true, |n| n < timeout.as_nanos())
        });
        !confirmed && young
    }

    /// Deletes an index row on the version scanned; `false` when it changed since.
    async fn delete_index_row(&self, row: &Row) -> Result<bool> {
        let Some(etag) = row.etag.clone() else { return Ok(false) };
        let op = WriteOp::Delete {
            partition_key: row.partition_key.clone(),
            row_key: row.row_key.clone(),
            condition: IfMatch::ETag(etag),
        };
        match self.store.commit(crate::store::Write::one(op)).await {
            Ok(_) => Ok(true),
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PreconditionFailed) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
