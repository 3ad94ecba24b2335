//! Checking a type's indexes against its entities ([`Store::check_indexes`])
//! and repairing what is provably safe.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{DefaultHasher, Hash, Hasher};

use serde::Serialize;

use super::applier::Applied;
use crate::backend::QueryRequest;
use crate::entity::{Key, TableEntity};
use crate::error::Result;
use crate::index::rows::{entity_of, index_row, is_intent, RowKeys};
use crate::layout::{is_index_key, is_index_row, INDEX_CONFIRMED, INDEX_OF, INDEX_RESERVED_AT, SPLIT_OF, WRITE_TOKEN};
use crate::query::Filter;
use crate::service::MAX_PAGE_SIZE;
use crate::store::Store;
use crate::value::{Row, Value};

/// The most index row keys [`Store::check_indexes`] holds at once (those
/// the entities need and those stored, together): past it, a pass keeps
/// half of its keys (by a hash of the keys) and leaves the other half to a
/// pass of its own.
pub(crate) const CHECK_KEYS_IN_MEMORY: usize = 16_384;

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

/// A fingerprint of what an index row says: its cells, but for a unique
/// global row's reservation and a request's write token (what
/// `same_cells` compares).
fn said(row: &Row) -> u64 {
    let mut cells: Vec<(&str, &Value)> = row
        .properties
        .iter()
        .map(|(name, v)| (name.as_ref(), v))
        .filter(|(name, _)| *name != INDEX_RESERVED_AT && *name != INDEX_CONFIRMED && *name != WRITE_TOKEN)
        .collect();
    cells.sort_by(|a, b| a.0.cmp(b.0));
    let mut h = DefaultHasher::new();
    for (name, v) in cells {
        name.hash(&mut h);
        format!("{v:?}").hash(&mut h);
    }
    h.finish()
}

/// Which keys a pass holds: those whose hash is `residue` modulo `classes`.
#[derive(Debug, Clone, Copy)]
struct Class {
    residue: u64,
    classes: u64,
}

impl Class {
    fn holds(self, keys: &RowKeys) -> bool {
        let mut h = DefaultHasher::new();
        keys.hash(&mut h);
        h.finish() % self.classes == self.residue
    }
}

/// An index row an entity needs: the index, the entity, what it says.
struct Needed {
    def: usize,
    entity: Key,
    said: u64,
}

/// An index row stored: its index, its entity, what it says.
struct Stored {
    index: String,
    owner: Option<Key>,
    said: u64,
}

/// One pass's keys: what the entities of its class need, and what is stored.
#[derive(Default)]
struct Pass {
    needed: BTreeMap<RowKeys, Needed>,
    stored: BTreeMap<RowKeys, Stored>,
    duplicates: BTreeMap<RowKeys, BTreeSet<Key>>,
}

impl Pass {
    fn len(&self) -> usize {
        self.needed.len() + self.stored.len() + self.duplicates.len()
    }

