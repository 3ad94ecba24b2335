//! The blob conformance suite: every scenario is one `async fn` taking a
//! [`BlobBackend`] and a container name no other scenario uses, run on
//! [`MemoryBlobBackend`](unified_tables::backend::memory::MemoryBlobBackend) and on [`AzureBlobBackend`] (Azurite in CI) by
//! `tests/blob_conformance.rs`.
//!
//! Azure scenarios run when `UNIFIED_TABLES_TEST_CONNECTION` holds a
//! connection string with a blob endpoint (`scripts/test.sh` starts Azurite
//! and sets it). When it is missing or the service is unreachable they are
//! skipped with one line, unless `CI=true` or `UNIFIED_TABLES_REQUIRE_AZURE=1`,
//! in which case they fail.
//!
//! Where Azurite differs from the service, a scenario asserts each backend's
//! documented behaviour (see [`is_emulator`]); the in-memory backend follows
//! the service.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use unified_tables::backend::azure::AzureBlobBackend;
use unified_tables::backend::blob::{BlobBackend, BlobCondition, BlobListing, BlobProperties, PutOptions};
use unified_tables::{DateTime, Error};

pub use crate::blob_lease_scenarios::*;
pub use crate::blob_stream_scenarios::*;
use crate::{CONNECTION_VAR, REQUIRE_VAR};

/// Calls `$m! { scenario, ... }` with every blob scenario of this module.
#[macro_export]
macro_rules! for_each_blob_scenario {
    ($m:ident) => {
        $m! {
            containers_are_created_idempotently_and_a_missing_one_is_404,
            put_then_get_returns_the_bytes_and_the_properties,
            every_write_and_touch_changes_the_etag,
            create_only_put_is_409_blob_already_exists,
            if_match_is_412_on_a_stale_etag_or_a_missing_blob,
            if_unmodified_since_is_412_once_the_blob_is_modified_later,
            delete_reports_whether_the_blob_existed,
            ranged_reads_are_clipped_to_the_blob,
            an_empty_blob_reads_as_empty,
            content_encoding_is_stored_and_never_applied,
            listing_is_in_utf16_order_and_filtered_by_prefix,
            a_delimiter_yields_common_prefixes,
            markers_page_through_a_listing,
            max_results_must_be_positive,
            dot_segments_are_folded_as_the_service_folds_them,
            names_up_to_1024_characters_are_stored_and_longer_ones_refused,
            names_keep_characters_that_mean_something_in_a_url,
            now_is_the_service_clock_at_whole_seconds,
            // Leases and conditional reads (`blob_lease_scenarios`).
            a_lease_is_acquired_renewed_changed_and_released,
            writes_and_deletes_of_a_leased_blob_need_its_lease_id,
            a_break_hands_the_lease_over,
            lease_durations_and_break_periods_out_of_range_are_400,
            conditional_reads_answer_304_and_412_as_the_service_does,
            // Shared uploads and streamed reads (`blob_stream_scenarios`).
            shared_puts_and_streamed_reads_see_the_same_blob,
        }
    };
}

// ---------------------------------------------------------------------------
// Backends and names.

/// A container name unique to this process and run: lower-case letters,
/// digits and single dashes, 3 to 63 characters.
pub fn unique_container(hint: &str) -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    static RUN: OnceLock<u32> = OnceLock::new();
    let run = *RUN.get_or_init(rand::random::<u32>);
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    let mut clean = String::new();
    for c in hint.chars().map(|c| c.to_ascii_lowercase()) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        if !(c == '-' && (clean.is_empty() || clean.ends_with('-'))) {
            clean.push(c);
        }
        if clean.len() >= 40 {
            break;
        }
    }
    let clean = clean.trim_end_matches('-');
    let clean = if clean.is_empty() { "b" } else { clean };
    format!("{clean}-{run:08x}{n}")
}

fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
        || std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

fn skip(reason: &str) -> Option<AzureBlobBackend> {
    if required() {
        panic!("the Azure blob scenarios are required here (CI=true or {REQUIRE_VAR}=1) but {reason}; run scripts/test.sh, which starts Azurite");
    }
    static SAID: OnceLock<()> = OnceLock::new();
    SAID.get_or_init(|| {
        eprintln!("skipping Azure blob scenarios: {reason} (scripts/test.sh starts Azurite and sets {CONNECTION_VAR})")
    });
    None
}

