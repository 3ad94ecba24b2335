//! `copy`'s work directory, where the export is kept while it is imported:
//! only the user running the copy may reach it, and the copy deletes only
//! a directory it made. The default is a new private temporary directory;
//! one given with `--work-dir` that exists must be the user's own, private,
//! and empty or a copy's work directory, so another user can neither read
//! the export nor plant one, and no other files are deleted with it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

/// The file that marks a directory as a copy's work directory.
const MARKER: &str = ".unified-tables-copy";

/// A copy's work directory.
#[derive(Debug)]
pub struct WorkDir {
    /// Where it is.
    pub path: PathBuf,
    /// Whether this run made it (it goes again if the copy fails before exporting anything).
    pub made: bool,
}

impl WorkDir {
    /// A new private temporary directory (mode 0700) named after the tables.
    pub fn fresh(table: &str, target: &str) -> Result<WorkDir> {
        let prefix = format!("unified-tables-copy-{table}-{target}-");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix);
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
        let path = builder
            .tempdir()
            .context("cannot make a private temporary directory for the copy (give one with --work-dir)")?
            .keep();
        check_private(&path)?;
        mark(&path)?;
        Ok(WorkDir { path, made: true })
    }

    /// The directory given with `--work-dir`: made (private) when it is
    /// missing; refused when it is not a private directory of this user,
    /// or holds files and is not a copy's work directory.
    pub fn given(path: &Path) -> Result<WorkDir> {
        let shown = path.display();
        let made = match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut builder = std::fs::DirBuilder::new();
                builder.recursive(true);
                #[cfg(unix)]
                std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
                builder
                    .create(path)
                    .with_context(|| format!("--work-dir {shown}: cannot create it"))?;
                true
            }
            Err(e) => return Err(e).with_context(|| format!("--work-dir {shown}")),
            Ok(_) => false,
        };
        // Checked after it is made too: a link planted meanwhile is refused.
        check_private(path)?;
        if !path.join(MARKER).exists() {
            let mut entries = std::fs::read_dir(path).with_context(|| format!("--work-dir {shown}"))?;
            if entries.next().is_some() {
                bail!("--work-dir {shown}: it holds files and is not a copy's work directory; name a new or an empty directory");
            }
            mark(path)?;
        }
        Ok(WorkDir {
            path: path.to_owned(),
            made,
        })
    }

    /// Deletes the directory and what it holds (a copy's work only: see [`WorkDir::given`]).
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn mark(dir: &Path) -> Result<()> {
    std::fs::File::create(dir.join(MARKER))
        .map(drop)
        .with_context(|| format!("--work-dir {}: cannot write in it", dir.display()))
}

/// Refuses anything but a directory of this user that no other user can reach.
fn check_private(dir: &Path) -> Result<()> {
    let shown = dir.display();
    let meta = std::fs::symlink_metadata(dir).with_context(|| format!("--work-dir {shown}"))?;
    if meta.file_type().is_symlink() {
        bail!("--work-dir {shown}: it is a symbolic link; name a directory of your own, or leave --work-dir out to use a private temporary one");
    }
    if !meta.is_dir() {
        bail!("--work-dir {shown}: it is not a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let me = rustix::process::geteuid().as_raw();
        if meta.uid() != me {
            bail!(
                "--work-dir {shown}: it belongs to another user (uid {}, you are {me}); use a directory of your own, or leave --work-dir out to use a private temporary one",
                meta.uid()
            );
        }
        let mode = meta.mode() & 0o777;
        if mode & 0o077 != 0 {
            bail!("--work-dir {shown}: other users can reach it (mode {mode:03o}); make it private (chmod 700), or leave --work-dir out to use a private temporary one");
        }
    }
    Ok(())
}
