//! A loopback TCP proxy in front of the table and blob endpoints of Azurite
//! (or any plain-HTTP storage endpoint) that injects the failures a network
//! really has, at seeded moments:
//!
//! - [`Fault::DropAnswer`]: the request is forwarded and answered, then the
//!   client's connection is reset before it sees the answer. A write is
//!   applied and its client never learns: the ambiguous answer.
//! - [`Fault::DropAnswerLate`]: the same, with the answer held for a while
//!   first, so that other clients' requests overtake the lost one.
//! - [`Fault::Delay`]: the request waits before it is forwarded.
//! - [`Fault::ResetBeforeForward`]: the connection is reset and the request
//!   never reaches the service.
//! - [`Fault::CutBody`]: the answer's head and half its body reach the client,
//!   then the connection is reset.
//!
//! The proxy reads HTTP/1.1 (`Content-Length`, `chunked`, keep-alive), so it
//! faults one request of a pooled connection, not a whole connection. It
//! holds each request and answer whole in memory, speaks plain HTTP only,
//! and does not answer `Expect: 100-continue` itself (the Azure clients do
//! not send it). Which
//! requests get faults is decided by a seed and the request's sequence
//! number; [`FaultProxy::fault_next`] faults the next N requests of a kind.
//!
//! ```no_run
//! # async fn demo(connection: &str) -> std::io::Result<()> {
//! use unified_tables_tests::fault_proxy::{Fault, FaultProxy, Kinds};
//! let proxy = FaultProxy::start(connection, 7).await?;
//! proxy.set_rate(Kinds::WRITES, Fault::DropAnswer, 10_000); // 1 %
//! let tables = unified_tables::Tables::connect(&proxy.connection_string()).unwrap();
//! # Ok(()) }
//! ```

mod http;
mod serve;

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use unified_tables::backend::azure::ConnectionString;

/// An upstream connection idle this long is replaced before it is used
/// again: Azurite closes idle connections after 5 s, and a request written
/// onto a connection the service is closing would be an unplanned fault.
const UPSTREAM_IDLE: Duration = Duration::from_secs(2);

/// Which service a listener fronts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Service {
    Table,
    Blob,
}

/// What a request does, from its method and path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RequestKind {
    /// A point read of one entity (`GET /t(PartitionKey='..',RowKey='..')`).
    TableGet,
    /// A query of a table (`GET /t()` with a filter, or a page of one).
    TableQuery,
    /// One entity written or deleted (`POST`, `PUT`, `MERGE`, `PATCH`, `DELETE`).
    TableWrite,
    /// An entity-group transaction (`POST /$batch`).
    TableBatch,
    /// A table created, deleted or listed (`/Tables`).
    TableAdmin,
    /// A blob or a listing read (`GET`, `HEAD`).
    BlobRead,
    /// A blob or container written, deleted or leased.
    BlobWrite,
}

impl RequestKind {
    /// Every kind.
    pub const ALL: [RequestKind; 7] = [
        RequestKind::TableGet,
        RequestKind::TableQuery,
        RequestKind::TableWrite,
        RequestKind::TableBatch,
        RequestKind::TableAdmin,
        RequestKind::BlobRead,
        RequestKind::BlobWrite,
    ];

