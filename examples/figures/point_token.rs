//! Point operations' client CPU per operation with a bearer token, beside
//! the account key's and the raw crate's, on the HTTPS emulator with
//! `--oauth basic` that `scripts/test.sh` starts (its endpoints and
//! authority in `UNIFIED_TABLES_TEST_OAUTH_TABLE`,
//! `UNIFIED_TABLES_TEST_OAUTH_BLOB` and `UNIFIED_TABLES_TEST_CA`): the same
//! account, the same TLS, three clients taking turns at 16 in flight. Every
//! request goes through the library's one transport whatever the
//! credential, so a token's requests should cost what a key's do (the
//! cached token is one header; a key's is an HMAC per request).

use std::sync::Arc;

use azure_core::{ClientOptions, TransportOptions};
use azure_data_tables::clients::TableServiceClientBuilder;
use azure_storage::{CloudLocation, StorageCredentials};
use unified_tables::backend::azure::{AzureConnection, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY};
use unified_tables::{Store, Tables};
use unified_tables_tests::connect::{TestTokenCredential, CA_VAR, OAUTH_BLOB_VAR, OAUTH_TABLE_VAR};

use crate::common::{fresh_table, Failure, Reading};
use crate::point::{cpu_per_op, library, raw, Op, Slice, Timing, PARTITION, ROUNDS};
use crate::report::{Figure, Target};

/// Requests in flight.
const IN_FLIGHT: usize = 16;

/// The HTTPS endpoints and the authority's PEM, when the environment names them.
fn oauth_endpoints() -> Option<(String, String, Vec<u8>)> {
    let table = std::env::var(OAUTH_TABLE_VAR).ok()?;
    let blob = std::env::var(OAUTH_BLOB_VAR).ok()?;
    let pem = std::fs::read(std::env::var(CA_VAR).ok()?).ok()?;
    Some((table, blob, pem))
}

/// The figures, `n` operations per measurement; none when the HTTPS emulator is not named.
pub async fn figures(n: usize) -> Result<Vec<Figure>, Failure> {
    let Some((table_endpoint, blob_endpoint, pem)) = oauth_endpoints() else {
        eprintln!("figures: no bearer-token figures ({OAUTH_TABLE_VAR}, {OAUTH_BLOB_VAR} or {CA_VAR} is not set)");
        return Ok(Vec::new());
    };
    let endpoints = format!("TableEndpoint={table_endpoint};BlobEndpoint={blob_endpoint}");
    let token = AzureConnection::with_token_credential(&endpoints, TestTokenCredential::valid())?
        .with_trusted_certificates_pem(&pem)?;
    let key = AzureConnection::parse(&format!(
        "AccountName={EMULATOR_ACCOUNT};AccountKey={EMULATOR_ACCOUNT_KEY};{endpoints}"
    ))?
    .with_trusted_certificates_pem(&pem)?;
    let by_token = Tables::connect_with(token)?.without_cache();
    let by_key = Tables::connect_with(key)?.without_cache();
    // The raw crate on a pooled client trusting the same authority.
    let http = reqwest::Client::builder()
        .tcp_nodelay(true)
        .add_root_certificate(reqwest::Certificate::from_pem(&pem)?)
        .build()?;
    let location = CloudLocation::Custom {
        account: EMULATOR_ACCOUNT.to_owned(),
        uri: table_endpoint.clone(),
    };
    let credentials = StorageCredentials::access_key(EMULATOR_ACCOUNT.to_owned(), EMULATOR_ACCOUNT_KEY.to_owned());
    let service = TableServiceClientBuilder::with_location(location, credentials)
        .client_options(ClientOptions::new(TransportOptions::new(Arc::new(http))))
        .build();

    let table = fresh_table("PointToken");
    let token_store: Store<Reading> = by_token.store_in(&table);
    let key_store: Store<Reading> = by_key.store_in(&table);
    token_store.create_batch(&Reading::many(PARTITION, "s", n)).await?;
    let client = service.table_client(&table);
    for op in Op::ALL {
        let warm = Slice {
            op,
            ops: 0..IN_FLIGHT,
            in_flight: IN_FLIGHT,
            round: usize::MAX - 1,
        };
        library(&token_store, warm.clone()).await?;
        library(
            &key_store,
            Slice {
                round: usize::MAX - 2,
                ..warm.clone()
            },
        )
        .await?;
        raw(
            &client,
            Slice {
                round: usize::MAX - 3,
                ..warm
            },
        )
        .await?;
    }
    // cpu[op] = (token rounds, key rounds, raw rounds)
    let mut cpu = vec![(Vec::new(), Vec::new(), Vec::new()); Op::ALL.len()];
    for round in 0..ROUNDS {
        for (o, &op) in Op::ALL.iter().enumerate() {
            let slice = |round| Slice {
                op,
                ops: 0..n,
                in_flight: IN_FLIGHT,
                round,
            };
            // Each client's creates go to keys of their own (`round` apart).
            let (t, k, r) = &mut cpu[o];
            let turns: [u8; 3] = match round % 3 {
                0 => [0, 1, 2],
                1 => [1, 2, 0],
                _ => [2, 0, 1],
            };
            for turn in turns {
                match turn {
                    0 => t.push(library(&token_store, slice(3 * round)).await?),
                    1 => k.push(library(&key_store, slice(3 * round + 1)).await?),
                    _ => r.push(raw(&client, slice(3 * round + 2)).await?),
                }
            }
        }
    }
    by_key.backend().delete_table(&table).await?;

    let per_op = |rounds: &Vec<Timing>| cpu_per_op(rounds, n);
    let mut figures = Vec::new();
    for (o, op) in Op::ALL.iter().enumerate() {
        let (t, k, r) = &cpu[o];
        let (Some(token), Some(key), Some(raw)) = (per_op(t), per_op(k), per_op(r)) else {
            continue;
        };
        let name = |what: &str| format!("{}, {IN_FLIGHT} in flight, HTTPS: client CPU per op, {what}", op.name());
        figures.push(
            Figure::compared(name("bearer token vs account key"), token.clone(), key.clone())
                .target(Target::AtMost(1.05)),
        );
        figures
            .push(Figure::compared(name("bearer token vs raw crate"), token, raw.clone()).target(Target::AtMost(0.8)));
        figures.push(Figure::compared(name("account key vs raw crate"), key, raw).target(Target::AtMost(0.8)));
    }
    Ok(figures)
}