/// The Azure / Azurite blob backend, or `None` (with one line on stderr)
/// when none is configured and none is required.
pub async fn azure_blob_backend() -> Option<AzureBlobBackend> {
    let Ok(connection) = std::env::var(CONNECTION_VAR) else {
        return skip(&format!("{CONNECTION_VAR} is not set"));
    };
    let backend = match AzureBlobBackend::from_connection_string(&connection) {
        Ok(b) => b,
        Err(e) => return skip(&format!("the connection string is not usable for blobs: {e}")),
    };
    // Probe once per process so an unreachable emulator is reported clearly.
    static PROBE: tokio::sync::OnceCell<Result<(), String>> = tokio::sync::OnceCell::const_new();
    let probe = PROBE
        .get_or_init(|| async { backend.now().await.map(|_| ()).map_err(|e| e.to_string()) })
        .await;
    if let Err(e) = probe {
        return skip(&format!("the blob service at {CONNECTION_VAR} is unreachable: {e}"));
    }
    Some(backend)
}

/// Whether the scenario runs on the in-memory backend.
pub fn is_memory(backend: &dyn BlobBackend) -> bool {
    format!("{backend:?}").starts_with("MemoryBlobBackend")
}

/// Whether the scenario runs on the local emulator (Azurite), whose
/// documented differences from the service some scenarios assert.
pub fn is_emulator(backend: &dyn BlobBackend) -> bool {
    !is_memory(backend)
        && std::env::var(CONNECTION_VAR)
            .map(|c| c.contains("devstoreaccount1") || c.contains("UseDevelopmentStorage") || c.contains("127.0.0.1"))
            .unwrap_or(false)
}

// ---------------------------------------------------------------------------
// Helpers.

fn code<T: std::fmt::Debug>(result: Result<T, Error>) -> (u16, String) {
    match result {
        Err(Error::Service { status, code, .. }) => (status, code),
        other => panic!("expected a service error, got {other:?}"),
    }
}

fn with(condition: BlobCondition) -> PutOptions {
    PutOptions {
        condition,
        ..PutOptions::default()
    }
}

fn not_met() -> (u16, String) {
    (412, "ConditionNotMet".to_owned())
}

async fn setup(backend: &dyn BlobBackend, container: &str) {
    backend.create_container(container).await.unwrap();
}

async fn put(backend: &dyn BlobBackend, container: &str, name: &str, bytes: &[u8]) -> BlobProperties {
    backend
        .put(container, name, bytes.to_vec(), PutOptions::default())
        .await
        .unwrap()
}

async fn bytes_of(backend: &dyn BlobBackend, container: &str, name: &str) -> Option<Vec<u8>> {
    backend
        .get(container, name, None)
        .await
        .unwrap()
        .map(|(_, bytes)| bytes)
}

async fn read(backend: &dyn BlobBackend, container: &str, name: &str, range: Range<u64>) -> Vec<u8> {
    backend.get(container, name, Some(range)).await.unwrap().unwrap().1
}

fn item_names(listing: &BlobListing) -> Vec<&str> {
    listing.items.iter().map(|i| i.name.as_str()).collect()
}

/// Every name in the container under `prefix`, through pages of `page` results.
async fn all_names(backend: &dyn BlobBackend, container: &str, prefix: &str, page: u32) -> Vec<String> {
    let mut names = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let listing = backend
            .list(container, prefix, None, marker.as_deref(), page)
            .await
            .unwrap();
        names.extend(listing.items.into_iter().map(|i| i.name));
        match listing.next_marker {
            Some(next) => marker = Some(next),
            None => return names,
        }
    }
}

fn plus(at: DateTime, ticks: i64) -> DateTime {
    DateTime::from_ticks(at.ticks() + ticks).unwrap()
}

const TICKS_PER_SECOND: i64 = 10_000_000;

/// Waits until the clock has moved into a later second than `at`.
async fn next_second() {
    tokio::time::sleep(Duration::from_millis(1100)).await;
}

// ---------------------------------------------------------------------------
// Scenarios.

