//! [`Admin::export`]: a table (or one partition) as JSON Lines of logical
//! entities, blob files named by their SHA-256 and a manifest.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::archive::{
    archive_error, blob_file, blob_files, write_atomically, ArchiveFile, ArchiveManifest, BLOBS, MANIFEST,
};
use super::lines::entity_to_line;
use super::read::Read;
use super::scan::{Range, Scanned};
use super::{report, Admin, Event, Observer, Stop};
use crate::error::{Error, Result};
use crate::large::logical::assemble_with;
use crate::value::hex;

/// What [`Admin::export`] exports and how.
#[derive(Clone)]
pub struct ExportOptions {
    /// One partition, or the whole table.
    pub partition: Option<String>,
    /// Continue an export that was stopped or killed in the same directory
    /// (its manifest says where it stopped); without it, a directory that
    /// holds an export is refused.
    pub resume: bool,
    /// Entities per data file (default 10,000): a resumed export redoes at
    /// most the file it was writing.
    pub entities_per_file: u64,
    /// Where progress goes.
    pub observer: Option<Observer>,
    /// Stops the export after the entity being written; the manifest then
    /// records the position for `resume`.
    pub stop: Stop,
}

impl Default for ExportOptions {
    fn default() -> ExportOptions {
        ExportOptions {
            partition: None,
            resume: false,
            entities_per_file: 10_000,
            observer: None,
            stop: Stop::default(),
        }
    }
}

impl std::fmt::Debug for ExportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportOptions")
            .field("partition", &self.partition)
            .field("resume", &self.resume)
            .field("entities_per_file", &self.entities_per_file)
            .finish()
    }
}

/// What [`Admin::export`] did (the whole export, resumed parts included).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExportReport {
    /// The manifest as written.
    pub manifest: ArchiveManifest,
    /// Entities in the export.
    pub entities: u64,
    /// Whether the export was stopped before the end (continue with `resume`).
    pub interrupted: bool,
}

/// The data file being written.
struct Part {
    name: String,
    path: PathBuf,
    file: std::io::BufWriter<std::fs::File>,
    hasher: Sha256,
    bytes: u64,
    entities: u64,
}

impl Part {
    fn create(dir: &Path, index: usize) -> Result<Part> {
        let name = format!("entities-{index:05}.jsonl");
        let path = dir.join(&name);
        let file =
            std::fs::File::create(&path).map_err(|e| archive_error(&path, "cannot be created").with_source(e))?;
        Ok(Part {
            name,
            path,
            file: std::io::BufWriter::with_capacity(1 << 20, file),
            hasher: Sha256::new(),
            bytes: 0,
            entities: 0,
        })
    }

    fn write_line(&mut self, line: &str) -> Result<()> {
        let mut write = |bytes: &[u8]| -> Result<()> {
            self.hasher.update(bytes);
            self.bytes += bytes.len() as u64;
            self.file
                .write_all(bytes)
                .map_err(|e| archive_error(&self.path, "cannot be written").with_source(e))
        };
        write(line.as_bytes())?;
        write(b"\n")?;
        self.entities += 1;
        Ok(())
    }

    /// Flushes the file and forces it to disk, before the manifest names it.
    fn close(self) -> Result<ArchiveFile> {
        let file = self
            .file
            .into_inner()
            .map_err(|e| archive_error(&self.path, "cannot be written").with_source(e.into_error()))?;
        file.sync_all()
            .map_err(|e| archive_error(&self.path, "cannot be written to disk").with_source(e))?;
        Ok(ArchiveFile {
            name: self.name,
            entities: self.entities,
            bytes: self.bytes,
            sha256: hex(&self.hasher.finalize()),
        })
    }
}

