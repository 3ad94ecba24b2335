//! The span of one public operation, and what it records when it ends.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;

use tracing::field::Empty;
use tracing::{Instrument as _, Span};

use super::charge::{self, Charge};
use super::{error_type, status_code, OPERATION_DONE, OPERATION_TARGET, REQUEST_CHARGE};
use crate::error::Result;

/// The operation a task runs in: its name and its request charge so far.
#[derive(Clone)]
struct Current {
    name: &'static str,
    charge: Arc<Charge>,
}

impl Current {
    fn new(name: &'static str) -> Current {
        Current {
            name,
            charge: Arc::default(),
        }
    }
}

tokio::task_local! {
    /// The operation the running task is in.
    static CURRENT: Current;
}

/// The operation the running task is in, if any.
#[cfg(feature = "metrics")]
pub(crate) fn current_operation() -> Option<&'static str> {
    CURRENT.try_with(|current| current.name).ok()
}

/// Adds `units` to the running operation's request charge; `false` outside an operation.
pub(crate) fn add_charge(units: f64) -> bool {
    CURRENT.try_with(|current| current.charge.add(units)).is_ok()
}

/// Where a handle's operations go: the account and its table endpoint's
/// host and port (unknown for a backend not made from a connection).
#[derive(Debug, Clone, Default)]
pub(crate) struct Peer {
    pub(crate) namespace: Option<Arc<str>>,
    pub(crate) address: Option<Arc<str>>,
    pub(crate) port: Option<u16>,
}

impl Peer {
    /// The account `namespace` at `endpoint` (`scheme://host[:port]/...`).
    #[cfg_attr(not(feature = "azure"), allow(dead_code))]
    pub(crate) fn new(namespace: &str, endpoint: &str) -> Peer {
        let (scheme, rest) = endpoint.split_once("://").unwrap_or(("https", endpoint));
        let authority = rest.split('/').next().unwrap_or("");
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => (host, port.parse().ok()),
            _ => (authority, None),
        };
        let port = port.or(match scheme {
            "http" => Some(80),
            _ => Some(443),
        });
        Peer {
            namespace: (!namespace.is_empty()).then(|| namespace.into()),
            address: (!host.is_empty()).then(|| host.into()),
            port,
        }
    }
}

/// Records `db.operation.batch.size` on the running operation's span (a
/// batch of `size` entities); nothing outside an operation.
pub(crate) fn record_batch_size(size: usize) {
    if CURRENT.try_with(|_| ()).is_ok() {
        Span::current().record("db.operation.batch.size", size);
    }
}

/// One public operation: its span (a disabled one when it runs inside
/// another operation, or when no subscriber wants it) and its name.
pub(crate) struct Operation<'a> {
    span: Span,
    name: &'static str,
    collection: &'a str,
    nested: bool,
}

impl<'a> Operation<'a> {
    /// The operation `name` on `collection` (a table or a container) of `system`.
    pub(crate) fn new(system: &'static str, name: &'static str, collection: &'a str, peer: &Peer) -> Operation<'a> {
        if CURRENT.try_with(|_| ()).is_ok() {
            return Operation {
                span: Span::none(),
                name,
                collection,
                nested: true,
            };
        }
        let span = tracing::info_span!(
            target: OPERATION_TARGET,
            "db.operation",
            otel.name = %format_args!("{name} {collection}"),
            otel.kind = "client",
            db.system.name = system,
            db.collection.name = collection,
            db.namespace = peer.namespace.as_deref(),
            db.operation.name = name,
            db.operation.batch.size = Empty,
            server.address = peer.address.as_deref(),
            server.port = peer.port,
            { REQUEST_CHARGE } = Empty,
            db.response.status_code = Empty,
            error.type = Empty,
            otel.status_code = Empty,
        );
        Operation {
            span,
            name,
            collection,
            nested: false,
        }
    }

    /// The operation `name` on the blob container `container`.
    pub(crate) fn blobs(name: &'static str, container: &'a str) -> Operation<'a> {
        const NO_PEER: &Peer = &Peer {
            namespace: None,
            address: None,
            port: None,
        };
        Operation::new(super::DB_SYSTEM_BLOBS, name, container, NO_PEER)
    }

    /// Runs `work` as this operation: inside its span, recording the
    /// outcome (and, with the feature `metrics`, its duration).
    pub(crate) async fn run<R>(self, work: impl Future<Output = Result<R>>) -> Result<R> {
        if !self.watched() {
            return work.await;
        }
        let started = Instant::now();
        let current = Current::new(self.name);
        let charge = current.charge.clone();
        let result = CURRENT.scope(current, work.instrument(self.span.clone())).await;
        ended(
            &self.span,
            (self.name, self.collection),
            started.elapsed(),
            &charge,
            result.as_ref().err(),
        );
        result
    }