/// Creating a container twice, or from racing callers, succeeds; every blob
/// operation on a missing container is 404 `ContainerNotFound`; a name the
/// service refuses is 400 `InvalidResourceName`.
pub async fn containers_are_created_idempotently_and_a_missing_one_is_404(backend: &dyn BlobBackend, container: &str) {
    let creators = (0..4).map(|_| backend.create_container(container));
    for result in futures::future::join_all(creators).await {
        result.unwrap();
    }
    put(backend, container, "k", b"v").await;
    setup(backend, container).await;
    assert_eq!(
        bytes_of(backend, container, "k").await.unwrap(),
        b"v",
        "creating again keeps the blobs"
    );

    let missing = format!("{container}-none");
    let not_found = (404, "ContainerNotFound".to_owned());
    assert_eq!(
        code(backend.put(&missing, "k", b"v".to_vec(), PutOptions::default()).await),
        not_found
    );
    assert_eq!(code(backend.get(&missing, "k", None).await), not_found);
    assert_eq!(code(backend.get(&missing, "k", Some(0..1)).await), not_found);
    assert_eq!(code(backend.properties(&missing, "k").await), not_found);
    assert_eq!(code(backend.touch(&missing, "k").await), not_found);
    assert_eq!(
        code(backend.delete(&missing, "k", BlobCondition::None).await),
        not_found
    );
    assert_eq!(code(backend.list(&missing, "", None, None, 10).await), not_found);

    for bad in ["ab", "Upper-case", "under_score", "double--dash", "-leading"] {
        assert_eq!(
            code(backend.create_container(bad).await),
            (400, "InvalidResourceName".to_owned()),
            "{bad}"
        );
    }
}

/// A put stores the bytes and reports the properties a read, a properties
/// call and a listing all report: a strong quoted ETag, Last-Modified at
/// whole seconds, the length and the content headers (the service's default
/// Content-Type when none is given).
pub async fn put_then_get_returns_the_bytes_and_the_properties(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let options = PutOptions {
        content_type: Some("application/json".into()),
        ..PutOptions::default()
    };
    let stored = backend
        .put(container, "doc.json", b"{\"a\":1}".to_vec(), options)
        .await
        .unwrap();
    assert!(
        stored.etag.starts_with("\"0x") && stored.etag.ends_with('"'),
        "{}",
        stored.etag
    );
    assert_eq!(stored.last_modified.ticks() % TICKS_PER_SECOND, 0);
    assert_eq!(stored.length, 7);
    assert_eq!(stored.content_type.as_deref(), Some("application/json"));
    assert_eq!(stored.content_encoding, None);

    let (props, bytes) = backend.get(container, "doc.json", None).await.unwrap().unwrap();
    assert_eq!((props, bytes), (stored.clone(), b"{\"a\":1}".to_vec()));
    assert_eq!(
        backend.properties(container, "doc.json").await.unwrap(),
        Some(stored.clone())
    );
    let listing = backend.list(container, "", None, None, 10).await.unwrap();
    assert_eq!(listing.items.len(), 1);
    assert_eq!(
        (listing.items[0].name.as_str(), &listing.items[0].properties),
        ("doc.json", &stored)
    );

    let plain = put(backend, container, "plain", b"x").await;
    assert_eq!(plain.content_type.as_deref(), Some("application/octet-stream"));
    assert_eq!(backend.properties(container, "plain").await.unwrap(), Some(plain));
    assert!(backend.get(container, "missing", None).await.unwrap().is_none());
    assert!(backend.properties(container, "missing").await.unwrap().is_none());
}

