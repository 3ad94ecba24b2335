//! Where connection strings come from: an option, a file or the
//! environment. A key or SAS token given as an option shows in `ps` and in
//! the shell's history, so a warning says so and names the other ways.

use std::path::Path;

use anyhow::{bail, Context as _, Result};

use crate::DEVELOPMENT;

/// The environment variable of the connection string.
pub const CONNECTION_VAR: &str = "UNIFIED_TABLES_CONNECTION";

/// The connection string: `--connection`, else the file of
/// `--connection-file`, else `$UNIFIED_TABLES_CONNECTION`, else the local
/// emulator's.
pub fn source(given: Option<&str>, file: Option<&Path>) -> Result<String> {
    if let Some(connection) = given {
        warn_on_command_line(
            "--connection",
            connection,
            "--connection-file PATH or $UNIFIED_TABLES_CONNECTION",
        );
        return Ok(connection.to_owned());
    }
    if let Some(path) = file {
        return read_file("--connection-file", path);
    }
    match std::env::var(CONNECTION_VAR) {
        Ok(c) if !c.trim().is_empty() => Ok(c.trim().to_owned()),
        _ => Ok(DEVELOPMENT.to_owned()),
    }
}

/// The connection string of `copy`'s target: `--to`, `--to-env VAR` or
/// `--to-file PATH` (the command line asks for exactly one).
pub fn target(to: Option<&str>, to_env: Option<&str>, to_file: Option<&Path>) -> Result<String> {
    if let Some(connection) = to {
        warn_on_command_line("--to", connection, "--to-env VAR or --to-file PATH");
        return Ok(connection.to_owned());
    }
    if let Some(var) = to_env {
        return match std::env::var(var) {
            Ok(c) if !c.trim().is_empty() => Ok(c.trim().to_owned()),
            Ok(_) => bail!("--to-env {var}: the environment variable is empty"),
            Err(std::env::VarError::NotPresent) => bail!("--to-env {var}: the environment variable is not set"),
            Err(std::env::VarError::NotUnicode(_)) => bail!("--to-env {var}: the environment variable is not text"),
        };
    }
    match to_file {
        Some(path) => read_file("--to-file", path),
        None => bail!("copy needs its target: --to-env VAR, --to-file PATH or --to STRING"),
    }
}

/// The connection string in a file, without surrounding white space.
fn read_file(option: &str, path: &Path) -> Result<String> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{option} {}: cannot read it", path.display()))?;
    let connection = text.trim();
    if connection.is_empty() {
        bail!("{option} {}: the file is empty", path.display());
    }
    Ok(connection.to_owned())
}

/// Warns on stderr when a connection string given as `option` holds a key
/// or a SAS token (the warning never shows it).
fn warn_on_command_line(option: &str, connection: &str, instead: &str) {
    if unified_tables::redact(connection) != connection {
        eprintln!(
            "warning: the key in {option} shows in `ps` and in the shell's history; pass it with {instead} instead"
        );
    }
}
