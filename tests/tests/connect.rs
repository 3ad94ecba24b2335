//! Connecting the ways production accounts require, against Azurite:
//! Entra ID bearer tokens (the HTTPS Azurite with `--oauth basic` that
//! `scripts/test.sh` starts beside the plain one), an account shared access
//! signature, and the service's request id in errors. A subset of the
//! conformance scenarios (tables, large values in blobs, and the blob
//! backend's own) runs through each credential.
//!
//! Without the Azurites these are skipped with one line, unless `CI=true` or
//! `UNIFIED_TABLES_REQUIRE_AZURE=1` make them required.

use unified_tables::backend::azure::{AzureConnection, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY};
use unified_tables::backend::blob::{BlobBackend, PutOptions};
use unified_tables::backend::{Backend, WriteOp};
use unified_tables::{Error, ErrorKind, Row, Tables, Value};
use unified_tables_tests::blob_scenarios::{self, unique_container};
use unified_tables_tests::connect::{oauth_connection, oauth_env, sas_connection_string, sas_env, TestTokenCredential};
use unified_tables_tests::scenarios::*;
use unified_tables_tests::{azure_env, unique_table};

/// The table scenarios run through each credential.
macro_rules! table_subset {
    ($m:ident) => {
        $m! {
            crud::create_then_get_returns_the_entity_with_its_etag,
            crud::update_is_conditional_on_the_etag_read,
            crud::delete_is_idempotent_and_delete_entity_is_conditional,
            crud::tables_are_created_on_first_use_and_tolerate_racing_creators,
            crud::request_counts_are_at_their_minimum,
            keys::keys_with_quotes_and_unicode_address_the_right_row,
            query::rows_come_back_in_key_order,
            query::pages_carry_a_cursor_bound_to_their_query,
            transactions::a_transaction_applies_all_operations,
            transactions::a_failing_operation_rolls_back_the_whole_transaction,
            large::every_tier_boundary_round_trips,
            large::files_are_blobs_read_lazily,
            large_blobs::blob_requests_of_offloaded_values_are_at_their_minimum,
        }
    };
}

/// The blob backend scenarios run through each credential.
macro_rules! blob_subset {
    ($m:ident) => {
        $m! {
            containers_are_created_idempotently_and_a_missing_one_is_404,
            put_then_get_returns_the_bytes_and_the_properties,
            create_only_put_is_409_blob_already_exists,
            if_match_is_412_on_a_stale_etag_or_a_missing_blob,
            ranged_reads_are_clipped_to_the_blob,
            listing_is_in_utf16_order_and_filtered_by_prefix,
            now_is_the_service_clock_at_whole_seconds,
        }
    };
}

macro_rules! oauth_tables {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod bearer_token {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some((env, credential)) = oauth_env(stringify!($name)).await else { return };
                    $module::$name(&env).await;
                    assert!(credential.calls() > 0, "the requests carried bearer tokens");
                }
            )*
        }
    };
}

macro_rules! sas_tables {
    ($($module:ident :: $name:ident),* $(,)?) => {
        mod account_sas {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(env) = sas_env(stringify!($name)).await else { return };
                    $module::$name(&env).await;
                }
            )*
        }
    };
}

macro_rules! oauth_blobs {
    ($($name:ident),* $(,)?) => {
        mod bearer_token_blobs {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let credential = TestTokenCredential::valid();
                    let Some(connection) = oauth_connection(credential.clone()) else { return };
                    let backend = connection.blob_backend().unwrap();
                    blob_scenarios::$name(&backend, &unique_container(stringify!($name))).await;
                    assert!(credential.calls() > 0, "the requests carried bearer tokens");
                }
            )*
        }
    };
}

macro_rules! sas_blobs {
    ($($name:ident),* $(,)?) => {
        mod account_sas_blobs {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let Some(cs) = sas_connection_string("racwdlup") else { return };
                    let backend = AzureConnection::parse(&cs).unwrap().blob_backend().unwrap();
                    blob_scenarios::$name(&backend, &unique_container(stringify!($name))).await;
                }
            )*
        }
    };
}

