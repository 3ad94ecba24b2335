//! Helpers shared by the examples.

use unified_tables::{Result, Tables};

/// The environment variable the examples read a connection string from.
pub const CONNECTION_VAR: &str = "UNIFIED_TABLES_CONNECTION";

/// Tables from the first command-line argument or `UNIFIED_TABLES_CONNECTION`
/// (Azure, or Azurite with `UseDevelopmentStorage=true`), else in memory.
pub fn tables_from_env() -> Result<(Tables, &'static str)> {
    match connection_from_env() {
        Some(c) => Ok((Tables::connect(&c)?, "Azure Table Storage")),
        None => Ok((Tables::memory(), "the in-memory backend")),
    }
}

/// The connection string from the first command-line argument or
/// `UNIFIED_TABLES_CONNECTION`, if either holds one.
pub fn connection_from_env() -> Option<String> {
    std::env::args()
        .nth(1)
        .or_else(|| std::env::var(CONNECTION_VAR).ok())
        .filter(|c| !c.trim().is_empty())
}