impl Admin {
    /// Exports the table (or one partition) into `dir`: one JSON line per
    /// logical entity (see [`entity_to_line`]), in data
    /// files `entities-00001.jsonl`, …; each blob the entities reference as
    /// `blobs/{sha256}`; and `manifest.json` (format, version, table, counts,
    /// bytes, the SHA-256 of each data file).
    ///
    /// Each entity is exported as one version: its main row, continuation
    /// rows and blobs are checked together, and read again when the entity
    /// changed meanwhile. A damaged entity stops the export with
    /// [`Error::Integrity`] naming it (run [`Admin::fsck`]). Memory stays flat:
    /// rows are read a page at a time and written as they come.
    pub async fn export(&self, dir: &Path, options: ExportOptions) -> Result<ExportReport> {
        self.store.op("export").run(async move {
            std::fs::create_dir_all(dir.join(BLOBS)).map_err(|e| archive_error(dir, "cannot be made").with_source(e))?;
            let mut manifest = if options.resume {
                let m = ArchiveManifest::read(dir)?;
                if m.table != self.table || m.partition != options.partition {
                    return Err(archive_error(
                        dir,
                        format!(
                            "it holds an export of table `{}` (partition {:?}), not of `{}` (partition {:?})",
                            m.table, m.partition, self.table, options.partition
                        ),
                    ));
                }
                if m.complete {
                    return Ok(ExportReport {
                        entities: m.entities,
                        manifest: m,
                        interrupted: false,
                    });
                }
                report(
                    &options.observer,
                    Event::Note(format!("resuming after {} entities", m.entities)),
                );
                m
            } else {
                if dir.join(MANIFEST).exists() {
                    return Err(archive_error(
                        dir,
                        "it already holds an export; choose an empty directory, or pass resume to continue it",
                    ));
                }
                let m = ArchiveManifest::new(&self.table, options.partition.clone());
                m.write(dir)?;
                m
            };
            let range = Range {
                partition: options.partition.clone(),
                after: manifest.last.clone(),
            };
            let mut scan = self.scan(&range).await?;
            let per_file = options.entities_per_file.max(1);
            let mut part: Option<Part> = None;
            let (mut rows, mut bytes) = (manifest.rows, manifest.data_bytes);
            let mut interrupted = false;
            report(
                &options.observer,
                Event::Phase {
                    name: "scan",
                    total: None,
                },
            );
            while let Some(item) = scan.next().await? {
                let Scanned::Entity { main, continuations } = item else {
                    continue;
                };
                let entity_rows = 1 + continuations.len() as u64;
                let entity = match self.settle(assemble_with(main, continuations, false), true).await? {
                    None => continue,
                    Some(Read::Whole(entity)) => entity,
                    Some(Read::Damaged(entity, damage)) => {
                        return Err(Error::Integrity {
                            column: damage_column(&damage),
                            reason: format!(
                                "the entity with PartitionKey `{}` and RowKey `{}` is damaged ({damage:?}); run fsck, restore it, then export again",
                                entity.row.partition_key, entity.row.row_key
                            ),
                        })
                    }
                };
                for blob in &entity.blobs {
                    let path = blob_file(dir, &blob.reference.sha256);
                    if let (Some(data), false) = (&blob.bytes, path.exists()) {
                        write_atomically(&path, data)?;
                    }
                }
                let line = entity_to_line(&entity);
                if part.is_none() {
                    part = Some(Part::create(dir, manifest.files.len() + 1)?);
                }
                let p = part.as_mut().expect("a data file is open");
                p.write_line(&line)?;
                rows += entity_rows;
                bytes += line.len() as u64 + 1;
                manifest.last = Some((entity.row.partition_key, entity.row.row_key));
                let stop = options.stop.is_raised();
                if p.entities >= per_file || stop {
                    self.checkpoint(dir, &mut manifest, part.take(), rows)?;
                }
                report(
                    &options.observer,
                    Event::Progress {
                        rows,
                        entities: manifest.entities + part.as_ref().map_or(0, |p| p.entities),
                        bytes,
                    },
                );
                if stop {
                    interrupted = true;
                    break;
                }
            }
            self.checkpoint(dir, &mut manifest, part.take(), rows)?;
            if !interrupted {
                let blobs = blob_files(dir)?;
                manifest.blobs = blobs.len() as u64;
                manifest.blob_bytes = blobs.iter().map(|(_, len)| len).sum();
                manifest.complete = true;
                manifest.write(dir)?;
            }
            Ok(ExportReport {
                entities: manifest.entities,
                manifest,
                interrupted,
            })
        })
        .await
    }

    /// Closes the data file `part` and records it (and the position after
    /// it) in the manifest.
    fn checkpoint(&self, dir: &Path, manifest: &mut ArchiveManifest, part: Option<Part>, rows: u64) -> Result<()> {
        let Some(part) = part else { return Ok(()) };
        let file = part.close()?;
        manifest.entities += file.entities;
        manifest.data_bytes += file.bytes;
        manifest.rows = rows;
        manifest.files.push(file);
        // The data file is on disk before the manifest that names it is.
        manifest.write(dir)
    }
}

fn damage_column(damage: &[super::Damage]) -> String {
    use super::Damage::*;
    damage
        .iter()
        .find_map(|d| match d {
            MalformedManifest { column, .. }
            | MissingChunk { column, .. }
            | ExtraChunk { column, .. }
            | ChangedValue { column, .. }
            | MalformedReference { column, .. }
            | DanglingBlob { column, .. }
            | ChangedBlob { column, .. } => Some(column.clone()),
            MissingContinuationRow { .. } => None,
        })
        .unwrap_or_else(|| crate::layout::SPLIT_PARTS.to_owned())
}
