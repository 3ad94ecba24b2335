//! The export directory: JSON Lines data files, blob files named by their
//! SHA-256 under `blobs/`, and `manifest.json` naming the format, the
//! table, the counts and the SHA-256 of every data file.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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

    /// Writes `dir/manifest.json` whole and on disk ([`write_atomically`]).
    pub(crate) fn write(&self, dir: &Path) -> Result<()> {
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| archive_error(dir, "the manifest cannot be written as JSON").with_source(e))?;
        write_atomically(&dir.join(MANIFEST), &json)
    }
}

/// Writes `bytes` to `path` whole and on disk: into a temporary file in the
/// same directory, forced to disk, renamed over `path`, then the directory
/// forced to disk so the rename survives a power loss. A reader sees the old
/// file or the new one, never a part of one; a process or a machine that
/// stops midway leaves the old file (and at most a stray hidden temporary
/// file, which nothing reads). Every position and manifest file, and every
/// blob file of an export, is written here.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}-{n}.tmp", std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        sync_dir(dir)
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        archive_error(path, "cannot be written").with_source(e)
    })
}

/// Forces a directory's entries (a rename into it) to disk.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::fs::File::open(dir)?.sync_all()
    }
    // Elsewhere a directory cannot be opened as a file; the rename is journaled.
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest_of(files: usize) -> ArchiveManifest {
        let mut m = ArchiveManifest::new("Docs", None);
        m.files = (0..files)
            .map(|i| ArchiveFile {
                name: format!("entities-{i:05}.jsonl"),
                entities: 10_000,
                bytes: 1 << 20,
                sha256: "ab".repeat(32),
            })
            .collect();
        m.entities = 10_000 * files as u64;
        m
    }

    /// A resume reads the manifest while a run may be replacing it: every
    /// read is one whole version, never a part of one (a file written in
    /// place would be read empty or cut short while it is rewritten).
    #[test]
    fn a_reader_never_sees_a_torn_manifest_while_it_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        manifest_of(0).write(dir.path()).unwrap();
        let done = std::sync::atomic::AtomicBool::new(false);
        let reads = std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let mut reads = 0u64;
                while !done.load(Ordering::SeqCst) {
                    let m = ArchiveManifest::read(dir.path()).expect("a whole manifest");
                    assert_eq!(m.entities, 10_000 * m.files.len() as u64, "one version");
                    reads += 1;
                }
                reads
            });
            // Versions of growing size (up to about 100 KB), each replacing the last.
            for files in (1..=600).step_by(6) {
                manifest_of(files).write(dir.path()).unwrap();
            }
            done.store(true, Ordering::SeqCst);
            reader.join().unwrap()
        });
        assert!(reads > 0);
        assert_eq!(ArchiveManifest::read(dir.path()).unwrap().files.len(), 595);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [MANIFEST], "no temporary file is left behind");
    }

    /// A write that cannot finish leaves the old file as it was, and no
    /// temporary file.
    #[test]
    fn a_failed_replacement_leaves_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("position.json");
        write_atomically(&path, b"{\"line\":1}").unwrap();
        // A directory in the way of the rename: the write fails after its temporary file.
        let blocked = dir.path().join("blocked");
        std::fs::create_dir(&blocked).unwrap();
        std::fs::write(blocked.join("inside"), b"x").unwrap();
        let err = write_atomically(&blocked, b"{\"line\":2}").unwrap_err();
        assert!(matches!(err, Error::Archive { .. }), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"line\":1}");
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["blocked", "position.json"]);
    }

    /// Every file the toolbox writes but the data files goes through
    /// [`write_atomically`] (the data files are named in the manifest with
    /// their SHA-256, and forced to disk before it names them).
    #[test]
    fn every_position_and_manifest_write_is_atomic() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/admin");
        let mut sources = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            sources.push((name, std::fs::read_to_string(&path).unwrap()));
        }
        assert!(sources.len() >= 10, "the toolbox's sources are read");
        let allowed = |file: &str, call: &str| match (file, call) {
            // write_atomically's temporary file and its rename.
            ("archive.rs", "OpenOptions" | "fs::rename") => 1,
            // Part::create, a data file.
            ("export.rs", "File::create") => 1,
            _ => 0,
        };
        for (file, text) in &sources {
            let code = text.split("#[cfg(test)]").next().unwrap_or_default();
            for call in ["File::create", "fs::write", "OpenOptions", "fs::rename", "fs::copy"] {
                assert_eq!(
                    code.matches(call).count(),
                    allowed(file, call),
                    "admin/{file} writes a file with `{call}` outside write_atomically"
                );
            }
        }
    }
}
