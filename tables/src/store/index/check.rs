//! Checking a type's indexes against its entities ([`Store::check_indexes`])
//! and repairing what is provably safe.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::applier::Applied;
use crate::backend::QueryRequest;
use crate::entity::{Key, TableEntity};
use crate::error::Result;
use crate::index::rows::{entity_of, index_row, is_intent, same_cells, RowKeys};
use crate::layout::{is_index_key, is_index_row, INDEX_OF, SPLIT_OF};
use crate::query::Filter;
use crate::service::MAX_PAGE_SIZE;
use crate::store::Store;
use crate::value::{Row, Value};

/// What [`Store::check_indexes`] reads and may do.
#[derive(Debug, Clone, Default)]
pub struct IndexCheckOptions {
    /// One partition (its local indexes and intents), or the whole table.
    pub partition: Option<String>,
    /// Also repair what is safe to repair (see [`Store::check_indexes`]).
    pub repair: bool,
}

/// One piece of index drift [`Store::check_indexes`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "finding", rename_all = "snake_case")]
#[non_exhaustive]
pub enum IndexFinding {
    /// An entity without the index row its value needs.
    Missing {
        /// The index.
        index: String,
        /// The entity's PartitionKey.
        partition_key: String,
        /// The entity's RowKey.
        row_key: String,
        /// Whether the repair wrote it.
        repaired: bool,
    },
    /// An index row whose entity is gone.
    Orphan {
        /// The index.
        index: String,
        /// The index row's PartitionKey.
        partition_key: String,
        /// The index row's RowKey.
        row_key: String,
        /// Whether the repair deleted it.
        repaired: bool,
    },
    /// An index row whose entity holds another value (or other projected
    /// cells) than the row says.
    Stale {
        /// The index.
        index: String,
        /// The index row's PartitionKey.
        partition_key: String,
        /// The index row's RowKey.
        row_key: String,
        /// Whether the repair brought it into line.
        repaired: bool,
    },
    /// Two entities hold one value of a unique index. Never repaired:
    /// change one of them.
    Duplicate {
        /// The index.
        index: String,
        /// The value's index row (PartitionKey, RowKey).
        partition_key: String,
        /// See `partition_key`.
        row_key: String,
        /// The entities holding it: (PartitionKey, RowKey).
        holders: Vec<(String, String)>,
    },
    /// An intent of a global index write not applied yet.
    Intent {
        /// Its PartitionKey (the entity's).
        partition_key: String,
        /// Its RowKey.
        row_key: String,
        /// Whether the repair applied it.
        applied: bool,
    },
}

/// What [`Store::check_indexes`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IndexReport {
    /// Entities checked.
    pub entities: u64,
    /// Index rows read.
    pub index_rows: u64,
    /// What was found, by entity.
    pub findings: Vec<IndexFinding>,
    /// Findings the repair fixed.
    pub repaired: u64,
}

impl IndexReport {
    /// Whether nothing was found.
    pub fn is_clean(&self) -> bool {
        self.findings.is_empty()
    }
}

/// Whose an index row is: the entity it names.
fn owner(row: &Row) -> Option<Key> {
    entity_of(row).map(|(p, r)| Key::new(p, r))
}

