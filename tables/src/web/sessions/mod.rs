//! A tower-sessions [`SessionStore`] over a table (feature `tower-sessions`).
//!
//! [`TableSessionStore`] keeps each session as one entity of a table of
//! your choice, on any backend: Azure Table Storage, Azurite, or the
//! in-memory backend in tests. Wire it into an axum app as any other store:
//!
//! ```
//! use std::time::Duration;
//! use axum::{routing::get, Router};
//! use tower_sessions::{ExpiredDeletion, Session, SessionManagerLayer};
//! use unified_tables::{web::sessions::TableSessionStore, Tables};
//!
//! async fn visits(session: Session) -> String {
//!     let n = session.get::<u64>("visits").await.ok().flatten().unwrap_or(0) + 1;
//!     let _ = session.insert("visits", n).await;
//!     format!("visit {n}")
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let tables = Tables::memory();                            // or Tables::connect(&connection_string)?
//! let store = TableSessionStore::new(&tables, "Sessions")?;
//! tokio::spawn(store.clone().continuously_delete_expired(Duration::from_secs(60)));
//!
//! let app = Router::new()
//!     .route("/", get(visits))
//!     .layer(SessionManagerLayer::new(store).with_secure(false));   // plain-HTTP demo: secure cookies off
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! # let address = listener.local_addr()?;
//! tokio::spawn(async move { axum::serve(listener, app).await });
//! # use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! # let mut socket = tokio::net::TcpStream::connect(address).await?;
//! # socket.write_all(b"GET / HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n").await?;
//! # let mut answer = String::new();
//! # socket.read_to_string(&mut answer).await?;
//! # assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
//! # assert!(answer.contains("set-cookie: id="), "{answer}");
//! # assert!(answer.ends_with("visit 1"), "{answer}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # What the store promises
//!
//! - **Create never overwrites.** `create` inserts; when the id is taken
//!   (the service answers that the entity exists) it draws a new id and
//!   inserts again, as the trait asks of a store, up to
//!   [`CREATE_ATTEMPTS`] times. Two creates racing on one id leave two
//!   sessions, never one overwritten by the other.
//! - **Save never resurrects.** `save` replaces the stored record
//!   (`If-Match: *`, the row must exist). A session deleted while a request
//!   still held it (a logout elsewhere, a revocation, the sweep) stays
//!   deleted: the save does nothing and the next request starts a new session.
//! - **Expired reads as absent.** `load` returns `None` for a record whose
//!   expiry is not after now, whether or not the sweep has removed it yet.
//! - **No read cache.** Whatever cache the [`Tables`] handle carries, the
//!   store reads the table on every `load`: a session deleted by any process
//!   is gone at the next request.
//! - **Sweep.** [`ExpiredDeletion::delete_expired`](tower_sessions_core::ExpiredDeletion::delete_expired) (and
//!   [`TableSessionStore::sweep_expired`], which says what it did) queries the
//!   table for expired records and deletes each on condition of the ETag the
//!   query returned, so a record refreshed in the meantime is spared. The
//!   store starts no task of its own: spawn the sweep on the host's runtime
//!   with `continuously_delete_expired(period)` (tower-sessions'
//!   `deletion-task`, enabled by this feature). That loop ends at the first
//!   failed sweep with its error; to sweep through an outage, loop over
//!   `delete_expired` yourself and log the errors.
//!
//! # On storage
//!
//! One entity per session: PartitionKey the session id as tower-sessions
//! prints it (22 characters of URL-safe base64, so each session is a
//! partition of its own and no id can contain a character the service
//! refuses in a key), RowKey [`SESSION_ROW_KEY`],
//! `ExpiresAt` an `Edm.DateTime`, and `Data` the session's data as one JSON
//! value in the crate's large-value layout. The expiry is kept at the
//! service's precision (100 ns, truncated) and clamped to its range (years
//! 1601 to 9999).
//!
//! # How big a session may be
//!
//! Data of any size is stored. While it fits one cell it is one cell of the
//! row; beyond, split cells and continuation rows written in one transaction
//! (up to 4 MiB); beyond that, or over [`BlobOptions`](crate::BlobOptions)'
//! threshold, a blob, when the handle has a blob store (`Tables::memory()`
//! and `Tables::connect(..)` do). Without one, a record that does not fit one
//! transaction is refused with `session_store::Error::Encode` naming the
//! `Data` column, its size and the limit, and nothing is stored. Because the data may span rows, `save` and
//! `delete` read the main row first (two requests); `create` and `load` take one.
//!
//! # Errors
//!
//! Failures map to [`session_store::Error`]: a record that cannot be stored
//! to `Encode`, a stored record that cannot be read back (damaged, or written
//! by something else) to `Decode`, and everything else (the service, the
//! network) to `Backend`. Each message says which operation failed on which
//! table and why. Messages never hold the session id: it is the bearer's
//! secret, and errors end up in logs.
#![doc = include_str!("../../../docs/sessions.md")]

