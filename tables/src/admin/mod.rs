//! An operator's toolbox: look at, check, back up and move any table this
//! crate wrote, without the program's types.
//!
//! The layout is self-describing (see [`layout`](crate::layout)): split
//! cells carry their manifest, continuation rows name their main row
//! (`_SplitOf`), blob references carry their path and hash. So everything
//! here works on any table:
//!
//! - [`Admin::get`]: one logical entity, large values reassembled and checked,
//!   with its raw rows;
//! - [`Admin::query`]: pages of logical entities with a resumable cursor;
//! - [`Admin::stats`]: partitions, rows, entities, large values by tier, blobs;
//! - [`Admin::fsck`]: every damaged large value, leftover continuation rows,
//!   orphan blobs, and a safe [repair](FsckOptions::repair);
//! - [`Admin::sweep`]: the orphan-blob sweep;
//! - [`Admin::export`], [`Admin::import`], [`copy`]: JSON Lines backups that
//!   other tools can read, and moves between tables and accounts.
//!
//! Long operations report [`Event`]s to a callback, and stop cleanly when
//! their [`Stop`] is raised; an export or import stopped (or killed) is
//! continued with `resume`. The `unified-tables` command is a thin layer
//! over this module.
//!
//! ```
//! use unified_tables::admin::{Admin, ExportOptions, ImportOptions, ImportMode};
//! use unified_tables::{TableEntity, Tables};
//!
//! #[derive(TableEntity, Debug, PartialEq)]
//! struct Doc {
//!     #[table(partition_key)] pk: String,
//!     #[table(row_key)] rk: String,
//!     #[table(split = "gzip")] body: String,
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let db = Tables::memory();
//! let docs = db.store_in::<Doc>("Docs");
//! docs.create(&mut Doc { pk: "p".into(), rk: "1".into(), body: "x".repeat(200_000) }).await?;
//!
//! let admin = Admin::new(&db, "Docs")?;
//! let report = admin.fsck(Default::default()).await?;
//! assert!(report.is_clean());
//!
//! let dir = tempfile::tempdir().unwrap();
//! let exported = admin.export(dir.path(), ExportOptions::default()).await?;
//! assert_eq!(exported.entities, 1);
//!
//! let copy = Admin::new(&db, "DocsCopy")?;
//! copy.import(dir.path(), ImportOptions { mode: ImportMode::Insert, ..Default::default() }).await?;
//! let back = db.store_in::<Doc>("DocsCopy").get(("p", "1")).await?.unwrap();
//! assert_eq!(back.body.len(), 200_000);
//! # Ok::<(), unified_tables::Error>(())
//! # }).unwrap();
//! ```

mod archive;
mod export;
mod fsck;
mod import;
mod import_unit;
mod index_check;
mod lines;
mod query;
mod read;
mod scan;
mod stats;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use crate::large::logical::{Damage, EntityBlob, LargeValue, LogicalEntity, Tier};
pub use archive::{ArchiveFile, ArchiveManifest, ARCHIVE_FORMAT, ARCHIVE_VERSION};
pub use export::{ExportOptions, ExportReport};
pub use fsck::{Finding, FsckOptions, FsckReport};
pub use import::{copy, ImportMode, ImportOptions, ImportReport};
pub use lines::{entity_from_line, entity_to_line, LARGE_ANNOTATION};
pub use query::{AdminPage, AdminQuery};
pub use read::Read;
pub use stats::{Stats, TierStats};

use crate::error::{Error, Result};
use crate::store::Blobs;
use crate::store::Store;
use crate::tables::Tables;

/// What a long operation reports as it goes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A phase started (`scan`, `verify`, `write`, `blobs`), with the
    /// amount of work when it is known.
    Phase {
        /// The phase.
        name: &'static str,
        /// Units of work in it (entities, files or blobs), when known.
        total: Option<u64>,
    },
    /// Work done so far in the current phase.
    Progress {
        /// Rows read or written.
        rows: u64,
        /// Entities done.
        entities: u64,
        /// Bytes read or written.
        bytes: u64,
    },
    /// Something found (fsck) or skipped.
    Found(Finding),
    /// A note (a retry, a resumed position).
    Note(String),
}

/// A callback receiving [`Event`]s; called on the task doing the work.
pub type Observer = Arc<dyn Fn(&Event) + Send + Sync>;

/// A flag that asks a long operation to stop at the next entity (or
/// batch); it then returns what it did, marked interrupted, with its
/// position saved for `resume`. Raise it from a Ctrl-C handler.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A flag not raised.
    pub fn new() -> Stop {
        Stop::default()
    }
    /// Asks the operation to stop.
    pub fn raise(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    /// Whether the flag is raised.
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// The toolbox over one table (see the module docs).
#[derive(Clone)]
pub struct Admin {
    tables: Tables,
    table: String,
    store: Store<AdminRow>,
}

impl fmt::Debug for Admin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admin").field("table", &self.table).finish()
    }
}

/// The row type the toolbox reads pages and writes blobs through (its
/// rows are never decoded into it).
#[derive(crate::TableEntity)]
struct AdminRow {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
}

impl Admin {
    /// The toolbox over `table` of `tables` (its backend, blob store and options).
    pub fn new(tables: &Tables, table: impl Into<String>) -> Result<Admin> {
        let table = table.into();
        crate::service::check_table_name(&table)?;
        Ok(Admin {
            store: tables.store_in::<AdminRow>(table.clone()),
            tables: tables.clone(),
            table,
        })
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The blob store, or the error of a handle without one.
    pub(crate) fn blob_store(&self) -> Result<&Blobs> {
        self.tables
            .shared
            .blobs
            .as_deref()
            .ok_or_else(|| Error::BlobOffloadNotConfigured { column: String::new() })
    }

    /// Removes orphan blobs of the table (blobs of the offload shape no row
    /// references) last modified more than `older_than` ago, one partition
    /// (`Some`) or all; see [`Store::sweep_orphan_blobs`].
    /// [`Admin::orphan_blobs`] lists them without deleting them.
    pub async fn sweep(
        &self,
        partition: Option<&str>,
        older_than: std::time::Duration,
    ) -> Result<crate::store::SweepReport> {
        self.store
            .op("sweep")
            .run(async move {
                match partition {
                    Some(pk) => self.store.sweep_orphan_blobs(pk, older_than).await,
                    None => self.store.sweep_all_orphan_blobs(older_than).await,
                }
            })
            .await
    }
}

/// Reports `event` to `observer`, if any.
pub(crate) fn report(observer: &Option<Observer>, event: Event) {
    if let Some(o) = observer {
        o(&event);
    }
}