/// Every put and every touch gives a new ETag; a touch keeps the bytes and
/// the content headers; a touch of a missing blob is 404 `BlobNotFound`.
pub async fn every_write_and_touch_changes_the_etag(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let options = PutOptions {
        content_type: Some("text/plain".into()),
        content_encoding: Some("identity".into()),
        condition: BlobCondition::None,
        ..PutOptions::default()
    };
    let first = backend
        .put(container, "k", b"same".to_vec(), options.clone())
        .await
        .unwrap();
    let second = backend.put(container, "k", b"same".to_vec(), options).await.unwrap();
    let touched = backend.touch(container, "k").await.unwrap();
    let touched_again = backend.touch(container, "k").await.unwrap();
    let etags = [&first.etag, &second.etag, &touched.etag, &touched_again.etag];
    for (i, a) in etags.iter().enumerate() {
        for b in &etags[i + 1..] {
            assert_ne!(a, b, "every write and touch changes the ETag");
        }
    }
    assert!(touched.last_modified >= second.last_modified);
    assert_eq!(
        (
            touched.length,
            touched.content_type.as_deref(),
            touched.content_encoding.as_deref()
        ),
        (4, Some("text/plain"), Some("identity"))
    );
    assert_eq!(backend.properties(container, "k").await.unwrap(), Some(touched_again));
    assert_eq!(bytes_of(backend, container, "k").await.unwrap(), b"same");
    assert_eq!(
        code(backend.touch(container, "missing").await),
        (404, "BlobNotFound".to_owned())
    );

    // Touch moves Last-Modified with the clock.
    next_second().await;
    let later = backend.touch(container, "k").await.unwrap();
    assert!(
        later.last_modified > touched.last_modified,
        "{} <= {}",
        later.last_modified,
        touched.last_modified
    );
}

/// `If-None-Match: *` creates a missing blob and is 409 `BlobAlreadyExists`
/// (not 412) on an existing one, which keeps its bytes.
pub async fn create_only_put_is_409_blob_already_exists(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let created = backend
        .put(container, "k", b"first".to_vec(), with(BlobCondition::IfNoneMatchAny))
        .await
        .unwrap();
    let again = backend
        .put(container, "k", b"second".to_vec(), with(BlobCondition::IfNoneMatchAny))
        .await;
    assert_eq!(code(again), (409, "BlobAlreadyExists".to_owned()));
    assert_eq!(bytes_of(backend, container, "k").await.unwrap(), b"first");
    assert_eq!(
        backend.properties(container, "k").await.unwrap().unwrap().etag,
        created.etag
    );

    // Racing creators: exactly one wins.
    let racers = (0..4).map(|i| backend.put(container, "raced", vec![i as u8], with(BlobCondition::IfNoneMatchAny)));
    let results = futures::future::join_all(racers).await;
    assert_eq!(results.iter().filter(|r| r.is_ok()).count(), 1, "{results:?}");
    for failed in results.into_iter().filter(|r| r.is_err()) {
        assert_eq!(code(failed), (409, "BlobAlreadyExists".to_owned()));
    }
}

/// `If-Match` with another ETag, or on a missing blob, is 412
/// `ConditionNotMet` for puts and deletes; the current ETag (or `*` on an
/// existing blob) lets the write through.
pub async fn if_match_is_412_on_a_stale_etag_or_a_missing_blob(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let v1 = put(backend, container, "k", b"v1").await;
    let v2 = backend
        .put(
            container,
            "k",
            b"v2".to_vec(),
            with(BlobCondition::IfMatch(v1.etag.clone())),
        )
        .await
        .unwrap();
    let stale = BlobCondition::IfMatch(v1.etag.clone());
    assert_eq!(
        code(backend.put(container, "k", b"v3".to_vec(), with(stale.clone())).await),
        not_met()
    );
    assert_eq!(code(backend.delete(container, "k", stale).await), not_met());
    assert_eq!(bytes_of(backend, container, "k").await.unwrap(), b"v2");

    let some = BlobCondition::IfMatch(v2.etag.clone());
    assert_eq!(
        code(
            backend
                .put(container, "missing", b"v".to_vec(), with(some.clone()))
                .await
        ),
        not_met()
    );
    assert_eq!(code(backend.delete(container, "missing", some).await), not_met());
    let any = BlobCondition::IfMatch("*".into());
    assert_eq!(
        code(
            backend
                .put(container, "missing", b"v".to_vec(), with(any.clone()))
                .await
        ),
        not_met()
    );
    assert!(backend.properties(container, "missing").await.unwrap().is_none());

    let v3 = backend.put(container, "k", b"v3".to_vec(), with(any)).await.unwrap();
    assert!(backend
        .delete(container, "k", BlobCondition::IfMatch(v3.etag))
        .await
        .unwrap());
    assert!(backend.properties(container, "k").await.unwrap().is_none());
}

