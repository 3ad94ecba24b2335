//! Environments that connect the other ways production accounts require:
//! Entra ID bearer tokens (against the HTTPS Azurite with `--oauth basic`
//! that `scripts/test.sh` starts) and an account shared access signature
//! (against the plain one), plus the test credential and SAS signer they use.
//!
//! Azurite's `--oauth basic` checks a bearer token's shape, not its
//! signature: a JWT with `iat`, `nbf` and `exp` around now, an issuer under
//! `https://sts.windows.net/`, and the audience `https://storage.azure.com`.
//! It refuses bearer tokens over plain HTTP, so the token environment trusts
//! the test certificate authority in `UNIFIED_TABLES_TEST_CA`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use azure_core::credentials::{AccessToken, TokenCredential, TokenRequestOptions};
use base64::Engine as _;
use hmac::Mac as _;
use unified_tables::backend::azure::{AzureConnection, ConnectionString, EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY};
use unified_tables::backend::Backend as _;

use crate::{azure_env_over, required, Env, CONNECTION_VAR};

/// The HTTPS table endpoint of the OAuth Azurite.
pub const OAUTH_TABLE_VAR: &str = "UNIFIED_TABLES_TEST_OAUTH_TABLE";
/// The HTTPS blob endpoint of the OAuth Azurite.
pub const OAUTH_BLOB_VAR: &str = "UNIFIED_TABLES_TEST_OAUTH_BLOB";
/// The PEM file of the certificate authority that signed its certificate.
pub const CA_VAR: &str = "UNIFIED_TABLES_TEST_CA";

/// A token credential that hands out tokens shaped as Azurite's `--oauth basic`
/// expects, and records every scope it was asked for.
#[derive(Debug)]
pub struct TestTokenCredential {
    lifetime_secs: i64,
    calls: AtomicUsize,
    scopes: Mutex<Vec<String>>,
}

impl TestTokenCredential {
    /// Tokens valid for an hour.
    pub fn valid() -> Arc<TestTokenCredential> {
        Arc::new(TestTokenCredential {
            lifetime_secs: 3600,
            calls: AtomicUsize::new(0),
            scopes: Mutex::new(Vec::new()),
        })
    }

    /// Tokens that expired a minute ago.
    pub fn expired() -> Arc<TestTokenCredential> {
        Arc::new(TestTokenCredential {
            lifetime_secs: -60,
            calls: AtomicUsize::new(0),
            scopes: Mutex::new(Vec::new()),
        })
    }

    /// How many tokens were asked for.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The scopes asked for, in order.
    pub fn scopes(&self) -> Vec<String> {
        self.scopes.lock().unwrap().clone()
    }
}

/// An unsigned JWT with the claims Azurite checks.
pub fn test_jwt(issued_at: i64, expires_at: i64) -> String {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "aud": "https://storage.azure.com",
        "iss": "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/",
        "iat": issued_at,
        "nbf": issued_at,
        "exp": expires_at,
        "oid": "11059fcc-5514-4800-b5f8-49808b9cfab6",
        "tid": "72f988bf-86f1-41af-91ab-2d7cd011db47",
        "ver": "1.0",
    });
    let claims = b64.encode(claims.to_string());
    let signature = b64.encode(b"unsigned test token");
    format!("{header}.{claims}.{signature}")
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

#[async_trait::async_trait]
impl TokenCredential for TestTokenCredential {
    async fn get_token(&self, scopes: &[&str], _: Option<TokenRequestOptions<'_>>) -> azure_core::Result<AccessToken> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.scopes.lock().unwrap().extend(scopes.iter().map(|s| s.to_string()));
        let now = unix_now();
        let (issued, expires) = match self.lifetime_secs {
            life if life > 0 => (now - 60, now + life),
            life => (now - 3600, now + life),
        };
        let expires_on = time::OffsetDateTime::from_unix_timestamp(expires).expect("a time in range");
        Ok(AccessToken::new(test_jwt(issued, expires), expires_on))
    }
}

/// `None` with one line saying why the `what` scenarios are skipped, or a
/// panic when Azure is required (`CI=true` or `UNIFIED_TABLES_REQUIRE_AZURE=1`).
pub fn skip<T>(what: &str, reason: &str) -> Option<T> {
    if required() {
        panic!("the {what} scenarios are required here (CI=true or UNIFIED_TABLES_REQUIRE_AZURE=1) but {reason}; run scripts/test.sh, which starts both Azurites");
    }
    eprintln!("skipping the {what} scenarios: {reason} (scripts/test.sh starts Azurite and sets it)");
    None
}