    /// Keeps the keys of `class` only.
    fn retain(&mut self, class: Class) {
        self.needed.retain(|k, _| class.holds(k));
        self.stored.retain(|k, _| class.holds(k));
        self.duplicates.retain(|k, _| class.holds(k));
    }
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
    /// Memory is bounded whatever the table's size: a pass reads every row in
    /// scope, a page at a time, and keeps the keys of index rows only (those
    /// the entities need and those stored, with a fingerprint of their
    /// cells), at most 16,384 of them. When a pass would hold more, it keeps
    /// half of them (chosen by a hash of the keys) and leaves the other half
    /// to another pass: a table holding up to about 8,000 index rows is
    /// checked in one pass, a larger one in about one pass per 8,000 index
    /// rows. Then one read per finding, and a few writes per repair.
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
        self.op("check_indexes")
            .run(self.check_within(options, CHECK_KEYS_IN_MEMORY))
            .await
    }

    /// [`Store::check_indexes`], holding at most `budget` keys at once.
    async fn check_within(&self, options: IndexCheckOptions, budget: usize) -> Result<IndexReport> {
        let mut out = IndexReport::default();
        let mut intents: Vec<RowKeys> = Vec::new();
        let mut todo = vec![Class { residue: 0, classes: 1 }];
        let mut first = true;
        while let Some(class) = todo.pop() {
            let counts = first.then_some((&mut out, &mut intents));
            let pass = self.check_pass(&options, budget, class, &mut todo, counts).await?;
            first = false;
            self.check_findings(&options, pass, &mut out).await?;
        }
        for (partition_key, row_key) in intents {
            let applied = match options.repair {
                true => match self.shared.backend.get(&self.table, &partition_key, &row_key).await? {
                    Some(intent) => self.apply_intent(T::INDEXES, &intent).await? == Applied::Done,
                    None => true,
                },
                false => false,
            };
            out.repaired += u64::from(applied);
            out.findings.push(IndexFinding::Intent {
                partition_key,
                row_key,
                applied,
            });
        }
        Ok(out)
    }

    /// Reads every row in scope and keeps the index row keys of `class`,
    /// splitting the class (the other half pushed to `todo`) whenever it
    /// would hold more than `budget` keys. The first pass also
    /// counts entities and index rows, and lists the intents.
    async fn check_pass(
        &self,
        options: &IndexCheckOptions,
        budget: usize,
        mut class: Class,
        todo: &mut Vec<Class>,
        mut counts: Option<(&mut IndexReport, &mut Vec<RowKeys>)>,
    ) -> Result<Pass> {
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
        let mut pass = Pass::default();
        let mut pages = self.pages(request).await?;
        while let Some(rows) = pages.next(|_| true).await? {
            for row in rows {
                if is_intent(&row) {
                    if let Some((_, intents)) = counts.as_mut() {
                        intents.push((row.partition_key, row.row_key));
                    }
                } else if is_index_row(&row) {
                    if let Some((out, _)) = counts.as_mut() {
                        out.index_rows += 1;
                    }
                    let keys = (row.partition_key.clone(), row.row_key.clone());
                    if class.holds(&keys) {
                        let stored = Stored {
                            index: row.get(INDEX_OF).and_then(Value::as_str).unwrap_or_default().to_owned(),
                            owner: owner(&row),
                            said: said(&row),
                        };
                        pass.stored.insert(keys, stored);
                    }
                } else if row.get(SPLIT_OF).is_none()
                    && !is_index_key(&row.row_key)
                    && !is_index_key(&row.partition_key)
                {
                    if let Some((out, _)) = counts.as_mut() {
                        out.entities += 1;
                    }
                    let key = Key::new(row.partition_key.clone(), row.row_key.clone());
                    for (i, def) in T::INDEXES.iter().enumerate() {
                        if def.global && local_only {
                            continue;
                        }
                        let Ok(Some(ix)) = index_row(def, &row) else { continue };
                        let keys = (ix.partition_key.clone(), ix.row_key.clone());
                        if !class.holds(&keys) {
                            continue;
                        }
                        if let Some(first) = pass.needed.get(&keys) {
                            let holders = pass.duplicates.entry(keys).or_default();
                            holders.insert(first.entity.clone());
                            holders.insert(key.clone());
                            continue;
                        }
                        let needed = Needed {
                            def: i,
                            entity: key.clone(),
                            said: said(&ix),
                        };
                        pass.needed.insert(keys, needed);
                    }
                }
                // Over the bound: keep half the class, and leave the other half for later.
                while pass.len() > budget && class.classes < 1 << 62 {
                    let wider = class.classes * 2;
                    todo.push(Class {
                        residue: class.residue + class.classes,
                        classes: wider,
                    });
                    class.classes = wider;
                    pass.retain(class);
                }
            }
        }
        Ok(pass)
    }

    /// Compares one pass's keys, repairs what is safe, and reports.
    async fn check_findings(&self, options: &IndexCheckOptions, pass: Pass, out: &mut IndexReport) -> Result<()> {
        let local_only = options.partition.is_some();
        let Pass {
            needed,
            stored,
            duplicates,
        } = pass;
        // Drift, by the entity whose rows it is.
        let mut drift: BTreeMap<Key, BTreeSet<RowKeys>> = BTreeMap::new();
        let mut findings: Vec<(Key, IndexFinding)> = Vec::new();
        for (keys, n) in &needed {
            if duplicates.contains_key(keys) {
                continue;
            }
            let index = T::INDEXES[n.def].name.to_owned();
            let (partition_key, row_key) = keys.clone();
            match stored.get(keys) {
                None => {
                    drift.entry(n.entity.clone()).or_default().insert(keys.clone());
                    let finding = IndexFinding::Missing {
                        index,
                        partition_key: n.entity.partition_key.clone(),
                        row_key: n.entity.row_key.clone(),
                        repaired: false,
                    };
                    findings.push((n.entity.clone(), finding));
                }
                Some(have) if have.owner.as_ref() != Some(&n.entity) || have.said != n.said => {
                    drift.entry(n.entity.clone()).or_default().insert(keys.clone());
                    let finding = IndexFinding::Stale {
                        index,
                        partition_key,
                        row_key,
                        repaired: false,
                    };
                    findings.push((n.entity.clone(), finding));
                }
                Some(_) => {}
            }
        }
        for (keys, row) in stored
            .iter()
            .filter(|(k, _)| !needed.contains_key(*k) && !duplicates.contains_key(*k))
        {
            if local_only && is_index_key(&keys.0) {
                continue;
            }
            let Some(entity) = row.owner.clone() else { continue };
            let (partition_key, row_key) = keys.clone();
            let index = row.index.clone();
            let finding = match self.main_row(&entity).await?.is_some() {
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
            let index = needed.get(&keys).map(|n| T::INDEXES[n.def].name).unwrap_or_default();
            out.findings.push(IndexFinding::Duplicate {
                index: index.to_owned(),
                partition_key: keys.0,
                row_key: keys.1,
                holders: holders.into_iter().map(|k| (k.partition_key, k.row_key)).collect(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::IndexCheckOptions;
    use crate::index::rows::index_row;
    use crate::{TableEntity, Tables};

    #[derive(TableEntity, Clone)]
    struct Member {
        #[table(partition_key)]
        team: String,
        #[table(row_key)]
        id: String,
        #[unique]
        email: String,
        #[index]
        city: String,
    }

    fn member(team: &str, id: usize, city: &str) -> Member {
        Member {
            team: team.into(),
            id: format!("{id:04}"),
            email: format!("{id}@x.com"),
            city: city.into(),
        }
    }

    /// The findings as text, sorted: what a report says whatever the order.
    fn said(report: &super::IndexReport) -> Vec<String> {
        let mut out: Vec<String> = report.findings.iter().map(|f| format!("{f:?}")).collect();
        out.sort();
        out
    }

    #[tokio::test]
    async fn a_check_held_to_a_few_keys_finds_and_repairs_what_one_pass_does() {
        let db = Tables::memory();
        let members = db.store_in::<Member>("Members");
        for team in ["a", "b", "c"] {
            let rows: Vec<Member> = (0..40).map(|i| member(team, i, ["Lviv", "Kyiv"][i % 2])).collect();
            members.create_batch(&rows).await.unwrap();
        }
        // Drift: a row removed, an orphan, a stale row, two holders of one value.
        let backend = db.backend();
        let row = |m: &Member, def: usize| {
            index_row(&Member::INDEXES[def], &m.to_row(&Default::default()).unwrap())
                .unwrap()
                .unwrap()
        };
        let gone = row(&member("a", 3, "Kyiv"), 1);
        let remove = crate::backend::WriteOp::Delete {
            partition_key: gone.partition_key,
            row_key: gone.row_key,
            condition: crate::backend::IfMatch::Any,
        };
        backend.execute("Members", remove).await.unwrap();
        for extra in [row(&member("b", 900, "Odesa"), 1), row(&member("c", 7, "Rivne"), 1)] {
            let put = crate::backend::WriteOp::Upsert {
                row: extra,
                mode: crate::backend::UpdateMode::Replace,
            };
            backend.execute("Members", put).await.unwrap();
        }
        let mut twin = member("c", 8, "Lviv");
        twin.email = "9@x.com".into();
        let put = crate::backend::WriteOp::Upsert {
            row: twin.to_row(&Default::default()).unwrap(),
            mode: crate::backend::UpdateMode::Replace,
        };
        backend.execute("Members", put).await.unwrap();

        let whole = members
            .check_within(IndexCheckOptions::default(), usize::MAX)
            .await
            .unwrap();
        assert_eq!((whole.entities, whole.index_rows), (120, 241), "{whole:?}");
        assert_eq!(whole.findings.len(), 5, "{:?}", whole.findings);
        // A few keys at a time: many passes, the same report.
        let held = members.check_within(IndexCheckOptions::default(), 10).await.unwrap();
        assert_eq!((held.entities, held.index_rows), (whole.entities, whole.index_rows));
        assert_eq!(said(&held), said(&whole));
        let repair = IndexCheckOptions {
            repair: true,
            ..IndexCheckOptions::default()
        };
        let repaired = members.check_within(repair, 10).await.unwrap();
        assert_eq!(said(&repaired).len(), 5, "{:?}", repaired.findings);
        let after = members.check_within(IndexCheckOptions::default(), 10).await.unwrap();
        assert!(
            after
                .findings
                .iter()
                .all(|f| matches!(f, super::IndexFinding::Duplicate { .. })),
            "only the two holders are left: {:?}",
            after.findings
        );
    }
}