mod record;
mod sweep;

use async_trait::async_trait;
use tower_sessions_core::session::{Id, Record};
use tower_sessions_core::session_store::{self, SessionStore};

use crate::error::{Error, ErrorKind};
use crate::layout::{DEFAULT_SESSION_TABLE, SESSION_ROW_KEY};
use crate::service::check_table_name;
use crate::store::Store;
use crate::tables::Tables;
use crate::value::DateTime;
use record::{id_text, is_expired, SessionRow};

pub use sweep::ExpiredSweep;

/// The operation an error message names.
#[derive(Debug, Clone, Copy)]
enum Action {
    Create,
    Save,
    Load,
    Delete,
    ListExpired,
    DeleteExpired,
}

impl Action {
    fn said(self) -> &'static str {
        match self {
            Action::Create => "creating a session",
            Action::Save => "saving a session",
            Action::Load => "loading a session",
            Action::Delete => "deleting a session",
            Action::ListExpired => "listing expired sessions",
            Action::DeleteExpired => "deleting an expired session",
        }
    }

    /// Whether the operation stores a record (a refusal is then the record's fault).
    fn writes(self) -> bool {
        matches!(self, Action::Create | Action::Save)
    }
}

/// How many ids `create` tries before it gives up (each collision draws a
/// new random 128-bit id, so a second attempt is already a near miracle).
pub const CREATE_ATTEMPTS: usize = 8;

/// A tower-sessions [`SessionStore`] and [`ExpiredDeletion`](tower_sessions_core::ExpiredDeletion)
/// over one table. Cheap to clone: clones share the handle.
///
/// See the [module documentation](self) for what it promises, how records
/// are stored and how to wire it into an axum app.
///
/// ```
/// use time::{Duration, OffsetDateTime};
/// use tower_sessions::session::{Id, Record};
/// use tower_sessions::SessionStore;
/// use unified_tables::{web::sessions::TableSessionStore, Tables};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = TableSessionStore::new(&Tables::memory(), "Sessions")?;
/// let mut record = Record {
///     id: Id::default(),
///     data: [("user".to_owned(), serde_json::json!("alice"))].into(),
///     expiry_date: OffsetDateTime::now_utc() + Duration::hours(1),
/// };
/// store.create(&mut record).await?;
/// let loaded = store.load(&record.id).await?.expect("live");
/// assert_eq!(loaded.data, record.data);
///
/// store.delete(&record.id).await?;
/// assert!(store.load(&record.id).await?.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct TableSessionStore {
    store: Store<SessionRow>,
}

impl TableSessionStore {
    /// The table [`TableSessionStore::with_default_table`] uses: `Sessions`.
    pub const DEFAULT_TABLE: &'static str = DEFAULT_SESSION_TABLE;

