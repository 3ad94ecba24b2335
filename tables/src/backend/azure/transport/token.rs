//! Bearer tokens of one connection, cached and refreshed ahead of their
//! expiry as the Azure SDKs do: a token is used until five minutes before it
//! expires; in those five minutes one request asks the credential for the
//! next while the others keep sending the current one, and only a token
//! that has expired makes requests wait for its successor. Tables and blobs
//! of one connection share the cache (one scope).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use azure_core::credentials::TokenCredential;
use hyper::header::HeaderValue;

use crate::error::{redact, Error, Result};

/// The scope of Azure Storage's data plane.
pub(crate) const STORAGE_SCOPE: &str = "https://storage.azure.com/.default";
/// How long before its expiry a token is replaced.
const REFRESH_AHEAD: Duration = Duration::from_secs(300);

/// A token credential and the token it last gave.
pub(crate) struct TokenCache {
    credential: Arc<dyn TokenCredential>,
    current: Mutex<Option<Cached>>,
    /// Held by the one request that asks the credential.
    refreshing: tokio::sync::Mutex<()>,
}

#[derive(Clone)]
struct Cached {
    authorization: HeaderValue,
    /// Seconds since the Unix epoch.
    expires_on: i64,
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl TokenCache {
    pub(crate) fn new(credential: Arc<dyn TokenCredential>) -> TokenCache {
        TokenCache {
            credential,
            current: Mutex::new(None),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    fn cached(&self) -> Option<Cached> {
        self.current.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `Bearer <token>`, from the cache or the credential.
    pub(crate) async fn authorization(&self) -> Result<HeaderValue> {
        let fresh = |c: &Cached| c.expires_on - REFRESH_AHEAD.as_secs() as i64 > unix_now();
        if let Some(cached) = self.cached() {
            if fresh(&cached) {
                return Ok(cached.authorization);
            }
            if cached.expires_on > unix_now() {
                // Still valid: one request refreshes, the others go on with it.
                return match self.refreshing.try_lock() {
                    Ok(_refreshing) => Ok(self.fetch().await.unwrap_or(cached.authorization)),
                    Err(_) => Ok(cached.authorization),
                };
            }
        }
        let _refreshing = self.refreshing.lock().await;
        match self.cached() {
            Some(cached) if fresh(&cached) => Ok(cached.authorization),
            _ => self.fetch().await,
        }
    }

    async fn fetch(&self) -> Result<HeaderValue> {
        let token = self.credential.get_token(&[STORAGE_SCOPE], None).await.map_err(|e| {
            tracing::debug!(target: super::TARGET, error = %redact(&e.to_string()), "the token credential failed");
            Error::credential("the token credential gave no token").with_source(e)
        })?;
        let mut authorization = HeaderValue::try_from(format!("Bearer {}", token.token.secret()))
            .map_err(|_| Error::credential("the token credential gave a token that HTTP cannot carry"))?;
        authorization.set_sensitive(true);
        let cached = Cached {
            authorization: authorization.clone(),
            expires_on: token.expires_on.unix_timestamp(),
        };
        tracing::debug!(target: super::TARGET, expires_on = cached.expires_on, "a bearer token was fetched");
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(cached);
        Ok(authorization)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use azure_core::credentials::{AccessToken, TokenRequestOptions};
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug)]
    struct Counting {
        lifetime: i64,
        calls: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl TokenCredential for Counting {
        async fn get_token(&self, _: &[&str], _: Option<TokenRequestOptions<'_>>) -> azure_core::Result<AccessToken> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            let expires = azure_core::time::OffsetDateTime::from_unix_timestamp(unix_now() + self.lifetime).unwrap();
            Ok(AccessToken::new(format!("token-{n}"), expires))
        }
    }

    fn cache(lifetime: i64) -> (TokenCache, Arc<Counting>) {
        let credential = Arc::new(Counting {
            lifetime,
            calls: AtomicUsize::new(0),
        });
        (TokenCache::new(credential.clone()), credential)
    }

    #[tokio::test]
    async fn a_token_is_reused_until_it_nears_its_expiry() {
        let (cache, credential) = cache(3600);
        let first = cache.authorization().await.unwrap();
        assert_eq!(cache.authorization().await.unwrap(), first);
        assert_eq!(credential.calls.load(Ordering::SeqCst), 1);
        assert!(first.is_sensitive());
    }

    #[tokio::test]
    async fn a_token_in_its_last_minutes_is_replaced() {
        let (cache, credential) = cache(120);
        let first = cache.authorization().await.unwrap();
        let second = cache.authorization().await.unwrap();
        assert_ne!(first, second, "a token two minutes from expiry is refreshed");
        assert_eq!(credential.calls.load(Ordering::SeqCst), 2);
    }
}
