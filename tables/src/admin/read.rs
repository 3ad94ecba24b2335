//! Reading one entity as one version: its rows and blobs checked
//! together, read again by its keys when a check fails.

use super::Admin;
use crate::backend::race::{race_backoff, RACE_ATTEMPTS};
use crate::error::{Error, Result};
use crate::large::entity_rows::{continuation_range, DAMAGE_CONFIRMATIONS};
use crate::large::logical::{assemble, Assembled, Damage, LogicalEntity};
use crate::layout::{split_parts, SPLIT_OF};
use crate::value::Row;

/// What reading one entity found.
#[derive(Debug)]
pub enum Read {
    /// The entity, whole and checked.
    Whole(LogicalEntity),
    /// The entity is damaged (the same version failed its check on every read).
    Damaged(LogicalEntity, Vec<Damage>),
}

impl Admin {
    /// Reads each blob `entity` references and checks it against its
    /// reference (length and SHA-256), keeping the bytes when `keep`.
    pub(crate) async fn check_blobs(&self, entity: &mut LogicalEntity, keep: bool) -> Result<Vec<Damage>> {
        let mut damage = Vec::new();
        if entity.blobs.is_empty() {
            return Ok(damage);
        }
        let blobs = self.blob_store()?;
        for blob in &mut entity.blobs {
            let path = &blob.reference.path;
            match blobs.backend.get_hashed(&blobs.options.container, path).await? {
                None => damage.push(Damage::DanglingBlob {
                    column: blob.column.clone(),
                    path: path.clone(),
                }),
                Some((_, bytes, sha)) => {
                    if sha != blob.reference.sha256.to_ascii_lowercase() || bytes.len() as u64 != blob.reference.length
                    {
                        damage.push(Damage::ChangedBlob {
                            column: blob.column.clone(),
                            path: path.clone(),
                        });
                    } else if keep {
                        blob.bytes = Some(bytes);
                    }
                }
            }
        }
        Ok(damage)
    }

    /// The continuation rows `1..=parts` of a main row.
    pub(crate) async fn continuation_rows(&self, partition_key: &str, row_key: &str, parts: usize) -> Result<Vec<Row>> {
        if parts == 0 {
            return Ok(Vec::new());
        }
        let request = crate::backend::QueryRequest {
            filter: Some(continuation_range(partition_key, row_key, parts)),
            select: None,
            top: None,
        };
        let mut pages = self.store.pages(request).await?;
        let mut rows = Vec::new();
        while let Some(page) = pages.next(|_| true).await? {
            rows.extend(page);
        }
        Ok(rows)
    }

    /// Checks an entity assembled from a scan; when it fails its check, reads
    /// it again as one version (main row, continuation rows, blobs) until a
    /// version passes, it is gone (`None`), or the same version fails every time.
    pub(crate) async fn settle(&self, assembled: Assembled, keep_blobs: bool) -> Result<Option<Read>> {
        let Assembled { mut entity, mut damage } = assembled;
        if damage.is_empty() {
            damage = self.check_blobs(&mut entity, keep_blobs).await?;
        }
        if damage.is_empty() {
            return Ok(Some(Read::Whole(entity)));
        }
        let (pk, rk) = (entity.row.partition_key.clone(), entity.row.row_key.clone());
        let (mut moved, mut unchanged) = (0u32, 0u32);
        let mut etag = entity.row.etag.clone();
        loop {
            tokio::time::sleep(race_backoff(moved + unchanged + 1)).await;
            let Some(main) = self.tables.shared.backend.get(&self.table, &pk, &rk).await? else {
                return Ok(None);
            };
            if main.get(SPLIT_OF).is_some() {
                return Ok(None);
            }
            if main.etag != etag {
                moved += 1;
                if moved > RACE_ATTEMPTS {
                    return Err(Error::conflict(&self.table, &crate::Key::new(pk, rk)));
                }
            } else {
                unchanged += 1;
            }
            etag = main.etag.clone();
            let rows = self.continuation_rows(&pk, &rk, split_parts(&main)).await?;
            let Assembled {
                entity: mut again,
                damage: mut found,
            } = assemble(main, rows);
            if found.is_empty() {
                found = self.check_blobs(&mut again, keep_blobs).await?;
            }
            if found.is_empty() {
                return Ok(Some(Read::Whole(again)));
            }
            if unchanged > DAMAGE_CONFIRMATIONS {
                return Ok(Some(Read::Damaged(again, found)));
            }
        }
    }

    /// Reads one entity by its keys as one version: `None` when there is
    /// no such entity (or the keys name a continuation row). Its raw rows
    /// include the rows of its secondary indexes and its intents (what
    /// `get --raw` shows).
    pub async fn get(&self, partition_key: &str, row_key: &str) -> Result<Option<Read>> {
        self.store
            .op("get")
            .run(async move {
                crate::service::validate_key(crate::KeyKind::PartitionKey, partition_key)?;
                crate::service::validate_key(crate::KeyKind::RowKey, row_key)?;
                let Some(main) = self
                    .tables
                    .shared
                    .backend
                    .get(&self.table, partition_key, row_key)
                    .await?
                else {
                    return Ok(None);
                };
                if main.get(SPLIT_OF).is_some() {
                    return Ok(None);
                }
                let rows = self
                    .continuation_rows(partition_key, row_key, split_parts(&main))
                    .await?;
                let mut read = self.settle(assemble(main, rows), true).await?;
                if let Some(Read::Whole(e) | Read::Damaged(e, _)) = &mut read {
                    e.raw.extend(self.index_rows_of(partition_key, row_key).await?);
                }
                Ok(read)
            })
            .await
    }
}
