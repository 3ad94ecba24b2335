//! The index step of the write pipeline: which index operations join an
//! entity's transaction (local indexes), which intent it records (global
//! indexes), and what a transaction refused on a unique index row means.

use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::entity::{Key, TableEntity};
use crate::error::{Error, KeyKind, Result};
use crate::index::rows::{entity_of, index_row, indexed_cells, intent_row, same_cells, RowKeys};
use crate::index::IndexDef;
use crate::layout::{is_index_key, INDEX_PREFIX};
use crate::store::write::settle::new_token;
use crate::store::write::{Committed, Write};
use crate::store::Store;
use crate::value::{Row, Value};

/// A unique local index row a write inserts: if the transaction is refused
/// because the row exists, [`Store::unique_conflict`] tells who holds it.
#[derive(Debug, Clone)]
pub(crate) struct Claim {
    /// The entity claiming the value.
    pub(crate) entity: Key,
    pub(crate) def: &'static IndexDef,
    pub(crate) keys: RowKeys,
    /// The index row the write needs.
    pub(crate) row: Row,
    /// The value as an error shows it.
    pub(crate) shown: String,
}

/// What the index step adds to one entity's write.
#[derive(Debug, Default)]
pub(crate) struct IndexPlan {
    /// The indexes it was planned for.
    pub(crate) defs: &'static [IndexDef],
    /// The unique local index rows the write inserts.
    pub(crate) claims: Vec<Claim>,
    /// The intents the write records (global indexes), for the applier once it committed.
    pub(crate) intents: Vec<RowKeys>,
    /// The unique global values the write needs reserved first.
    pub(crate) reservations: Vec<Claim>,
}

/// Operations a write of a type with `defs` may add to its transaction:
/// two per local index (remove the old row, add the new one) and an intent.
pub(crate) const fn reserved_ops(defs: &[IndexDef]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < defs.len() {
        n += if defs[i].global { 0 } else { 2 };
        i += 1;
    }
    if crate::index::any_global(defs) {
        n += 1;
    }
    n
}

/// A value as messages show it: text quoted, the rest as written.
pub(crate) fn shown(cells: &[&Value]) -> String {
    let parts: Vec<String> = cells
        .iter()
        .map(|v| match v {
            Value::String(s) => format!("{:?}", crate::service::shown(s)),
            Value::Int32(n) => n.to_string(),
            Value::Int64(n) => n.to_string(),
            Value::Double(d) => d.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::DateTime(t) => t.to_string(),
            Value::Guid(g) => g.to_string(),
            Value::Binary(b) => format!("{} bytes", b.len()),
        })
        .collect();
    match parts.as_slice() {
        [one] => one.clone(),
        many => format!("({})", many.join(", ")),
    }
}

/// Refuses keys under the reserved index prefix for a type with indexes.
pub(crate) fn check_entity_keys(key: &Key) -> Result<()> {
    for (which, k) in [
        (KeyKind::PartitionKey, &key.partition_key),
        (KeyKind::RowKey, &key.row_key),
    ] {
        if is_index_key(k) {
            return Err(Error::InvalidKey {
                which,
                key: k.clone(),
                reason: format!(
                    "keys starting with `{INDEX_PREFIX}` are reserved for the rows of secondary indexes in a table of an indexed type; nothing was written"
                ),
            });
        }
    }
    Ok(())
}

/// The index row `def` keeps for a stored row, `None` when it keeps none
/// (a value absent, or one too long for a key: no row was written for it).
fn stored_index_row(def: &IndexDef, stored: Option<&Row>) -> Option<Row> {
    stored.and_then(|s| index_row(def, s).ok().flatten())
}

