//! Blob conformance scenarios of shared uploads and streamed reads, run with
//! the other blob scenarios on both backends (see [`crate::blob_scenarios`]).

use std::sync::Arc;

use unified_tables::backend::blob::{BlobBackend, BlobCondition, BlobProperties, BlobSink, PutOptions};
use unified_tables::sha256_hex;
use unified_tables::Error;

/// What a streamed read delivered, in order.
#[derive(Default)]
struct Recorded {
    started: Vec<BlobProperties>,
    bytes: Vec<u8>,
    /// Writes that came before `start`.
    early: usize,
    writes: usize,
}

impl BlobSink for Recorded {
    fn start(&mut self, properties: &BlobProperties) {
        self.started.push(properties.clone());
    }

    fn write(&mut self, bytes: &[u8]) {
        if self.started.is_empty() {
            self.early += 1;
        }
        self.writes += 1;
        self.bytes.extend_from_slice(bytes);
    }
}

/// Bytes that are not all alike, so a reordered or dropped piece shows.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8 ^ (i / 251) as u8).collect()
}

/// A shared upload stores the caller's bytes (which stay theirs, unchanged)
/// under the same conditions as `put`; a streamed read hands over the
/// properties first and then every byte in order, and a hashed read the
/// bytes' SHA-256; a missing blob streams nothing.
pub async fn shared_puts_and_streamed_reads_see_the_same_blob(backend: &dyn BlobBackend, container: &str) {
    backend.create_container(container).await.unwrap();
    let bytes = Arc::new(pattern(600_000));
    let create_only = PutOptions {
        content_type: Some("application/pdf".into()),
        condition: BlobCondition::IfNoneMatchAny,
        ..PutOptions::default()
    };
    let stored = backend
        .put_shared(container, "f/file.pdf", bytes.clone(), create_only.clone())
        .await
        .unwrap();
    assert_eq!(stored.length, 600_000);
    assert_eq!(*bytes, pattern(600_000), "the caller's bytes are unchanged");
    let again = backend
        .put_shared(container, "f/file.pdf", Arc::new(b"other".to_vec()), create_only)
        .await;
    assert!(
        matches!(&again, Err(Error::Service { status: 409, code, .. }) if code == "BlobAlreadyExists"),
        "{again:?}"
    );

    let (props, plain) = backend.get(container, "f/file.pdf", None).await.unwrap().unwrap();
    assert_eq!((&props, &plain), (&stored, &*bytes));
    let mut sink = Recorded::default();
    let streamed = backend.get_into(container, "f/file.pdf", &mut sink).await.unwrap();
    assert_eq!(streamed.as_ref(), Some(&stored));
    assert_eq!(sink.started, vec![stored.clone()], "the properties come once, first");
    assert_eq!(sink.early, 0);
    assert!(sink.bytes == *bytes, "the streamed bytes are the blob's, in order");
    let (props, hashed, sha) = backend.get_hashed(container, "f/file.pdf").await.unwrap().unwrap();
    assert_eq!((props, &hashed), (stored, &*bytes));
    assert_eq!(sha, sha256_hex(&bytes));

    // An empty blob streams its properties and no bytes.
    let empty = backend
        .put_shared(container, "f/empty", Arc::new(Vec::new()), PutOptions::default())
        .await
        .unwrap();
    let mut sink = Recorded::default();
    assert_eq!(
        backend.get_into(container, "f/empty", &mut sink).await.unwrap(),
        Some(empty)
    );
    assert_eq!((sink.started.len(), sink.bytes.len()), (1, 0));
    let (_, _, sha) = backend.get_hashed(container, "f/empty").await.unwrap().unwrap();
    assert_eq!(sha, sha256_hex(b""));

    // A missing blob: nothing is handed over.
    let mut sink = Recorded::default();
    assert_eq!(backend.get_into(container, "f/missing", &mut sink).await.unwrap(), None);
    assert_eq!((sink.started.len(), sink.writes), (0, 0));
    assert!(backend.get_hashed(container, "f/missing").await.unwrap().is_none());
}