    fn classify(service: Service, method: &str, target: &str) -> RequestKind {
        let path = target.split('?').next().unwrap_or("");
        let read = matches!(method, "GET" | "HEAD");
        match service {
            Service::Blob if read => RequestKind::BlobRead,
            Service::Blob => RequestKind::BlobWrite,
            Service::Table if path.ends_with("/$batch") => RequestKind::TableBatch,
            Service::Table if is_tables_resource(path) => RequestKind::TableAdmin,
            Service::Table if read && path.contains("PartitionKey=") && path.contains("RowKey=") => {
                RequestKind::TableGet
            }
            Service::Table if read => RequestKind::TableQuery,
            Service::Table => RequestKind::TableWrite,
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// Whether `path` addresses the `Tables` resource itself (`/acct/Tables`,
/// `/acct/Tables('t')`), not a table whose name starts with `Tables`.
fn is_tables_resource(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or("");
    last == "Tables" || last.starts_with("Tables(")
}

/// A set of request kinds a fault applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds(u16);

impl Kinds {
    /// Every request.
    pub const ALL: Kinds = Kinds(0x7f);
    /// Every request that changes something: table writes, transactions, blob writes.
    pub const WRITES: Kinds = Kinds(1 << 2 | 1 << 3 | 1 << 6);
    /// Every table request but table administration.
    pub const TABLE_DATA: Kinds = Kinds(0x0f);
    /// Every blob request.
    pub const BLOB: Kinds = Kinds(1 << 5 | 1 << 6);

    /// Just `kind`.
    pub fn of(kind: RequestKind) -> Kinds {
        Kinds(kind.bit())
    }

    /// This set and `kind`.
    pub fn and(self, kind: RequestKind) -> Kinds {
        Kinds(self.0 | kind.bit())
    }

    /// Whether `kind` is in the set.
    pub fn contains(self, kind: RequestKind) -> bool {
        self.0 & kind.bit() != 0
    }
}

/// What happens to a faulted request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forwarded and answered; the client's connection is reset before the answer reaches it.
    DropAnswer,
    /// Forwarded and answered; the answer is held this long, then the client's connection is reset.
    DropAnswerLate(Duration),
    /// Held this long, then forwarded as usual.
    Delay(Duration),
    /// The connection is reset; the request never reaches the service.
    ResetBeforeForward,
    /// The answer's head and half its body reach the client, then the connection is reset.
    CutBody,
}

/// How many requests went through and how many faults were injected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Requests read from clients.
    pub requests: u64,
    /// Requests by kind.
    pub by_kind: BTreeMap<RequestKind, u64>,
    /// Answers dropped after the service applied the request.
    pub dropped_answers: u64,
    /// Dropped answers of writes ([`Kinds::WRITES`]): the ambiguous outcomes.
    pub dropped_write_answers: u64,
    /// Requests delayed.
    pub delayed: u64,
    /// Connections reset before the request was forwarded.
    pub resets: u64,
    /// Answers cut halfway.
    pub cut_bodies: u64,
}

impl FaultCounts {
    /// Every fault injected.
    pub fn faults(&self) -> u64 {
        self.dropped_answers + self.delayed + self.resets + self.cut_bodies
    }
}

#[derive(Debug)]
struct Rate {
    kinds: Kinds,
    fault: Fault,
    per_million: u32,
}

#[derive(Debug)]
struct Next {
    kinds: Kinds,
    fault: Fault,
    left: usize,
}

#[derive(Debug)]
struct Shared {
    seed: u64,
    seq: AtomicU64,
    rates: Mutex<Vec<Rate>>,
    next: Mutex<VecDeque<Next>>,
    counts: Mutex<FaultCounts>,
}

/// SplitMix64: a well-mixed 64-bit value of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Shared {
    /// The fault for the next request of `kind`, if any, counted as a request.
    fn decide(&self, kind: RequestKind) -> Option<Fault> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        {
            let mut counts = self.counts.lock().unwrap();
            counts.requests += 1;
            *counts.by_kind.entry(kind).or_default() += 1;
        }
        let mut next = self.next.lock().unwrap();
        if let Some(at) = next.iter().position(|n| n.kinds.contains(kind)) {
            let fault = next[at].fault;
            next[at].left -= 1;
            if next[at].left == 0 {
                next.remove(at);
            }
            return Some(fault);
        }
        drop(next);
        let rates = self.rates.lock().unwrap();
        rates.iter().enumerate().find_map(|(i, rate)| {
            let draw = mix(self.seed ^ mix(seq.wrapping_mul(31).wrapping_add(i as u64))) % 1_000_000;
            (rate.kinds.contains(kind) && draw < u64::from(rate.per_million)).then_some(rate.fault)
        })
    }

    fn count(&self, kind: RequestKind, fault: Fault) {
        let mut counts = self.counts.lock().unwrap();
        match fault {
            Fault::DropAnswer | Fault::DropAnswerLate(_) => {
                counts.dropped_answers += 1;
                if Kinds::WRITES.contains(kind) {
                    counts.dropped_write_answers += 1;
                }
            }
            Fault::Delay(_) => counts.delayed += 1,
            Fault::ResetBeforeForward => counts.resets += 1,
            Fault::CutBody => counts.cut_bodies += 1,
        }
    }
}

