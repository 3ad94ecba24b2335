//! Sending typed partial updates.

use crate::backend::{IfMatch, UpdateMode, WriteOp};
use crate::entity::TableEntity;
use crate::error::{Error, Result};
use crate::store::write::conditions::caller_version;
use crate::store::write::{Committed, Write};
use crate::store::{now, Lookup, Store};
use crate::update::UpdateBuilder;
use crate::value::{ETag, Value};

impl<T: TableEntity> Store<T> {
    /// Writes only the columns the builder names, as a Merge with no read
    /// (one round trip). Concurrent patches of different columns both land.
    /// Without `with_etag` the row must exist (`If-Match: *`); with it, the
    /// patch is a compare-and-swap that fails with [`Error::Conflict`] if the
    /// row changed (an ETag of `*` or an empty one is not a version, and is
    /// refused with [`Error::InvalidValue`] before sending). Sets the updated
    /// stamp. Returns the new ETag.
    ///
    /// ```
    /// # use unified_tables::{TableEntity, TableRecord, Tables, ETag};
    /// #[derive(TableRecord, Debug)]
    /// struct Address { city: String }
    ///
    /// #[derive(TableEntity, Debug)]
    /// struct Customer {
    ///     #[table(partition_key)] region: String,
    ///     #[table(row_key)] email: String,
    ///     balance: f64,
    ///     #[table(flatten)] address: Address,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let store = Tables::memory().store::<Customer>();
    /// # store.create(&mut Customer { region: "eu".into(), email: "a".into(), balance: 0.0, address: Address { city: "Kyiv".into() } }).await?;
    /// store.patch(("eu", "a"), Customer::update().balance(250.0).address(|a| a.city("Lviv"))).await?;
    /// let c = store.get(("eu", "a")).await?.unwrap();
    /// assert_eq!((c.balance, c.address.city.as_str()), (250.0, "Lviv"));
    /// # Ok::<(), unified_tables::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn patch<B: UpdateBuilder<T>>(&self, key: impl Into<Lookup<'_>>, builder: B) -> Result<ETag> {
        self.op("patch")
            .run(async move {
                let key = self.resolve(key)?;
                let update = builder.into_update();
                if let Some(reason) = update.error {
                    return Err(Error::InvalidValue {
                        column: "update".into(),
                        reason,
                    });
                }
                for (column, roles) in &update.protected {
                    let allowed = update
                        .authorizer
                        .as_ref()
                        .is_some_and(|a| roles.iter().any(|role| a.has_role(role)));
                    if !allowed {
                        return Err(Error::Protected {
                            column: column.clone(),
                            roles: roles.join(", "),
                            from: "the stored value (not read by a partial update)".into(),
                            to: describe_cell(update.row.get(column)),
                        });
                    }
                }
                if update.row.properties.is_empty() {
                    return Err(Error::config("the update names no column: set at least one field"));
                }
                let mut row = update.row;
                row.partition_key = key.partition_key.clone();
                row.row_key = key.row_key.clone();
                if let Some(col) = T::SCHEMA.updated_column {
                    row.insert(col, Value::DateTime(now()));
                }
                self.check_limits_with_token(&mut row)?;
                let condition = match update.etag {
                    // A caller's ETag is a version, never the wildcard.
                    Some(etag) => caller_version(&etag)?,
                    None => IfMatch::Any,
                };
                self.ensure_created().await?;
                if crate::store::index::patch_touches::<T>(&row) {
                    return self.patch_indexed(&key, row, condition).await;
                }
                let op = WriteOp::Update {
                    row,
                    mode: UpdateMode::Merge,
                    condition,
                };
                let outcome = self
                    .commit(Write::one(op).tokens_on([0]))
                    .await
                    .map(Committed::first)
                    .map_err(|e| e.about_entity(&self.table, &key.partition_key, &key.row_key))?;
                Ok(outcome.etag.unwrap_or_else(|| ETag::new("")))
            })
            .await
    }
}

fn describe_cell(v: Option<&Value>) -> String {
    match v {
        None => "nothing".into(),
        Some(Value::String(s)) if s.chars().count() <= 64 => format!("{s:?}"),
        Some(Value::String(s)) => format!("a string of {} chars", s.chars().count()),
        Some(Value::Binary(b)) => format!("{} bytes", b.len()),
        Some(other) => format!("{other:?}"),
    }
}