    /// Whether anything watches this operation: a subscriber that wants its
    /// span, or (feature `metrics`) a recorder of its duration. A nested
    /// operation is never watched: the one around it is.
    fn watched(&self) -> bool {
        !self.nested && (!self.span.is_disabled() || super::METRICS)
    }

    /// `inner` as this operation: each poll inside its span (so its requests,
    /// and tasks that carry the operation with [`carried`], are inside it),
    /// the outcome recorded at the stream's end, at its first error, or when
    /// it is dropped before its end (as a success: a reader may stop early).
    pub(crate) fn stream<S>(self, inner: S) -> OperationStream<S> {
        let watched = self.watched();
        OperationStream {
            inner: Box::pin(inner),
            span: self.span,
            current: Current::new(self.name),
            collection: if watched {
                self.collection.to_owned()
            } else {
                String::new()
            },
            started: Instant::now(),
            open: watched,
        }
    }
}

/// Records the end of the operation `(name, collection)`: on its span the
/// outcome (and the `done` or `failed` event) and its request charge, and
/// its duration and charge for the metrics.
fn ended(
    span: &Span,
    (name, collection): (&'static str, &str),
    elapsed: Duration,
    charge: &Charge,
    error: Option<&crate::Error>,
) {
    charge::record(span, charge);
    if charge.units() > 0.0 {
        super::charge_recorded(name, charge.units());
    }
    let outcome = match error {
        None => "ok",
        Some(error) => error_type(error),
    };
    if !span.is_disabled() {
        match error {
            None => span.in_scope(|| {
                tracing::debug!(name: OPERATION_DONE, target: OPERATION_TARGET, elapsed_us = elapsed.as_micros() as u64, "done")
            }),
            Some(error) => {
                span.record("error.type", outcome);
                span.record("otel.status_code", "ERROR");
                if let Some(status) = status_code(error) {
                    span.record("db.response.status_code", tracing::field::display(status));
                }
                span.in_scope(|| {
                    tracing::debug!(name: OPERATION_DONE, target: OPERATION_TARGET, elapsed_us = elapsed.as_micros() as u64, error.type = outcome, "failed")
                });
            }
        }
    }
    super::operation_done(name, collection, outcome, elapsed);
}

/// A stream run as one operation (see [`Operation::stream`]).
pub(crate) struct OperationStream<S> {
    inner: Pin<Box<S>>,
    span: Span,
    current: Current,
    collection: String,
    started: Instant,
    /// Watched, and not ended yet.
    open: bool,
}

impl<S> OperationStream<S> {
    fn end(&mut self, error: Option<&crate::Error>) {
        if std::mem::take(&mut self.open) {
            ended(
                &self.span,
                (self.current.name, &self.collection),
                self.started.elapsed(),
                &self.current.charge,
                error,
            );
        }
    }
}

impl<S, T> Stream for OperationStream<S>
where
    S: Stream<Item = Result<T>>,
{
    type Item = Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        let this = self.get_mut();
        if !this.open {
            return this.inner.as_mut().poll_next(cx);
        }
        let polled = {
            let _inside = this.span.enter();
            CURRENT.sync_scope(this.current.clone(), || this.inner.as_mut().poll_next(cx))
        };
        match &polled {
            Poll::Ready(None) => this.end(None),
            Poll::Ready(Some(Err(error))) => this.end(Some(error)),
            _ => {}
        }
        polled
    }
}

impl<S> Drop for OperationStream<S> {
    fn drop(&mut self) {
        self.end(None);
    }
}

/// `work`, to be spawned as a task of the running operation: inside its
/// span and under its name, so the task's requests count as the operation's.
pub(crate) fn carried<F: Future>(work: F) -> impl Future<Output = F::Output> {
    let current = CURRENT.try_with(Current::clone).ok();
    let work = work.instrument(Span::current());
    async move {
        match current {
            Some(current) => CURRENT.scope(current, work).await,
            None => work.await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_the_account_and_its_endpoints_host_and_port() {
        let p = Peer::new("devstoreaccount1", "http://127.0.0.1:10002/devstoreaccount1");
        assert_eq!(p.namespace.as_deref(), Some("devstoreaccount1"));
        assert_eq!(p.address.as_deref(), Some("127.0.0.1"));
        assert_eq!(p.port, Some(10002));
        let p = Peer::new("acc", "https://acc.table.core.windows.net");
        assert_eq!(p.address.as_deref(), Some("acc.table.core.windows.net"));
        assert_eq!(p.port, Some(443));
    }
}