/// `If-Unmodified-Since` is compared with Last-Modified at one second: an
/// instant earlier than it is 412, the same second (even with a fraction) or
/// later passes; on a missing blob the condition does not apply.
pub async fn if_unmodified_since_is_412_once_the_blob_is_modified_later(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let v1 = put(backend, container, "k", b"v1").await;
    let lm = v1.last_modified;
    let since = |at| with(BlobCondition::IfUnmodifiedSince(at));
    assert_eq!(
        code(
            backend
                .put(container, "k", b"x".to_vec(), since(plus(lm, -TICKS_PER_SECOND)))
                .await
        ),
        not_met()
    );
    assert_eq!(
        code(
            backend
                .delete(
                    container,
                    "k",
                    BlobCondition::IfUnmodifiedSince(plus(lm, -TICKS_PER_SECOND))
                )
                .await
        ),
        not_met()
    );
    let long_ago = DateTime::parse("2001-01-01T00:00:00Z").unwrap();
    assert_eq!(
        code(backend.put(container, "k", b"x".to_vec(), since(long_ago)).await),
        not_met()
    );
    assert_eq!(bytes_of(backend, container, "k").await.unwrap(), b"v1");

    // The same second passes, also with a fraction past it.
    let v2 = backend.put(container, "k", b"v2".to_vec(), since(lm)).await.unwrap();
    backend
        .put(
            container,
            "k",
            b"v3".to_vec(),
            since(plus(v2.last_modified, TICKS_PER_SECOND / 2)),
        )
        .await
        .unwrap();
    let v3 = backend.properties(container, "k").await.unwrap().unwrap();

    // Modified in a later second: the earlier instant is now stale.
    next_second().await;
    let v4 = backend.touch(container, "k").await.unwrap();
    assert!(v4.last_modified > v3.last_modified);
    assert_eq!(
        code(
            backend
                .put(container, "k", b"x".to_vec(), since(v3.last_modified))
                .await
        ),
        not_met()
    );
    assert_eq!(
        code(
            backend
                .delete(container, "k", BlobCondition::IfUnmodifiedSince(v3.last_modified))
                .await
        ),
        not_met()
    );
    assert!(backend
        .delete(container, "k", BlobCondition::IfUnmodifiedSince(v4.last_modified))
        .await
        .unwrap());

    // A missing blob: a put creates it, a delete finds nothing.
    backend
        .put(container, "fresh", b"v".to_vec(), since(long_ago))
        .await
        .unwrap();
    assert!(!backend
        .delete(container, "never", BlobCondition::IfUnmodifiedSince(long_ago))
        .await
        .unwrap());
}

/// A delete reports whether the blob existed (`Ok(false)` for a missing one);
/// `If-None-Match: *` on an existing blob is 412 on the service and the
/// in-memory backend, while Azurite ignores it and deletes.
pub async fn delete_reports_whether_the_blob_existed(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    assert!(!backend.delete(container, "k", BlobCondition::None).await.unwrap());
    put(backend, container, "k", b"v").await;
    assert!(backend.delete(container, "k", BlobCondition::None).await.unwrap());
    assert!(backend.get(container, "k", None).await.unwrap().is_none());
    assert!(!backend.delete(container, "k", BlobCondition::None).await.unwrap());
    assert!(all_names(backend, container, "", 10).await.is_empty());

    assert!(!backend
        .delete(container, "k", BlobCondition::IfNoneMatchAny)
        .await
        .unwrap());
    put(backend, container, "k", b"v").await;
    let result = backend.delete(container, "k", BlobCondition::IfNoneMatchAny).await;
    if is_emulator(backend) {
        // Azurite skips `If-None-Match: *` on writes other than Put Blob.
        assert!(result.unwrap());
    } else {
        assert_eq!(code(result), not_met());
        assert_eq!(bytes_of(backend, container, "k").await.unwrap(), b"v");
    }
}