/// Plans the index operations of writing `new` (`None`: deleting) over
/// `stored` (`None`: nothing stored). The operations follow the entity's
/// own in its transaction: additions first, then removals (which may find
/// their row gone, and are then dropped by the send).
pub(crate) fn plan(
    defs: &'static [IndexDef],
    key: &Key,
    stored: Option<&Row>,
    new: Option<&Row>,
) -> Result<(Vec<WriteOp>, IndexPlan)> {
    let mut plan = IndexPlan {
        defs,
        ..IndexPlan::default()
    };
    if defs.is_empty() {
        return Ok((Vec::new(), plan));
    }
    check_entity_keys(key)?;
    let mut additions = Vec::new();
    let mut removals = Vec::new();
    let mut global_keys: Vec<RowKeys> = Vec::new();
    for def in defs {
        let old = stored_index_row(def, stored);
        let fresh = match new {
            Some(n) => index_row(def, n)?,
            None => None,
        };
        let keys = |r: &Row| (r.partition_key.clone(), r.row_key.clone());
        if def.global {
            let changed = match (&old, &fresh) {
                (Some(o), Some(f)) => keys(o) != keys(f) || !same_cells(o, f),
                (None, None) => false,
                _ => true,
            };
            // A unique value the write moves to is claimed by its reservation: the intent
            // names the value it leaves (to release); other rows both.
            if changed {
                global_keys.extend(old.as_ref().map(keys));
                if !def.unique {
                    global_keys.extend(fresh.as_ref().map(keys));
                }
            }
            if def.unique {
                let moved = fresh
                    .as_ref()
                    .is_some_and(|f| old.as_ref().is_none_or(|o| keys(o) != keys(f)));
                if let (true, Some(f), Some(n)) = (moved, &fresh, new) {
                    let cells = indexed_cells(def, n).unwrap_or_default();
                    plan.reservations.push(Claim {
                        entity: key.clone(),
                        def,
                        keys: keys(f),
                        row: f.clone(),
                        shown: shown(&cells),
                    });
                }
            }
            continue;
        }
        match (old, fresh) {
            (Some(o), Some(f)) if keys(&o) == keys(&f) => {
                if !same_cells(&o, &f) {
                    additions.push(WriteOp::Upsert {
                        row: f,
                        mode: UpdateMode::Replace,
                    });
                }
            }
            (old, fresh) => {
                if let Some(o) = old {
                    removals.push(WriteOp::Delete {
                        partition_key: o.partition_key,
                        row_key: o.row_key,
                        condition: IfMatch::Any,
                    });
                }
                if let Some(f) = fresh {
                    if def.unique {
                        let cells = new.and_then(|n| indexed_cells(def, n)).unwrap_or_default();
                        plan.claims.push(Claim {
                            entity: key.clone(),
                            def,
                            keys: keys(&f),
                            row: f.clone(),
                            shown: shown(&cells),
                        });
                        additions.push(WriteOp::Insert(f));
                    } else {
                        additions.push(WriteOp::Upsert {
                            row: f,
                            mode: UpdateMode::Replace,
                        });
                    }
                }
            }
        }
    }
    if !global_keys.is_empty() {
        global_keys.dedup();
        let intent = intent_row(&key.partition_key, &key.row_key, &new_token(), &global_keys)?;
        plan.intents
            .push((intent.partition_key.clone(), intent.row_key.clone()));
        additions.push(WriteOp::Insert(intent));
    }
    additions.extend(removals);
    Ok((additions, plan))
}

impl IndexPlan {
    /// Adds another entity's plan to this one (entities sharing a transaction).
    pub(crate) fn absorb(&mut self, other: IndexPlan) {
        if self.defs.is_empty() {
            self.defs = other.defs;
        }
        self.claims.extend(other.claims);
        self.intents.extend(other.intents);
        self.reservations.extend(other.reservations);
    }
}

impl<T: TableEntity> Store<T> {
    /// The index operations and plan of writing `new` over `stored`, for `T`'s indexes.
    pub(crate) fn plan_indexes(
        &self,
        key: &Key,
        stored: Option<&Row>,
        new: Option<&Row>,
    ) -> Result<(Vec<WriteOp>, IndexPlan)> {
        plan(T::INDEXES, key, stored, new)
    }
}

impl<T> Store<T> {
    /// After a transaction holding `claims` was refused with 409: whether
    /// one of them is held by another entity (then [`Error::UniqueViolation`]),
    /// or by a row that no longer says anything true (its entity gone or
    /// holding another value: the row is removed on condition of the version
    /// read, and the write may be tried again: `Ok(true)`). `Ok(false)`: no
    /// claim explains the refusal.
    pub(crate) async fn unique_conflict(&self, claims: &[Claim]) -> Result<bool> {
        let mut retry = false;
        for claim in claims {
            let (pk, rk) = &claim.keys;
            let Some(held) = self.shared.backend.get(&self.table, pk, rk).await? else {
                continue; // not (or no longer) there: it does not explain the refusal
            };
            let holder = entity_of(&held).map(|(p, r)| Key::new(p, r));
            if holder.as_ref() == Some(&claim.entity) {
                if self.holds(claim.def, &claim.entity, &held).await? {
                    // Ours and true (a create of an entity that exists): the refusal is the entity's.
                    continue;
                }
                // Ours, left by an earlier write: the next attempt replaces it.
                self.remove_if_unchanged(&held).await?;
                retry = true;
                continue;
            }
            let true_holder = match &holder {
                Some(h) => self.holds(claim.def, h, &held).await?,
                None => false,
            };
            if true_holder {
                return Err(Error::UniqueViolation {
                    table: self.table.clone(),
                    index: claim.def.name.to_owned(),
                    value: claim.shown.clone(),
                    holder: Box::new(holder.unwrap_or_else(|| Key::new("", ""))),
                });
            }
            self.remove_if_unchanged(&held).await?;
            retry = true;
        }
        Ok(retry)
    }

    /// Whether the entity at `holder` still needs the index row `row` of
    /// `def` (it holds the value the row names).
    pub(crate) async fn holds(&self, def: &IndexDef, holder: &Key, row: &Row) -> Result<bool> {
        let entity = self
            .shared
            .backend
            .get(&self.table, &holder.partition_key, &holder.row_key)
            .await?;
        Ok(entity
            .and_then(|e| index_row(def, &e).ok().flatten())
            .is_some_and(|needed| needed.partition_key == row.partition_key && needed.row_key == row.row_key))
    }

    /// Deletes an index row on condition of the version read (another
    /// writer's change of it wins).
    pub(crate) async fn remove_if_unchanged(&self, row: &Row) -> Result<()> {
        let condition = row.etag.clone().map_or(IfMatch::Any, IfMatch::ETag);
        let op = WriteOp::Delete {
            partition_key: row.partition_key.clone(),
            row_key: row.row_key.clone(),
            condition,
        };
        match self.commit(Write::one(op)).await.map(Committed::first) {
            Ok(_) => Ok(()),
            Err(e) if crate::backend::race::lost_race(e.kind()) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
