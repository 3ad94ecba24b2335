//! Checks of large values on the way in and out: a file's blob is checked
//! against its reference before it is kept (a blob of another length is
//! refused without holding its bytes, one of the same length but other bytes
//! fails its hash), and a gzip value no reader could unpack is refused on write.

use unified_tables::backend::blob::{BlobBackend, BlobCondition, PutOptions};
use unified_tables::backend::Backend;
use unified_tables::{BlobContent, Error};

use crate::model::Document;
use crate::{blob_options, noise, Env};

pub async fn a_file_whose_blob_changed_is_integrity_on_every_read(env: &Env) {
    let blobs = env.blobs.clone().expect("a blob backend");
    let container = blob_options().container().to_owned();
    let store = env.tables.store_in::<Document>(&env.table);
    let bytes = noise(300_000, 31).into_bytes();
    let mut d = Document::new("p", "changed");
    d.attachment = Some(BlobContent::from_bytes(bytes.clone(), "text/plain"));
    store.create(&mut d).await.unwrap();
    let content = store.get(("p", "changed")).await.unwrap().unwrap().attachment.unwrap();
    let path = content.reference().unwrap().path.clone();
    let put = |bytes: Vec<u8>| {
        let (blobs, container, path) = (blobs.clone(), container.clone(), path.clone());
        async move {
            let options = PutOptions {
                condition: BlobCondition::None,
                ..PutOptions::default()
            };
            blobs.put(&container, &path, bytes, options).await.unwrap();
        }
    };
    // Longer than the reference: refused on its stated length.
    put(noise(900_000, 32).into_bytes()).await;
    let err = content.read_all().await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { reason, .. } if reason.contains("900000 bytes, expected 300000")),
        "{err}"
    );
    // Shorter.
    put(bytes[..1000].to_vec()).await;
    let err = content.read_all().await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { reason, .. } if reason.contains("1000 bytes, expected 300000")),
        "{err}"
    );
    // The same length, other bytes: the hash.
    let mut other = bytes.clone();
    other[150_000] ^= 1;
    put(other).await;
    let err = content.read_all().await.unwrap_err();
    assert!(
        matches!(&err, Error::Integrity { reason, .. } if reason.contains("hashing to")),
        "{err}"
    );
    // Put back, the file reads again.
    put(bytes.clone()).await;
    assert_eq!(content.read_all().await.unwrap(), bytes);
}

pub async fn a_gzip_value_past_the_read_bound_is_refused_on_write(env: &Env) {
    let store = env.tables.store_in::<Document>(&env.table);
    let mut d = Document::new("p", "huge");
    // One byte over 256 MiB unpacked: stored, it could never be read back.
    d.notes = Some("a".repeat((256 << 20) + 1));
    let err = store.create(&mut d).await.unwrap_err();
    assert!(
        matches!(&err, Error::OversizedValue { column, limit, .. } if column == "Notes" && *limit == 256 << 20),
        "{err}"
    );
    assert!(
        env.backend().get(&env.table, "p", "huge").await.unwrap().is_none(),
        "nothing stored"
    );
    // At the bound it is accepted (and compresses to little).
    d.notes = Some("a".repeat(256 << 20));
    store.create(&mut d).await.unwrap();
    let got = store.get(("p", "huge")).await.unwrap().unwrap();
    assert_eq!(got.notes.as_ref().map(String::len), Some(256 << 20));
}