/// A ranged read returns the bytes of the range clipped to the blob (none
/// when it starts at or past the end), with the whole blob's properties.
pub async fn ranged_reads_are_clipped_to_the_blob(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let stored = put(backend, container, "k", b"0123456789").await;
    let (props, bytes) = backend.get(container, "k", Some(2..5)).await.unwrap().unwrap();
    assert_eq!((props, bytes), (stored.clone(), b"234".to_vec()));
    assert_eq!(read(backend, container, "k", 0..1).await, b"0");
    assert_eq!(read(backend, container, "k", 0..10).await, b"0123456789");
    assert_eq!(read(backend, container, "k", 8..50).await, b"89");
    assert_eq!(read(backend, container, "k", 9..u64::MAX).await, b"9");
    for past in [10..50, 20..30, 4..4] {
        let (props, bytes) = backend.get(container, "k", Some(past.clone())).await.unwrap().unwrap();
        assert_eq!((props, bytes), (stored.clone(), Vec::new()), "{past:?}");
    }
    assert!(backend.get(container, "missing", Some(0..5)).await.unwrap().is_none());
    assert!(backend.get(container, "missing", Some(7..7)).await.unwrap().is_none());
}

/// An empty blob reads as empty, whole or by any range (the crate's download
/// fails on it; see the Azure backend).
pub async fn an_empty_blob_reads_as_empty(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let stored = put(backend, container, "empty", b"").await;
    assert_eq!(stored.length, 0);
    for range in [None, Some(0..1), Some(0..0), Some(0..u64::MAX), Some(5..10)] {
        let (props, bytes) = backend.get(container, "empty", range.clone()).await.unwrap().unwrap();
        assert_eq!((props, bytes), (stored.clone(), Vec::new()), "{range:?}");
    }
    let listing = backend.list(container, "", None, None, 10).await.unwrap();
    assert_eq!(listing.items[0].properties.length, 0);
}

/// Content-Encoding is stored and echoed; the bytes come back exactly as
/// given, never decompressed on the way.
pub async fn content_encoding_is_stored_and_never_applied(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    // "hello" gzipped.
    let gzipped = vec![
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0xff, 0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x86,
        0xa6, 0x10, 0x36, 0x05, 0x00, 0x00, 0x00,
    ];
    let options = PutOptions {
        content_type: Some("text/plain; charset=utf-8".into()),
        content_encoding: Some("gzip".into()),
        condition: BlobCondition::None,
        ..PutOptions::default()
    };
    let stored = backend.put(container, "g", gzipped.clone(), options).await.unwrap();
    assert_eq!(stored.content_encoding.as_deref(), Some("gzip"));
    let (props, bytes) = backend.get(container, "g", None).await.unwrap().unwrap();
    assert_eq!(bytes, gzipped);
    assert_eq!(props, stored);
    assert_eq!(read(backend, container, "g", 0..2).await, [0x1f, 0x8b]);
    let listing = backend.list(container, "g", None, None, 10).await.unwrap();
    assert_eq!(listing.items[0].properties.content_encoding.as_deref(), Some("gzip"));
}

/// Names are listed in UTF-16 code-unit order (U+1F600 before U+FF61,
/// unlike UTF-8 byte order); a prefix selects the names that start with it.
pub async fn listing_is_in_utf16_order_and_filtered_by_prefix(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    for name in ["\u{ff61}", "\u{1f600}", "b", "a/2", "a/10", "A", "a", "é", "a-"] {
        put(backend, container, name, name.as_bytes()).await;
    }
    assert_eq!(
        all_names(backend, container, "", 5000).await,
        ["A", "a", "a-", "a/10", "a/2", "b", "é", "\u{1f600}", "\u{ff61}"]
    );
    assert_eq!(
        all_names(backend, container, "a", 5000).await,
        ["a", "a-", "a/10", "a/2"]
    );
    assert_eq!(all_names(backend, container, "a/", 5000).await, ["a/10", "a/2"]);
    assert_eq!(all_names(backend, container, "\u{1f600}", 5000).await, ["\u{1f600}"]);
    assert!(all_names(backend, container, "zz", 5000).await.is_empty());
    let listing = backend.list(container, "b", None, None, 10).await.unwrap();
    assert_eq!(listing.next_marker, None);
    assert_eq!(
        Some(listing.items[0].properties.clone()),
        backend.properties(container, "b").await.unwrap()
    );
}