table_subset!(oauth_tables);
table_subset!(sas_tables);
blob_subset!(oauth_blobs);
blob_subset!(sas_blobs);

// ---------------------------------------------------------------------------
// Bearer tokens.

#[tokio::test]
async fn tokens_are_asked_for_the_storage_scope() {
    let credential = TestTokenCredential::valid();
    let Some(connection) = oauth_connection(credential.clone()) else {
        return;
    };
    let db = Tables::connect_with(connection).unwrap();
    let table = unique_table("scope");
    db.backend().create_table(&table).await.unwrap();
    db.backend().delete_table(&table).await.unwrap();
    let scopes = credential.scopes();
    assert!(!scopes.is_empty());
    assert!(
        scopes.iter().all(|s| s == "https://storage.azure.com/.default"),
        "{scopes:?}"
    );
}

#[tokio::test]
async fn an_expired_token_is_refused_by_the_service_with_its_request_id() {
    let Some(connection) = oauth_connection(TestTokenCredential::expired()) else {
        return;
    };
    let err = connection
        .table_backend()
        .unwrap()
        .create_table(&unique_table("expired"))
        .await
        .unwrap_err();
    match &err {
        Error::Service { status, code, .. } => {
            assert_eq!((*status, code.as_str()), (403, "AuthenticationFailed"), "{err}");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.request_id().is_some_and(|id| !id.is_empty()), "{err}");

    let Some(connection) = oauth_connection(TestTokenCredential::expired()) else {
        return;
    };
    let err = connection.blob_backend().unwrap().now().await.unwrap_err();
    assert_eq!(err.service_code().map(|(s, _)| s), Some(403), "{err}");
}

#[tokio::test]
async fn without_the_authority_the_https_endpoint_is_not_trusted() {
    if oauth_connection(TestTokenCredential::valid()).is_none() {
        return;
    }
    let table = std::env::var(unified_tables_tests::connect::OAUTH_TABLE_VAR).unwrap();
    let blob = std::env::var(unified_tables_tests::connect::OAUTH_BLOB_VAR).unwrap();
    let connection = AzureConnection::with_token_credential(
        &format!("TableEndpoint={table};BlobEndpoint={blob}"),
        TestTokenCredential::valid(),
    )
    .unwrap()
    .with_retry(unified_tables::RetryPolicy::no_retries());
    let err = connection
        .table_backend()
        .unwrap()
        .create_table(&unique_table("untrusted"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
}

/// An account key over HTTPS: entity requests go straight to the endpoint
/// over TLS, trusting the authority the connection names and refusing the
/// endpoint without it.
#[tokio::test]
async fn an_account_key_over_https_trusts_the_authority_it_is_given() {
    if oauth_connection(TestTokenCredential::valid()).is_none() {
        return;
    }
    let endpoint = std::env::var(unified_tables_tests::connect::OAUTH_TABLE_VAR).unwrap();
    let pem = std::fs::read(std::env::var(unified_tables_tests::connect::CA_VAR).unwrap()).unwrap();
    let text = format!("AccountName={EMULATOR_ACCOUNT};AccountKey={EMULATOR_ACCOUNT_KEY};TableEndpoint={endpoint}");
    let backend = AzureConnection::parse(&text)
        .unwrap()
        .with_trusted_certificates_pem(&pem)
        .unwrap()
        .table_backend()
        .unwrap();
    let table = unique_table("keytls");
    backend.create_table(&table).await.unwrap();
    let mut row = Row::new("p", "r");
    row.insert("Note", Value::String("över TLS".into()));
    let written = backend.execute(&table, WriteOp::Insert(row)).await.unwrap();
    let read = backend.get(&table, "p", "r").await.unwrap().expect("the row written");
    assert_eq!(read.get("Note"), Some(&Value::String("över TLS".into())));
    assert_eq!(read.etag, written.etag);

    let untrusted = AzureConnection::parse(&text)
        .unwrap()
        .with_retry(unified_tables::RetryPolicy::no_retries())
        .table_backend()
        .unwrap();
    let err = untrusted.get(&table, "p", "r").await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(
        err.to_string().contains(&endpoint),
        "the error names the request: {err}"
    );
}

// ---------------------------------------------------------------------------
// Shared access signatures.

#[tokio::test]
async fn tables_connect_takes_a_sas_connection_string() {
    let Some(cs) = sas_connection_string("racwdlup") else {
        return;
    };
    let db = Tables::connect(&cs).unwrap();
    let table = unique_table("sasconnect");
    db.backend().create_table(&table).await.unwrap();
    db.backend()
        .execute(&table, WriteOp::Insert(Row::new("p", "r").with("N", Value::Int64(1))))
        .await
        .unwrap();
    let row = db.backend().get(&table, "p", "r").await.unwrap().expect("stored");
    assert_eq!(row.get("N"), Some(&Value::Int64(1)));
    db.backend().delete_table(&table).await.unwrap();
}

#[tokio::test]
async fn a_read_only_sas_refuses_writes_with_the_request_id() {
    let Some(full) = sas_connection_string("racwdlup") else {
        return;
    };
    let Some(read_only) = sas_connection_string("rl") else {
        return;
    };
    let writer = AzureConnection::parse(&full).unwrap().table_backend().unwrap();
    let reader = AzureConnection::parse(&read_only).unwrap().table_backend().unwrap();
    let table = unique_table("sasro");
    writer.create_table(&table).await.unwrap();
    writer
        .execute(&table, WriteOp::Insert(Row::new("p", "r")))
        .await
        .unwrap();
    assert!(
        reader.get(&table, "p", "r").await.unwrap().is_some(),
        "reading is allowed"
    );
    let err = reader
        .execute(&table, WriteOp::Insert(Row::new("p", "other")))
        .await
        .unwrap_err();
    assert_eq!(
        err.service_code(),
        Some((403, "AuthorizationPermissionMismatch")),
        "{err}"
    );
    assert!(err.request_id().is_some(), "{err}");
    assert!(
        writer.get(&table, "p", "other").await.unwrap().is_none(),
        "nothing was written"
    );
    writer.delete_table(&table).await.unwrap();
}

// ---------------------------------------------------------------------------
// Request ids.

#[tokio::test]
async fn service_errors_carry_azurites_request_id() {
    let Some(env) = azure_env("requestid").await else {
        return;
    };
    let backend = env.backend();
    backend.create_table(&env.table).await.unwrap();
    backend
        .execute(&env.table, WriteOp::Insert(Row::new("p", "r")))
        .await
        .unwrap();

    // A single request.
    let err = backend
        .execute(&env.table, WriteOp::Insert(Row::new("p", "r")))
        .await
        .unwrap_err();
    assert_eq!(err.service_code(), Some((409, "EntityAlreadyExists")), "{err}");
    let id = err.request_id().expect("a request id").to_owned();
    assert!(
        id.len() >= 32 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
        "{id}"
    );
    assert!(err.to_string().contains(&format!("(request id {id})")), "{err}");

    // A transaction: the failing part carries the id of the whole request.
    let err = backend
        .transaction(
            &env.table,
            vec![
                WriteOp::Insert(Row::new("p", "new")),
                WriteOp::Insert(Row::new("p", "r")),
            ],
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Transaction { .. }), "{err:?}");
    let tx_id = err.request_id().expect("a request id");
    assert_ne!(tx_id, id, "each request has its own id");
    assert!(err.to_string().contains(tx_id), "{err}");

    // A blob request.
    let blobs = env.blobs.clone().expect("a blob backend");
    let err = blobs
        .put(&unique_container("missing"), "a", b"x".to_vec(), PutOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.service_code().map(|(s, _)| s), Some(404), "{err}");
    assert!(err.request_id().is_some(), "{err}");

    // The in-memory backend has no request ids.
    let memory = unified_tables::backend::memory::MemoryBackend::new();
    memory.create_table("T").await.unwrap();
    memory.execute("T", WriteOp::Insert(Row::new("p", "r"))).await.unwrap();
    let err = memory
        .execute("T", WriteOp::Insert(Row::new("p", "r")))
        .await
        .unwrap_err();
    assert_eq!(err.request_id(), None);
}