/// The proxy: two loopback listeners (table and blob) forwarding to the
/// endpoints of a connection string. Stops accepting when dropped.
#[derive(Debug)]
pub struct FaultProxy {
    shared: Arc<Shared>,
    connection: String,
    table: SocketAddr,
    blob: SocketAddr,
    accepting: Vec<JoinHandle<()>>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        for task in &self.accepting {
            task.abort();
        }
    }
}

/// `(host:port, path)` of a plain-HTTP endpoint URL.
fn endpoint(url: &str) -> io::Result<(String, String)> {
    let parsed = azure_core::http::Url::parse(url).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    if parsed.scheme() != "http" {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the fault proxy speaks plain HTTP; `{url}` is {}", parsed.scheme()),
        ));
    }
    let host = parsed.host_str().unwrap_or("127.0.0.1");
    let port = parsed.port_or_known_default().unwrap_or(80);
    Ok((format!("{host}:{port}"), parsed.path().trim_end_matches('/').to_owned()))
}

impl FaultProxy {
    /// Starts a proxy in front of the table and blob endpoints of
    /// `connection` (plain HTTP), deciding faults with `seed`. No fault is
    /// injected until [`FaultProxy::set_rate`] or [`FaultProxy::fault_next`].
    pub async fn start(connection: &str, seed: u64) -> io::Result<FaultProxy> {
        let parsed = ConnectionString::parse(connection)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
        let shared = Arc::new(Shared {
            seed,
            seq: AtomicU64::new(0),
            rates: Mutex::new(Vec::new()),
            next: Mutex::new(VecDeque::new()),
            counts: Mutex::new(FaultCounts::default()),
        });
        let mut addrs = Vec::new();
        let mut accepting = Vec::new();
        for (service, url) in [
            (Service::Table, &parsed.table_endpoint),
            (Service::Blob, &parsed.blob_endpoint),
        ] {
            let (upstream, _) = endpoint(url)?;
            let upstream = tokio::net::lookup_host(&upstream)
                .await?
                .next()
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no address for {upstream}")))?;
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            addrs.push(listener.local_addr()?);
            let shared = shared.clone();
            accepting.push(tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let _ = client.set_nodelay(true);
                    tokio::spawn(serve::serve(client, upstream, service, shared.clone()));
                }
            }));
        }
        Ok(FaultProxy {
            shared,
            connection: connection.to_owned(),
            table: addrs[0],
            blob: addrs[1],
            accepting,
        })
    }

    /// The connection string of `connection` with its table and blob
    /// endpoints pointing at the proxy (same account, key and paths).
    pub fn connection_string(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        for part in self.connection.split(';').filter(|p| !p.trim().is_empty()) {
            let (key, value) = part.split_once('=').unwrap_or((part, ""));
            let addr = match key.trim().to_ascii_lowercase().as_str() {
                "tableendpoint" => self.table,
                "blobendpoint" => self.blob,
                _ => {
                    parts.push(part.to_owned());
                    continue;
                }
            };
            let path = endpoint(value.trim()).map(|(_, path)| path).unwrap_or_default();
            parts.push(format!("{}=http://{addr}{path}", key.trim()));
        }
        parts.join(";") + ";"
    }

    /// The proxy's table endpoint address.
    pub fn table_addr(&self) -> SocketAddr {
        self.table
    }

    /// The proxy's blob endpoint address.
    pub fn blob_addr(&self) -> SocketAddr {
        self.blob
    }

    /// Faults requests of `kinds` with `fault` at `per_million` in a
    /// million, chosen by the seed and the request's sequence number
    /// (10,000 is 1 %). Replaces an earlier rate of the same kinds and fault
    /// kind; 0 removes it.
    pub fn set_rate(&self, kinds: Kinds, fault: Fault, per_million: u32) {
        let mut rates = self.shared.rates.lock().unwrap();
        rates.retain(|r| !(r.kinds == kinds && std::mem::discriminant(&r.fault) == std::mem::discriminant(&fault)));
        if per_million > 0 {
            rates.push(Rate {
                kinds,
                fault,
                per_million,
            });
        }
    }

    /// Removes every rate and every pending explicit fault.
    pub fn clear(&self) {
        self.shared.rates.lock().unwrap().clear();
        self.shared.next.lock().unwrap().clear();
    }

    /// Faults the next `n` requests of `kinds` with `fault` (before any rate).
    pub fn fault_next(&self, kinds: Kinds, fault: Fault, n: usize) {
        if n > 0 {
            self.shared
                .next
                .lock()
                .unwrap()
                .push_back(Next { kinds, fault, left: n });
        }
    }

    /// Explicit faults not yet injected.
    pub fn pending(&self) -> usize {
        self.shared.next.lock().unwrap().iter().map(|n| n.left).sum()
    }

    /// The requests seen and the faults injected so far.
    pub fn counts(&self) -> FaultCounts {
        self.shared.counts.lock().unwrap().clone()
    }
}

