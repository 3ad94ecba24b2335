//! Create, read, update, upsert, delete: thin verbs over the write
//! pipeline (`write/`) and the read path (`read/`).

use super::read::is_not_an_entity;
use super::write::Verb;
use super::{Concurrency, Lookup, Store};
use crate::backend::IfMatch;
use crate::entity::TableEntity;
use crate::error::{Error, Result};
use crate::store::write::conditions::caller_version;
use crate::value::ETag;

impl<T: TableEntity> Store<T> {
    /// Inserts a new entity. Fails with [`Error::AlreadyExists`] if one with
    /// the same keys exists. Sets the entity's created and updated stamps to
    /// now, and its ETag and Timestamp to the stored version.
    ///
    /// One round trip. Like every write it carries a write token: if its
    /// answer is lost, one read of the row settles whether it was applied (a
    /// create that was succeeds with the stored ETag, never
    /// [`Error::AlreadyExists`] for its own row); see [`Tables::with_retry`](crate::Tables::with_retry).
    pub async fn create(&self, entity: &mut T) -> Result<ETag> {
        self.op("create")
            .run(async move { self.write_entity(entity, Verb::Create).await })
            .await
    }

    /// Reads one entity with its ETag, or `None` if it does not exist.
    ///
    /// One round trip.
    pub async fn get(&self, key: impl Into<Lookup<'_>>) -> Result<Option<T>> {
        self.op("get")
            .run(async move {
                let lookup = key.into();
                // A hit needs no key of its own: only a valid key was ever cached.
                let looked_up = match &lookup {
                    Lookup::Keys(pk, rk) => match self.cached_at(pk, rk) {
                        Some(hit) => return Ok(Some(hit)),
                        None => true,
                    },
                    _ => false,
                };
                let key = self.resolve(lookup)?;
                let read = match looked_up {
                    true => self.read_table(&key).await?,
                    false => self.read(&key).await?,
                };
                Ok(read.map(|(entity, _)| entity))
            })
            .await
    }

    /// Whether an entity with these keys exists: from the read cache when it
    /// holds the entity, else one round trip (which, for a type without
    /// large values, caches the entity it read).
    pub async fn exists(&self, key: impl Into<Lookup<'_>>) -> Result<bool> {
        self.op("exists")
            .run(async move {
                let key = self.resolve(key)?;
                if self.cached_presence(&key) {
                    return Ok(true);
                }
                let keeping = self.read_ticket(&key);
                self.ensure_created().await?;
                let row = self
                    .shared
                    .backend
                    .get(&self.table, &key.partition_key, &key.row_key)
                    .await?;
                // A continuation row of a large value is not an entity.
                let Some(row) = row.filter(|row| !is_not_an_entity(row) && self.admits(row)) else {
                    return Ok(false);
                };
                // A large value is never assembled to answer whether the row exists.
                if let (Some(keeping), false) = (keeping, const { T::SCHEMA.has_large_values() }) {
                    let etag = row.etag.clone().unwrap_or_else(|| ETag::new(""));
                    if let Ok(Some((entity, bytes))) = self.decode_weighed(row, true).await {
                        let etag = entity.etag().cloned().unwrap_or(etag);
                        self.keep_read(keeping, &key, &entity, &etag, bytes);
                    }
                }
                Ok(true)
            })
            .await
    }

    /// Inserts or replaces the entity, unconditionally, in one round trip.
    /// Keeps a created stamp the caller set (otherwise sets it to now) and
    /// sets the updated stamp to now.
    pub async fn upsert(&self, entity: &mut T) -> Result<ETag> {
        self.op("upsert")
            .run(async move { self.write_entity(entity, Verb::Upsert).await })
            .await
    }

    /// Replaces the stored entity whatever version is stored (`If-Match: *`):
    /// the unconditional counterpart of [`Store::update`], for every type,
    /// with or without an ETag field ([`HasETag`](crate::HasETag)). The row must exist
    /// ([`Error::NotFound`] otherwise; [`Store::upsert`] inserts instead).
    /// The same as `update_with(entity, Concurrency::LastWriterWins)`.
    ///
    /// ```
    /// # use unified_tables::{Error, TableEntity, Tables};
    /// #[derive(TableEntity)]
    /// struct Setting {
    ///     #[table(partition_key)] scope: String,
    ///     #[table(row_key)] name: String,
    ///     value: String,
    /// }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let settings = Tables::memory().store::<Setting>();
    /// let mut s = Setting { scope: "app".into(), name: "theme".into(), value: "dark".into() };
    /// settings.create(&mut s).await?;
    /// s.value = "light".into();
    /// settings.replace(&mut s).await?;                      // no ETag field: last writer wins
    /// # Ok::<(), Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn replace(&self, entity: &mut T) -> Result<ETag> {
        self.op("replace")
            .run(async move { self.replace_if(entity, IfMatch::Any).await })
            .await
    }

    pub(super) async fn update_conditional(&self, entity: &mut T, mode: Concurrency) -> Result<ETag> {
        let condition = self.condition_for(entity, mode)?;
        self.replace_if(entity, condition).await
    }

    /// Replaces the stored row under an explicit condition.
    pub(crate) async fn replace_if(&self, entity: &mut T, condition: IfMatch) -> Result<ETag> {
        self.write_entity(entity, Verb::Replace(condition)).await
    }

    /// Deletes the entity with these keys, whatever its version. Returns
    /// whether it existed; deleting a missing entity is not an error.
    ///
    /// A delete whose answer was lost is settled by the row being gone: it
    /// returns `true` (gone, as the caller wanted), also when its retry was
    /// answered 404 or another writer removed the row in between.
    pub async fn delete(&self, key: impl Into<Lookup<'_>>) -> Result<bool> {
        self.op("delete")
            .run(async move {
                let key = self.resolve(key)?;
                self.delete_one(&key, IfMatch::Any).await
            })
            .await
    }

    pub(super) async fn delete_conditional(&self, entity: &T) -> Result<()> {
        let key = entity.key();
        key.validate()?;
        let condition = self.condition_for(entity, Concurrency::Strict)?;
        self.delete_one(&key, condition).await.map(|_| ())
    }

    fn condition_for(&self, entity: &T, mode: Concurrency) -> Result<IfMatch> {
        match (mode, entity.etag()) {
            (Concurrency::LastWriterWins, _) => Ok(IfMatch::Any),
            // A caller's ETag is a version: `*` or an empty one is refused here.
            (_, Some(etag)) => caller_version(etag),
            (Concurrency::Auto, None) if self.shared.options.implicit_last_writer_wins => {
                tracing::warn!(table = %self.table, "update without an ETag: overwriting (implicit_last_writer_wins)");
                Ok(IfMatch::Any)
            }
            (_, None) => {
                let key = entity.key();
                Err(Error::MissingETag {
                    table: self.table.clone(),
                    partition_key: key.partition_key,
                    row_key: key.row_key,
                })
            }
        }
    }
}