    /// A store of sessions in `table` (created on first use), over the
    /// backend and blob store of `tables`. The handle's read cache is not
    /// used. A table name the service refuses (3 to 63 letters and digits,
    /// starting with a letter) is [`Error::Config`] here, before anything is
    /// sent.
    ///
    /// ```
    /// use unified_tables::{web::sessions::TableSessionStore, Error, Tables};
    /// let tables = Tables::memory();
    /// let store = TableSessionStore::new(&tables, "WebSessions")?;
    /// assert_eq!(store.table(), "WebSessions");
    /// assert!(matches!(TableSessionStore::new(&tables, "web-sessions"), Err(Error::Config { .. })));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn new(tables: &Tables, table: impl Into<String>) -> crate::Result<TableSessionStore> {
        let table = table.into();
        check_table_name(&table)?;
        Ok(TableSessionStore::over(tables, table))
    }

    fn over(tables: &Tables, table: String) -> TableSessionStore {
        // A revoked session must be gone at once, in every process: never cached.
        TableSessionStore {
            store: tables.clone().without_cache().store_in::<SessionRow>(table),
        }
    }

    /// A store of sessions in the table [`TableSessionStore::DEFAULT_TABLE`].
    ///
    /// ```
    /// use unified_tables::{web::sessions::TableSessionStore, Tables};
    /// let store = TableSessionStore::with_default_table(&Tables::memory());
    /// assert_eq!(store.table(), "Sessions");
    /// ```
    pub fn with_default_table(tables: &Tables) -> TableSessionStore {
        TableSessionStore::over(tables, Self::DEFAULT_TABLE.to_owned())
    }

    /// The table the sessions are stored in.
    pub fn table(&self) -> &str {
        self.store.table()
    }

    /// A [`session_store::Error`] saying that `action` failed, and why, with
    /// every occurrence of the session id taken out: `Encode` for a record a
    /// write refused before sending, `Decode` for a stored record that cannot
    /// be read back, `Backend` for the rest.
    fn failed(&self, action: Action, id: Option<&str>, error: Error) -> session_store::Error {
        let mut why = error.to_string();
        if let Some(id) = id {
            why = why.replace(id, "<session id>");
        }
        let message = format!("{} in table `{}` failed: {why}", action.said(), self.table());
        match error.kind() {
            ErrorKind::Damaged => session_store::Error::Decode(message),
            _ if error.is_refusal() && action.writes() => session_store::Error::Encode(message),
            _ => session_store::Error::Backend(message),
        }
    }
}

#[async_trait]
impl SessionStore for TableSessionStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        for _ in 0..CREATE_ATTEMPTS {
            let mut row = SessionRow::of(record);
            match self.store.create(&mut row).await {
                Ok(_) => return Ok(()),
                // The id is taken: the trait leaves the remedy to the store; draw another.
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    tracing::debug!(table = %self.table(), "session id collision; drawing a new id");
                    record.id = Id::default();
                }
                Err(e) => return Err(self.failed(Action::Create, Some(&row.id), e)),
            }
        }
        Err(session_store::Error::Backend(format!(
            "creating a session in table `{}` failed: {CREATE_ATTEMPTS} fresh ids were all taken",
            self.table()
        )))
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let mut row = SessionRow::of(record);
        match self.store.replace(&mut row).await {
            Ok(_) => Ok(()),
            // Deleted while the request held it: it stays deleted (revocation holds).
            Err(e) if e.kind() == ErrorKind::NotFound => {
                tracing::debug!(table = %self.table(), "session deleted meanwhile; not recreated");
                Ok(())
            }
            Err(e) => Err(self.failed(Action::Save, Some(&row.id), e)),
        }
    }

    async fn load(&self, session_id: &Id) -> session_store::Result<Option<Record>> {
        let id = id_text(session_id);
        let row = self
            .store
            .get((id.as_str(), SESSION_ROW_KEY))
            .await
            .map_err(|e| self.failed(Action::Load, Some(&id), e))?;
        Ok(row
            .filter(|row| !is_expired(row.expires_at, DateTime::now()))
            .map(|row| row.into_record(*session_id)))
    }

    async fn delete(&self, session_id: &Id) -> session_store::Result<()> {
        let id = id_text(session_id);
        self.store
            .delete((id.as_str(), SESSION_ROW_KEY))
            .await
            .map(|_| ())
            .map_err(|e| self.failed(Action::Delete, Some(&id), e))
    }
}