/// The connection to the OAuth Azurite with `credential`, trusting the test
/// authority, or `None` (with one line) when it is not configured and not required.
pub fn oauth_connection(credential: Arc<dyn TokenCredential>) -> Option<AzureConnection> {
    let (Ok(table), Ok(blob), Ok(ca)) = (
        std::env::var(OAUTH_TABLE_VAR),
        std::env::var(OAUTH_BLOB_VAR),
        std::env::var(CA_VAR),
    ) else {
        return skip(
            "bearer-token",
            &format!("{OAUTH_TABLE_VAR}, {OAUTH_BLOB_VAR} or {CA_VAR} is not set"),
        );
    };
    let pem = std::fs::read(&ca).unwrap_or_else(|e| panic!("{CA_VAR} `{ca}`: {e}"));
    let connection =
        AzureConnection::with_token_credential(&format!("TableEndpoint={table};BlobEndpoint={blob}"), credential)
            .expect("the OAuth endpoints")
            .with_trusted_certificates_pem(&pem)
            .expect("the test certificate authority");
    Some(connection)
}

/// An environment on the OAuth Azurite, every request carrying a bearer token
/// from a [`TestTokenCredential`].
pub async fn oauth_env(hint: &str) -> Option<(Env, Arc<TestTokenCredential>)> {
    let credential = TestTokenCredential::valid();
    let connection = oauth_connection(credential.clone())?;
    let env = env_from(&connection, hint);
    probe(&env, "bearer-token").await?;
    Some((env, credential))
}

/// An account SAS for the table and blob services (`ss=bt`), every resource
/// type (`srt=sco`) and the permissions `permissions` (e.g. `racwdlup`),
/// valid for an hour, signed with `key` (version 2018-11-09).
pub fn account_sas(account: &str, key: &str, permissions: &str) -> String {
    let now = SystemTime::now();
    let format = |t: SystemTime| {
        let secs = t.duration_since(UNIX_EPOCH).unwrap().as_secs() as i64;
        let at = time::OffsetDateTime::from_unix_timestamp(secs).unwrap();
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            at.year(),
            u8::from(at.month()),
            at.day(),
            at.hour(),
            at.minute(),
            at.second()
        )
    };
    let start = format(now - Duration::from_secs(300));
    let expiry = format(now + Duration::from_secs(3600));
    let version = "2018-11-09";
    let to_sign = format!("{account}\n{permissions}\nbt\nsco\n{start}\n{expiry}\n\n\n{version}\n");
    let signature = hmac_sha256(&to_sign, key);
    let mut query = url_encode_pairs(&[
        ("sv", version),
        ("ss", "bt"),
        ("srt", "sco"),
        ("sp", permissions),
        ("st", &start),
        ("se", &expiry),
    ]);
    query.push_str("&sig=");
    query.push_str(&percent(&signature));
    query
}

/// The base64 HMAC-SHA256 of `text` under the base64 `key`, as Shared Key and SAS sign.
fn hmac_sha256(text: &str, key: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = b64.decode(key).expect("the account key is base64");
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).expect("HMAC takes a key of any length");
    mac.update(text.as_bytes());
    b64.encode(mac.finalize().into_bytes())
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn url_encode_pairs(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", percent(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The SAS connection string of the plain Azurite (its endpoints from
/// `UNIFIED_TABLES_TEST_CONNECTION`, an account SAS with `permissions`).
pub fn sas_connection_string(permissions: &str) -> Option<String> {
    let Ok(connection) = std::env::var(CONNECTION_VAR) else {
        return skip("SAS", &format!("{CONNECTION_VAR} is not set"));
    };
    let parsed = ConnectionString::parse(&connection).expect("the test connection string");
    assert_eq!(
        parsed.account_name, EMULATOR_ACCOUNT,
        "the SAS scenarios sign with the emulator's key"
    );
    let sas = account_sas(EMULATOR_ACCOUNT, EMULATOR_ACCOUNT_KEY, permissions);
    Some(format!(
        "SharedAccessSignature={sas};TableEndpoint={};BlobEndpoint={}",
        parsed.table_endpoint, parsed.blob_endpoint
    ))
}

/// An environment on the plain Azurite authorised by an account SAS with every permission.
pub async fn sas_env(hint: &str) -> Option<Env> {
    let connection = AzureConnection::parse(&sas_connection_string("racwdlup")?).expect("a SAS connection string");
    let env = env_from(&connection, hint);
    probe(&env, "SAS").await?;
    Some(env)
}

fn env_from(connection: &AzureConnection, hint: &str) -> Env {
    let backend = connection.table_backend().expect("the table backend");
    let blobs = connection.blob_backend().expect("the blob backend");
    azure_env_over(Arc::new(backend), Some(Arc::new(blobs)), hint)
}

/// One table created and deleted: an unreachable service is a clear failure (or a skip).
async fn probe(env: &Env, what: &str) -> Option<()> {
    let table = crate::unique_table("probe");
    let result = async {
        env.counter.create_table(&table).await?;
        env.counter.delete_table(&table).await
    }
    .await;
    if let Err(e) = result {
        return skip(what, &format!("the service is unreachable: {e}"));
    }
    env.reset_counts();
    Some(())
}