/// With a delimiter, names with the delimiter past the prefix are grouped
/// into common prefixes (each ending with the delimiter), listed once.
pub async fn a_delimiter_yields_common_prefixes(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    for name in ["a/b/c", "a/b/d", "a/e", "a.txt", "f", "g/h"] {
        put(backend, container, name, b"x").await;
    }
    let top = backend.list(container, "", Some("/"), None, 100).await.unwrap();
    assert_eq!(top.prefixes, ["a/", "g/"]);
    assert_eq!(item_names(&top), ["a.txt", "f"]);
    let inner = backend.list(container, "a/", Some("/"), None, 100).await.unwrap();
    assert_eq!(inner.prefixes, ["a/b/"]);
    assert_eq!(item_names(&inner), ["a/e"]);
    let deepest = backend.list(container, "a/b/", Some("/"), None, 100).await.unwrap();
    assert!(deepest.prefixes.is_empty());
    assert_eq!(item_names(&deepest), ["a/b/c", "a/b/d"]);
    // Prefixes count towards max_results and are not repeated on the next page.
    let first = backend.list(container, "", Some("/"), None, 2).await.unwrap();
    let mut seen: Vec<String> = first.prefixes.clone();
    seen.extend(first.items.iter().map(|i| i.name.clone()));
    assert_eq!(seen.len(), 2);
    let mut marker = first.next_marker;
    while let Some(m) = marker {
        let page = backend.list(container, "", Some("/"), Some(&m), 2).await.unwrap();
        assert!(page.prefixes.len() + page.items.len() <= 2);
        seen.extend(page.prefixes.iter().cloned());
        seen.extend(page.items.iter().map(|i| i.name.clone()));
        marker = page.next_marker;
    }
    seen.sort();
    assert_eq!(seen, ["a.txt", "a/", "f", "g/"]);
}

/// `max_results` bounds each page; following `next_marker` lists every
/// name once, in order.
pub async fn markers_page_through_a_listing(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let all: Vec<String> = (0..7).map(|i| format!("n{i}")).collect();
    for name in &all {
        put(backend, container, name, b"x").await;
    }
    let mut pages = Vec::new();
    let mut seen = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = backend.list(container, "", None, marker.as_deref(), 3).await.unwrap();
        pages.push(page.items.len());
        seen.extend(page.items.into_iter().map(|i| i.name));
        match page.next_marker {
            Some(next) => marker = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, [3, 3, 1]);
    assert_eq!(seen, all);
    // Pages of one; with a prefix.
    assert_eq!(all_names(backend, container, "n", 1).await, all);
    let whole = backend.list(container, "", None, None, 7).await.unwrap();
    assert_eq!(whole.items.len(), 7);
    assert_eq!(whole.next_marker, None);
}

