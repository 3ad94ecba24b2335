//! A `tracing` layer that records every span (with its parent and fields)
//! and every event (with the span it happened in), for the telemetry
//! scenarios.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// One span as it was made and then recorded.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    /// The span's id within the capture.
    pub id: u64,
    /// Its parent's id.
    pub parent: Option<u64>,
    /// `tracing`'s name (e.g. `db.operation`).
    pub name: &'static str,
    /// Its target.
    pub target: &'static str,
    /// Every field, as text (strings without quotes).
    pub fields: BTreeMap<String, String>,
}

/// One event.
#[derive(Debug, Clone)]
pub struct EventRecord {
    /// The event's name (`settle.read_back`, …).
    pub name: &'static str,
    /// Its target.
    pub target: &'static str,
    /// Its level.
    pub level: tracing::Level,
    /// The span it happened in.
    pub span: Option<u64>,
    /// Every field, as text.
    pub fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Log {
    spans: Vec<SpanRecord>,
    events: Vec<EventRecord>,
}

/// What a [`capture`] saw.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Log>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Captured {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let meta = attrs.metadata();
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.id().into_u64());
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().spans.push(SpanRecord {
            id: id.into_u64(),
            parent,
            name: meta.name(),
            target: meta.target(),
            fields,
        });
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut log = self.0.lock().unwrap();
        if let Some(span) = log.spans.iter_mut().rev().find(|s| s.id == id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        let span = ctx.event_span(event).map(|s| s.id().into_u64());
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().events.push(EventRecord {
            name: meta.name(),
            target: meta.target(),
            level: *meta.level(),
            span,
            fields,
        });
    }
}

impl Captured {
    /// Every span seen.
    pub fn spans(&self) -> Vec<SpanRecord> {
        self.0.lock().unwrap().spans.clone()
    }

    /// Every event seen.
    pub fn events(&self) -> Vec<EventRecord> {
        self.0.lock().unwrap().events.clone()
    }

    /// Forgets what was seen so far.
    pub fn clear(&self) {
        let mut log = self.0.lock().unwrap();
        log.spans.clear();
        log.events.clear();
    }

    /// The spans named `name`.
    pub fn named(&self, name: &str) -> Vec<SpanRecord> {
        self.spans().into_iter().filter(|s| s.name == name).collect()
    }

    /// Whether `span` is `ancestor` or inside it.
    pub fn within(&self, span: u64, ancestor: u64) -> bool {
        let spans = self.spans();
        let mut at = Some(span);
        while let Some(id) = at {
            if id == ancestor {
                return true;
            }
            at = spans.iter().rev().find(|s| s.id == id).and_then(|s| s.parent);
        }
        false
    }

    /// Every field value of every span and event, with where it was seen.
    pub fn every_field(&self) -> Vec<(String, String)> {
        let log = self.0.lock().unwrap();
        let spans = log.spans.iter().flat_map(|s| {
            s.fields
                .iter()
                .map(move |(k, v)| (format!("span {} {k}", s.name), v.clone()))
        });
        let events = log.events.iter().flat_map(|e| {
            e.fields
                .iter()
                .map(move |(k, v)| (format!("event {} {k}", e.name), v.clone()))
        });
        spans.chain(events).collect()
    }
}

/// The process's global subscriber while captures run: it wants nothing,
/// but leaves every callsite's interest undecided (`sometimes`), so each
/// event and span asks the subscriber of its own thread. Without it, a
/// callsite first met on a thread with no capture, while another thread was
/// installing one, can be cached as wanted by nobody, and a capture misses it.
struct Undecided;

impl Subscriber for Undecided {
    fn register_callsite(&self, _: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn max_level_hint(&self) -> Option<tracing::level_filters::LevelFilter> {
        Some(tracing::level_filters::LevelFilter::TRACE)
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {}
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Makes [`Undecided`] the global subscriber, once per process (unless the
/// process already chose one).
pub fn undecided_globally() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = tracing::subscriber::set_global_default(Undecided);
    });
}

/// Installs a subscriber recording everything at TRACE on this thread
/// until the guard drops (the scenario's future runs on it), and rebuilds
/// the callsites' interest so that callsites other threads met first are seen.
pub fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    undecided_globally();
    let captured = Captured::default();
    let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(captured.clone()));
    tracing::callsite::rebuild_interest_cache();
    (captured, guard)
}
