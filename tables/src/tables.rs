//! `Tables`: the entry point that owns a backend and hands out stores.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};

use crate::backend::{memory::MemoryBackend, Backend};
use crate::entity::TableEntity;
use crate::store::{Store, StoreOptions};

/// A connection to table storage: a backend plus the options every store
/// made from it shares.
///
/// ```
/// use unified_tables::Tables;
/// let db = Tables::memory();            // embedded, no set-up
/// # let _ = db;
/// ```
#[derive(Clone)]
pub struct Tables {
    pub(crate) backend: Arc<dyn Backend>,
    pub(crate) options: StoreOptions,
    pub(crate) created: Arc<Mutex<HashSet<String>>>,
}

impl fmt::Debug for Tables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tables")
            .field("backend", &self.backend)
            .field("options", &self.options)
            .finish()
    }
}

impl Tables {
    /// A fresh in-memory backend that answers as the service does.
    pub fn memory() -> Tables {
        Tables::with_backend(MemoryBackend::new())
    }

    /// Tables over any backend (for example a decorator around another).
    pub fn with_backend(backend: impl Backend) -> Tables {
        Tables::from_arc(Arc::new(backend))
    }

    /// Tables over a shared backend.
    pub fn from_arc(backend: Arc<dyn Backend>) -> Tables {
        Tables {
            backend,
            options: StoreOptions::default(),
            created: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    /// Replaces the options of the stores made from now on.
    pub fn with_options(mut self, options: StoreOptions) -> Tables {
        self.options = options;
        self
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// A store for `T`, in the table the derive names (`#[table(name = ..)]`,
    /// default: the type's name).
    pub fn store<T: TableEntity>(&self) -> Store<T> {
        Store::new(self.clone(), T::SCHEMA.table.to_owned())
    }

    /// A store for `T` in another table (for example a per-test table).
    pub fn store_in<T: TableEntity>(&self, table: impl Into<String>) -> Store<T> {
        Store::new(self.clone(), table.into())
    }
}