/// An environment on Azure / Azurite whose table and blob requests go
/// through a new [`FaultProxy`] seeded with `seed` (no faults until asked),
/// or `None` when Azure is not configured and not required (as
/// [`azure_env`](crate::azure_env)).
pub async fn proxied_env(hint: &str, seed: u64) -> Option<(crate::Env, FaultProxy)> {
    use unified_tables::backend::azure::{AzureBackend, AzureBlobBackend};
    // Probes the service and reports a missing or unreachable one.
    crate::azure_env(hint).await?;
    let connection = std::env::var(crate::CONNECTION_VAR).ok()?;
    let proxy = FaultProxy::start(&connection, seed)
        .await
        .expect("the fault proxy starts");
    let through = proxy.connection_string();
    let backend = AzureBackend::from_connection_string(&through).expect("the proxied table endpoint");
    let blobs = AzureBlobBackend::from_connection_string(&through).expect("the proxied blob endpoint");
    let env = crate::azure_env_over(Arc::new(backend), Some(Arc::new(blobs)), hint);
    Some((env, proxy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_classified_by_method_and_path() {
        let t = |m, p| RequestKind::classify(Service::Table, m, p);
        assert_eq!(t("GET", "/acct/t1(PartitionKey='p',RowKey='r')"), RequestKind::TableGet);
        assert_eq!(t("GET", "/acct/t1()?$filter=x"), RequestKind::TableQuery);
        assert_eq!(t("POST", "/acct/t1"), RequestKind::TableWrite);
        assert_eq!(
            t("MERGE", "/acct/t1(PartitionKey='p',RowKey='r')"),
            RequestKind::TableWrite
        );
        assert_eq!(t("POST", "/acct/$batch"), RequestKind::TableBatch);
        assert_eq!(t("POST", "/acct/Tables"), RequestKind::TableAdmin);
        assert_eq!(t("DELETE", "/acct/Tables('t1')"), RequestKind::TableAdmin);
        assert_eq!(t("POST", "/acct/TablesAudit"), RequestKind::TableWrite);
        assert_eq!(
            t("PUT", "/acct/TablesAudit(PartitionKey='p',RowKey='r')"),
            RequestKind::TableWrite
        );
        let b = |m, p| RequestKind::classify(Service::Blob, m, p);
        assert_eq!(b("HEAD", "/acct/c/x"), RequestKind::BlobRead);
        assert_eq!(b("PUT", "/acct/c/x?comp=lease"), RequestKind::BlobWrite);
        assert!(Kinds::WRITES.contains(RequestKind::TableBatch) && !Kinds::WRITES.contains(RequestKind::TableGet));
        assert!(RequestKind::ALL.iter().all(|k| Kinds::ALL.contains(*k)));
    }

    #[test]
    fn the_seed_decides_which_requests_are_faulted() {
        let shared = |seed| Shared {
            seed,
            seq: AtomicU64::new(0),
            rates: Mutex::new(vec![Rate {
                kinds: Kinds::ALL,
                fault: Fault::DropAnswer,
                per_million: 10_000,
            }]),
            next: Mutex::new(VecDeque::new()),
            counts: Mutex::new(FaultCounts::default()),
        };
        let pattern = |seed| {
            let s = shared(seed);
            (0..100_000)
                .map(|_| s.decide(RequestKind::TableWrite).is_some())
                .collect::<Vec<_>>()
        };
        let (a, b, c) = (pattern(1), pattern(1), pattern(2));
        assert_eq!(a, b, "the same seed faults the same requests");
        assert_ne!(a, c);
        let hits = a.iter().filter(|x| **x).count();
        assert!((800..1200).contains(&hits), "about 1 %: {hits}");
    }
}

#[cfg(test)]
mod wire_tests;
