//! `copy --work-dir`: a directory another user could read, or could have
//! planted, is refused before anything is read or written; a new one is
//! made private. Needs no storage: the refusals come first.

#![cfg(unix)]

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// A private directory of this user, removed when dropped.
fn scratch(hint: &str) -> TempDir {
    let dir = tempfile::Builder::new().prefix(hint).tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

/// `copy` into a target that is never reached (the refusal comes first).
fn copy_with(work_dir: &Path) -> Output {
    let scratch = scratch("target");
    let target = scratch.path().join("target.conn");
    std::fs::write(&target, "UseDevelopmentStorage=true").unwrap();
    Command::new(env!("CARGO_BIN_EXE_unified-tables"))
        .env_remove("UNIFIED_TABLES_CONNECTION")
        .args(["copy", "Orders", "--to-file", target.to_str().unwrap(), "--work-dir"])
        .arg(work_dir)
        .output()
        .expect("the command runs")
}

fn refused(work_dir: &Path, why: &str) {
    let before: Vec<_> = std::fs::read_dir(work_dir).map(|d| d.count()).into_iter().collect();
    let out = copy_with(work_dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--work-dir") && stderr.contains(why), "{why}: {stderr}");
    let after: Vec<_> = std::fs::read_dir(work_dir).map(|d| d.count()).into_iter().collect();
    assert_eq!(before, after, "nothing was written into it");
}

#[test]
fn a_work_dir_other_users_can_reach_is_refused() {
    let open = scratch("open");
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    refused(open.path(), "other users can reach it (mode 755)");
    let shared = scratch("shared");
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    refused(shared.path(), "other users can reach it (mode 777)");
}

#[test]
fn a_work_dir_of_another_user_is_refused() {
    let handed_over = scratch("theirs");
    // Another user's directory: one handed over (as root), else the root directory.
    let theirs = match std::os::unix::fs::chown(handed_over.path(), Some(65_534), Some(65_534)) {
        Ok(()) => handed_over.path().to_owned(),
        Err(_) => PathBuf::from("/"),
    };
    assert_ne!(
        std::fs::metadata(&theirs).unwrap().uid(),
        std::fs::metadata(scratch("mine").path()).unwrap().uid()
    );
    refused(&theirs, "belongs to another user");
}

#[test]
fn a_planted_link_a_file_or_a_folder_of_other_files_is_refused() {
    let base = scratch("planted");
    let elsewhere = scratch("elsewhere");
    let link = base.path().join("work");
    std::os::unix::fs::symlink(elsewhere.path(), &link).unwrap();
    refused(&link, "symbolic link");
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "nothing written where it points"
    );
    let file = base.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let out = copy_with(&file);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a directory"));
    let busy = scratch("busy");
    std::fs::write(busy.path().join("notes.txt"), "mine").unwrap();
    refused(busy.path(), "not a copy's work directory");
    assert_eq!(std::fs::read_to_string(busy.path().join("notes.txt")).unwrap(), "mine");
}

#[test]
fn a_resume_names_its_work_dir() {
    let out = Command::new(env!("CARGO_BIN_EXE_unified-tables"))
        .args(["copy", "Orders", "--to-env", "X", "--resume"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--work-dir"));
}