impl<T: TableEntity> Store<T> {
    /// Checks the rows of `T`'s indexes against its entities: every entity
    /// has the index rows its values need, with the cells they carry; every
    /// index row names an entity that needs it; no value of a unique index
    /// has two holders; no intent is left unapplied. Over one partition,
    /// only its local indexes and intents are checked (global index rows
    /// live in partitions of their own).
    ///
    /// With [`IndexCheckOptions::repair`], what is provably safe is repaired:
    /// each entity with drift has its index rows brought into line as the
    /// applier does (a row is written from the entity as read, a row it does
    /// not need is deleted on condition of the version read, and the entity
    /// is read again after: if it changed, the work is done again), and left
    /// intents are applied. Two holders of a unique value are only reported.
    ///
    /// Reads every row in scope once and keeps the index rows' keys in
    /// memory; then one read per finding, and a few writes per repair.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, Tables};
    /// use unified_tables::IndexCheckOptions;
    /// #[derive(TableEntity)]
    /// struct User { #[table(partition_key)] org: String, #[table(row_key)] id: String, #[unique] email: String }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let users = Tables::memory().store::<User>();
    /// users.create(&mut User { org: "o".into(), id: "1".into(), email: "a@x.com".into() }).await?;
    /// let report = users.check_indexes(IndexCheckOptions::default()).await?;
    /// assert!(report.is_clean(), "{report:?}");
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn check_indexes(&self, options: IndexCheckOptions) -> Result<IndexReport> {
        let mut out = IndexReport::default();
        let filter = options
            .partition
            .as_deref()
            .map(|p| Filter::eq("PartitionKey", Value::String(p.to_owned())));
        let request = QueryRequest {
            filter,
            select: None,
            top: Some(MAX_PAGE_SIZE),
        };
        let local_only = options.partition.is_some();
        // What the entities need, and what is stored: by index row keys.
        let mut needed: BTreeMap<RowKeys, (usize, Key, Row)> = BTreeMap::new();
        let mut stored: BTreeMap<RowKeys, Row> = BTreeMap::new();
        let mut entities: BTreeSet<Key> = BTreeSet::new();
        let mut intents: Vec<Row> = Vec::new();
        let mut duplicates: BTreeMap<RowKeys, BTreeSet<Key>> = BTreeMap::new();
        let mut pages = self.pages(request).await?;
        while let Some(rows) = pages.next(|_| true).await? {
            for row in rows {
                if is_intent(&row) {
                    intents.push(row);
                } else if is_index_row(&row) {
                    out.index_rows += 1;
                    stored.insert((row.partition_key.clone(), row.row_key.clone()), row);
                } else if row.get(SPLIT_OF).is_none()
                    && !is_index_key(&row.row_key)
                    && !is_index_key(&row.partition_key)
                {
                    out.entities += 1;
                    let key = Key::new(row.partition_key.clone(), row.row_key.clone());
                    for (i, def) in T::INDEXES.iter().enumerate() {
                        if def.global && local_only {
                            continue;
                        }
                        let Ok(Some(ix)) = index_row(def, &row) else { continue };
                        let keys = (ix.partition_key.clone(), ix.row_key.clone());
                        if let Some((_, first, _)) = needed.get(&keys) {
                            let holders = duplicates.entry(keys.clone()).or_default();
                            holders.insert(first.clone());
                            holders.insert(key.clone());
                            continue;
                        }
                        needed.insert(keys, (i, key.clone(), ix));
                    }
                    entities.insert(key);
                }
            }
        }
        // Drift, by the entity whose rows it is.
        let mut drift: BTreeMap<Key, BTreeSet<RowKeys>> = BTreeMap::new();
        let mut findings: Vec<(Key, IndexFinding)> = Vec::new();
        for (keys, (i, entity, row)) in &needed {
            if duplicates.contains_key(keys) {
                continue;
            }
            let index = T::INDEXES[*i].name.to_owned();
            let (partition_key, row_key) = keys.clone();
            match stored.get(keys) {
                None => {
                    drift.entry(entity.clone()).or_default().insert(keys.clone());
                    let finding = IndexFinding::Missing {
                        index,
                        partition_key: entity.partition_key.clone(),
                        row_key: entity.row_key.clone(),
                        repaired: false,
                    };
                    findings.push((entity.clone(), finding));
                }
                Some(have) if owner(have).as_ref() != Some(entity) || !same_cells(have, row) => {
                    drift.entry(entity.clone()).or_default().insert(keys.clone());
                    let finding = IndexFinding::Stale {
                        index,
                        partition_key,
                        row_key,
                        repaired: false,
                    };
                    findings.push((entity.clone(), finding));
                }
                Some(_) => {}
            }
        }
        for (keys, row) in stored
            .iter()
            .filter(|(k, _)| !needed.contains_key(*k) && !duplicates.contains_key(*k))
        {
            if local_only && is_index_key(&row.partition_key) {
                continue;
            }
            let index = row.get(INDEX_OF).and_then(Value::as_str).unwrap_or_default().to_owned();
            let Some(entity) = owner(row) else { continue };
            let (partition_key, row_key) = keys.clone();
            let finding = match entities.contains(&entity) {
                true => IndexFinding::Stale {
                    index,
                    partition_key,
                    row_key,
                    repaired: false,
                },
                false => IndexFinding::Orphan {
                    index,
                    partition_key,
                    row_key,
                    repaired: false,
                },
            };
            drift.entry(entity.clone()).or_default().insert(keys.clone());
            findings.push((entity, finding));
        }
        // Repair entity by entity: bring each one's rows into line.
        let mut fixed: BTreeSet<Key> = BTreeSet::new();
        if options.repair {
            for (entity, named) in &drift {
                if self.reconcile(T::INDEXES, false, entity, named).await? == Applied::Done {
                    fixed.insert(entity.clone());
                }
            }
        }
        for (entity, mut finding) in findings {
            if fixed.contains(&entity) {
                match &mut finding {
                    IndexFinding::Missing { repaired, .. }
                    | IndexFinding::Orphan { repaired, .. }
                    | IndexFinding::Stale { repaired, .. } => *repaired = true,
                    _ => {}
                }
                out.repaired += 1;
            }
            out.findings.push(finding);
        }
        for (keys, holders) in duplicates {
            let index = needed.get(&keys).map(|(i, ..)| T::INDEXES[*i].name).unwrap_or_default();
            out.findings.push(IndexFinding::Duplicate {
                index: index.to_owned(),
                partition_key: keys.0,
                row_key: keys.1,
                holders: holders.into_iter().map(|k| (k.partition_key, k.row_key)).collect(),
            });
        }
        for intent in intents {
            let applied = options.repair && self.apply_intent(T::INDEXES, &intent).await? == Applied::Done;
            out.repaired += u64::from(applied);
            out.findings.push(IndexFinding::Intent {
                partition_key: intent.partition_key,
                row_key: intent.row_key,
                applied,
            });
        }
        Ok(out)
    }
}
