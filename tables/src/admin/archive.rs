//! The export directory: JSON Lines data files, blob files named by their
//! SHA-256 under `blobs/`, and `manifest.json` naming the format, the
//! table, the counts and the SHA-256 of every data file.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::value::hex;

/// The `format` of an export's manifest.
pub const ARCHIVE_FORMAT: &str = "unified-tables-export";
/// The version of the export format this crate writes and reads.
pub const ARCHIVE_VERSION: u32 = 1;
/// The manifest's file name.
pub(crate) const MANIFEST: &str = "manifest.json";
/// The folder of blob files.
pub(crate) const BLOBS: &str = "blobs";

/// One data file of an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveFile {
    /// Its name in the export directory.
    pub name: String,
    /// Entities (lines) it holds.
    pub entities: u64,
    /// Its length in bytes.
    pub bytes: u64,
    /// Lower-case hex SHA-256 of its bytes.
    pub sha256: String,
}

/// `manifest.json` of an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveManifest {
    /// Always [`ARCHIVE_FORMAT`].
    pub format: String,
    /// The format version ([`ARCHIVE_VERSION`]).
    pub version: u32,
    /// The table exported.
    pub table: String,
    /// The partition exported, when only one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    /// Entities in the data files.
    pub entities: u64,
    /// Rows those entities took in the table (continuation rows included).
    pub rows: u64,
    /// Bytes of the data files.
    pub data_bytes: u64,
    /// Blob files (each named by its SHA-256).
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
    /// The data files, in order.
    pub files: Vec<ArchiveFile>,
    /// Whether the export finished; an unfinished one is continued with `resume`.
    pub complete: bool,
    /// The last entity written (PartitionKey, RowKey), where a resumed export continues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<(String, String)>,
}

/// An error about `path`; a cause is attached with [`Error::with_source`]
/// (`archive_error(path, "cannot be read").with_source(e)`).
pub(crate) fn archive_error(path: &Path, reason: impl std::fmt::Display) -> Error {
    Error::Archive {
        path: path.display().to_string(),
        reason: reason.to_string(),
        source: None,
    }
}

impl ArchiveManifest {
    pub(crate) fn new(table: &str, partition: Option<String>) -> ArchiveManifest {
        ArchiveManifest {
            format: ARCHIVE_FORMAT.into(),
            version: ARCHIVE_VERSION,
            table: table.to_owned(),
            partition,
            entities: 0,
            rows: 0,
            data_bytes: 0,
            blobs: 0,
            blob_bytes: 0,
            files: Vec::new(),
            complete: false,
            last: None,
        }
    }

    /// Reads `dir/manifest.json`, checking its format and version.
    pub fn read(dir: &Path) -> Result<ArchiveManifest> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|e| archive_error(&path, "cannot be read").with_source(e))?;
        let manifest: ArchiveManifest =
            serde_json::from_str(&text).map_err(|e| archive_error(&path, "not a manifest").with_source(e))?;
        if manifest.format != ARCHIVE_FORMAT || manifest.version != ARCHIVE_VERSION {
            return Err(archive_error(
                &path,
                format!(
                    "format `{}` version {}; this program reads `{ARCHIVE_FORMAT}` version {ARCHIVE_VERSION}",
                    manifest.format, manifest.version
                ),
            ));
        }
        Ok(manifest)
    }

    /// Writes `dir/manifest.json` whole or not at all (a file beside it,
    /// renamed); with `sync`, on disk first.
    pub(crate) fn write(&self, dir: &Path, sync: bool) -> Result<()> {
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| archive_error(dir, "the manifest cannot be written as JSON").with_source(e))?;
        write_renamed(&dir.join(MANIFEST), &json, sync)
    }
}

/// Writes `bytes` to `path` through a temporary file renamed over it, on disk.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_renamed(path, bytes, true)
}

/// Writes `bytes` to `path` through a temporary file renamed over it;
/// with `sync`, on disk before the rename (without, a crash of the process
/// still leaves the old or the new file whole).
pub(crate) fn write_renamed(path: &Path, bytes: &[u8], sync: bool) -> Result<()> {
    let tmp = path.with_extension("partial");
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| archive_error(path, "cannot be written").with_source(e))
}

/// The SHA-256 and length of a file, read in pieces.
pub(crate) fn hash_file(path: &Path) -> Result<(String, u64)> {
    let mut f = std::fs::File::open(path).map_err(|e| archive_error(path, "cannot be opened").with_source(e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut len = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| archive_error(path, "cannot be read").with_source(e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        len += n as u64;
    }
    Ok((hex(&hasher.finalize()), len))
}

/// The path of the blob file of `sha256`.
pub(crate) fn blob_file(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(BLOBS).join(sha256)
}

/// Whether a file name is a blob file's (64 lower-case hex digits).
pub(crate) fn is_blob_file_name(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The blob files of an export: (name, length), in name order.
pub(crate) fn blob_files(dir: &Path) -> Result<Vec<(String, u64)>> {
    let blobs = dir.join(BLOBS);
    let entries = match std::fs::read_dir(&blobs) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(archive_error(&blobs, "cannot be listed").with_source(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| archive_error(&blobs, "cannot be listed").with_source(e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if is_blob_file_name(&name) {
            let len = entry
                .metadata()
                .map_err(|e| archive_error(&entry.path(), "its size cannot be read").with_source(e))?
                .len();
            out.push((name, len));
        }
    }
    out.sort();
    Ok(out)
}

/// Checks every data file and blob file of an export against its manifest
/// (SHA-256 and length of each data file; each blob file's SHA-256 against
/// its name), before anything is written. `on_file` sees each file checked.
pub(crate) fn verify(dir: &Path, manifest: &ArchiveManifest, mut on_file: impl FnMut(u64)) -> Result<()> {
    if !manifest.complete {
        return Err(archive_error(
            &dir.join(MANIFEST),
            "the export did not finish; continue it with resume before importing it",
        ));
    }
    for file in &manifest.files {
        let path = dir.join(&file.name);
        if file.name.contains(['/', '\\']) || file.name.starts_with('.') {
            return Err(archive_error(
                &path,
                "a data file must be a plain name in the export directory",
            ));
        }
        let (sha, len) = hash_file(&path)?;
        if sha != file.sha256 || len != file.bytes {
            return Err(archive_error(
                &path,
                format!(
                    "{len} bytes with SHA-256 {sha}, the manifest says {} bytes with {}",
                    file.bytes, file.sha256
                ),
            ));
        }
        on_file(len);
    }
    let blobs = blob_files(dir)?;
    if (blobs.len() as u64) < manifest.blobs {
        return Err(archive_error(
            &dir.join(BLOBS),
            format!("{} blob files, the manifest says {}", blobs.len(), manifest.blobs),
        ));
    }
    for (name, _) in blobs {
        let path = blob_file(dir, &name);
        let (sha, len) = hash_file(&path)?;
        if sha != name {
            return Err(archive_error(&path, format!("its SHA-256 is {sha}, not its name")));
        }
        on_file(len);
    }
    Ok(())
}