/// `max_results` of 0 is 400 `InvalidQueryParameterValue`; above 5000 the
/// service caps the page (it is not an error).
pub async fn max_results_must_be_positive(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    put(backend, container, "k", b"x").await;
    assert_eq!(
        code(backend.list(container, "", None, None, 0).await),
        (400, "InvalidQueryParameterValue".to_owned())
    );
    assert_eq!(
        backend.list(container, "", None, None, 5000).await.unwrap().items.len(),
        1
    );
    assert_eq!(
        backend.list(container, "", None, None, 6000).await.unwrap().items.len(),
        1
    );
    assert_eq!(
        backend
            .list(container, "", None, None, u32::MAX)
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

/// Names are folded as the service folds the request path (`./key` → `key`,
/// `a/./b` → `a/b`, `a/../b` → `b`, `\` → `/`) for every operation; a name
/// whose `..` leaves the container is refused with 400 before sending.
pub async fn dot_segments_are_folded_as_the_service_folds_them(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let stored = backend
        .put(container, "./key", b"1".to_vec(), PutOptions::default())
        .await
        .unwrap();
    put(backend, container, "a/./b", b"2").await;
    put(backend, container, "x/../c", b"3").await;
    put(backend, container, r"d\e", b"4").await;
    assert_eq!(all_names(backend, container, "", 100).await, ["a/b", "c", "d/e", "key"]);
    assert_eq!(bytes_of(backend, container, "key").await.unwrap(), b"1");
    assert_eq!(bytes_of(backend, container, "a/b").await.unwrap(), b"2");
    assert_eq!(bytes_of(backend, container, "c").await.unwrap(), b"3");
    assert_eq!(bytes_of(backend, container, "d/e").await.unwrap(), b"4");
    assert_eq!(backend.properties(container, "q/../key").await.unwrap(), Some(stored));
    backend.touch(container, "./a/b").await.unwrap();
    assert!(backend.delete(container, "d/./e", BlobCondition::None).await.unwrap());
    assert!(backend.properties(container, "d/e").await.unwrap().is_none());
    let invalid = (400, "InvalidUri".to_owned());
    assert_eq!(
        code(
            backend
                .put(container, "../escape", b"x".to_vec(), PutOptions::default())
                .await
        ),
        invalid
    );
    assert_eq!(code(backend.get(container, "a/../..", None).await), invalid);
    assert_eq!(
        code(backend.delete(container, "./.", BlobCondition::None).await),
        invalid
    );
}

/// Names of 1 to 1024 characters are stored; longer ones, empty ones and
/// ones starting or ending with `/` are refused with 400 `InvalidUri` before
/// anything is sent (Azurite alone would store a 1025-character name).
pub async fn names_up_to_1024_characters_are_stored_and_longer_ones_refused(
    backend: &dyn BlobBackend,
    container: &str,
) {
    setup(backend, container).await;
    let longest = "n".repeat(1024);
    put(backend, container, &longest, b"x").await;
    put(backend, container, "1", b"x").await;
    let deep = vec!["s"; 254].join("/");
    put(backend, container, &deep, b"x").await;
    assert_eq!(bytes_of(backend, container, &longest).await.unwrap(), b"x");
    let invalid = (400, "InvalidUri".to_owned());
    let too_deep = vec!["s"; 255].join("/");
    for name in [
        "n".repeat(1025),
        String::new(),
        "/lead".into(),
        "trail/".into(),
        too_deep,
    ] {
        assert_eq!(
            code(
                backend
                    .put(container, &name, b"x".to_vec(), PutOptions::default())
                    .await
            ),
            invalid,
            "{name:.40}"
        );
    }
    assert_eq!(all_names(backend, container, "", 100).await.len(), 3);
}

/// Characters that mean something in a URL (`?`, `#`, `%`, `+`, space), a
/// tab and non-ASCII characters are part of the name, stored and listed as
/// given (Azurite lists the tab-less name; see the scenario).
pub async fn names_keep_characters_that_mean_something_in_a_url(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let names = [
        "a%2Fe",
        "pct%41",
        "plus+",
        "q?x#y",
        "sp ace",
        "tab\tx",
        "'quoted'",
        "ü/\u{1f600}",
        "semi;colon=eq&amp",
    ];
    for name in names {
        put(backend, container, name, name.as_bytes()).await;
    }
    for name in names {
        assert_eq!(
            bytes_of(backend, container, name).await.unwrap(),
            name.as_bytes(),
            "{name}"
        );
    }
    // A tab comes back in the listing as it was written, on both backends.
    let mut expected: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    expected.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
    assert_eq!(all_names(backend, container, "", 100).await, expected);
    assert_eq!(all_names(backend, container, "q?", 100).await, ["q?x#y"]);
}

/// `now` is the service clock at whole seconds: no earlier than the
/// Last-Modified of a write that finished before it, and moving forward.
pub async fn now_is_the_service_clock_at_whole_seconds(backend: &dyn BlobBackend, container: &str) {
    setup(backend, container).await;
    let before = backend.now().await.unwrap();
    let stored = put(backend, container, "k", b"v").await;
    let after = backend.now().await.unwrap();
    for at in [before, after] {
        assert_eq!(at.ticks() % TICKS_PER_SECOND, 0, "{at}");
    }
    assert!(before <= stored.last_modified, "{before} > {}", stored.last_modified);
    assert!(stored.last_modified <= after, "{} > {after}", stored.last_modified);
    next_second().await;
    let later = backend.now().await.unwrap();
    assert!(later > after, "{later} <= {after}");
    // The service clock is within Shared Key's 15 minutes of this machine's.
    let skew = (later.unix_nanos() - DateTime::now().unix_nanos()).abs();
    assert!(skew < 15 * 60 * 1_000_000_000);
}
