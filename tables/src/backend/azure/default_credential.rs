//! The token credential [`AzureConnection::with_default_credential`](super::AzureConnection::with_default_credential)
//! picks from the environment, built from `azure_identity` 1.x's
//! credentials, each given the crate's own transport ([`IdentityHttpClient`]).

use std::fmt;
use std::sync::{Arc, Mutex};

use azure_core::credentials::{AccessToken, Secret, TokenCredential, TokenRequestOptions};
use azure_identity::{
    ClientAssertionCredentialOptions, ClientSecretCredential, ClientSecretCredentialOptions, DeveloperToolsCredential,
    ManagedIdentityCredential, ManagedIdentityCredentialOptions, UserAssignedId, WorkloadIdentityCredential,
    WorkloadIdentityCredentialOptions,
};

use super::transport::IdentityHttpClient;
use crate::error::{Error, Result};

/// The variables the choice reads.
pub(crate) const FEDERATED_TOKEN_FILE: &str = "AZURE_FEDERATED_TOKEN_FILE";
pub(crate) const CLIENT_SECRET: &str = "AZURE_CLIENT_SECRET";
pub(crate) const TENANT_ID: &str = "AZURE_TENANT_ID";
pub(crate) const CLIENT_ID: &str = "AZURE_CLIENT_ID";

/// The credential `var` (an environment reader) names: workload identity
/// when `AZURE_FEDERATED_TOKEN_FILE` is set, a client secret when
/// `AZURE_CLIENT_SECRET` is, else the managed identity (user-assigned when
/// `AZURE_CLIENT_ID` is set) and then the developer tools (Azure CLI, Azure
/// Developer CLI), the first of the two that gives a token.
pub(crate) fn from_environment(var: impl Fn(&str) -> Option<String>) -> Result<Arc<dyn TokenCredential>> {
    let client_options = || IdentityHttpClient::new().map(IdentityHttpClient::client_options);
    let required = |name: &str, because: &str| {
        var(name).ok_or_else(|| {
            Error::config(format!(
                "the default credential: {because} is set, so {name} must be too"
            ))
        })
    };
    if var(FEDERATED_TOKEN_FILE).is_some() {
        let options = WorkloadIdentityCredentialOptions {
            credential_options: ClientAssertionCredentialOptions {
                client_options: client_options()?,
            },
            tenant_id: Some(required(TENANT_ID, FEDERATED_TOKEN_FILE)?),
            client_id: Some(required(CLIENT_ID, FEDERATED_TOKEN_FILE)?),
            token_file_path: var(FEDERATED_TOKEN_FILE).map(Into::into),
        };
        return WorkloadIdentityCredential::new(Some(options))
            .map(|c| c as Arc<dyn TokenCredential>)
            .map_err(|e| Error::config("the default credential: the workload identity").with_source(e));
    }
    if let Some(secret) = var(CLIENT_SECRET) {
        let tenant = required(TENANT_ID, CLIENT_SECRET)?;
        let client = required(CLIENT_ID, CLIENT_SECRET)?;
        let options = ClientSecretCredentialOptions {
            client_options: client_options()?,
        };
        return ClientSecretCredential::new(&tenant, client, Secret::new(secret), Some(options))
            .map(|c| c as Arc<dyn TokenCredential>)
            .map_err(|e| Error::config("the default credential: the client secret").with_source(e));
    }
    let managed = ManagedIdentityCredential::new(Some(ManagedIdentityCredentialOptions {
        user_assigned_id: var(CLIENT_ID).map(UserAssignedId::ClientId),
        client_options: client_options()?,
    }))
    .map_err(|e| Error::config("the default credential: the managed identity").with_source(e))?;
    let developer = DeveloperToolsCredential::new(None)
        .map_err(|e| Error::config("the default credential: the developer tools").with_source(e))?;
    Ok(Arc::new(FirstThatAnswers {
        sources: vec![managed, developer],
        chosen: Mutex::new(None),
    }))
}

/// Credentials tried in order until one gives a token; that one answers from then on.
pub(crate) struct FirstThatAnswers {
    sources: Vec<Arc<dyn TokenCredential>>,
    chosen: Mutex<Option<usize>>,
}

impl fmt::Debug for FirstThatAnswers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FirstThatAnswers")
            .field("sources", &self.sources.len())
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl TokenCredential for FirstThatAnswers {
    async fn get_token(
        &self,
        scopes: &[&str],
        options: Option<TokenRequestOptions<'_>>,
    ) -> azure_core::Result<AccessToken> {
        let chosen = *self.chosen.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(index) = chosen {
            return self.sources[index].get_token(scopes, options).await;
        }
        let mut failures = Vec::new();
        for (index, source) in self.sources.iter().enumerate() {
            match source.get_token(scopes, options.clone()).await {
                Ok(token) => {
                    *self.chosen.lock().unwrap_or_else(|e| e.into_inner()) = Some(index);
                    return Ok(token);
                }
                Err(e) => failures.push(e.to_string()),
            }
        }
        Err(azure_core::Error::with_message(
            azure_core::error::ErrorKind::Credential,
            format!(
                "no credential of the default chain gave a token (managed identity, then developer tools): {}",
                failures.join("; ")
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn a_client_secret_without_its_tenant_is_a_config_error_naming_it() {
        let err = from_environment(env(&[(CLIENT_SECRET, "s"), (CLIENT_ID, "c")])).unwrap_err();
        assert!(matches!(err, Error::Config { .. }), "{err:?}");
        assert!(err.to_string().contains("AZURE_TENANT_ID"), "{err}");
        let err = from_environment(env(&[(FEDERATED_TOKEN_FILE, "/f"), (TENANT_ID, "t")])).unwrap_err();
        assert!(err.to_string().contains("AZURE_CLIENT_ID"), "{err}");
    }

    #[test]
    fn each_kind_is_made_without_sending_anything() {
        let tenant = "72f988bf-86f1-41af-91ab-2d7cd011db47";
        let secret = from_environment(env(&[(CLIENT_SECRET, "s"), (CLIENT_ID, "c"), (TENANT_ID, tenant)])).unwrap();
        assert!(format!("{secret:?}").contains("ClientSecretCredential"), "{secret:?}");
        // The workload identity reads its token file when made.
        let token_file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(token_file.path(), "header.claims.signature").unwrap();
        let workload = from_environment(env(&[
            (FEDERATED_TOKEN_FILE, token_file.path().to_str().unwrap()),
            (CLIENT_ID, "c"),
            (TENANT_ID, tenant),
        ]))
        .unwrap();
        assert!(
            format!("{workload:?}").contains("WorkloadIdentityCredential"),
            "{workload:?}"
        );
        let chain = from_environment(env(&[])).unwrap();
        assert!(format!("{chain:?}").contains("FirstThatAnswers"), "{chain:?}");
    }

    #[derive(Debug)]
    struct Scripted {
        answers: bool,
        calls: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl TokenCredential for Scripted {
        async fn get_token(&self, _: &[&str], _: Option<TokenRequestOptions<'_>>) -> azure_core::Result<AccessToken> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if !self.answers {
                return Err(azure_core::Error::with_message(
                    azure_core::error::ErrorKind::Credential,
                    "not here",
                ));
            }
            Ok(AccessToken::new("t", azure_core::time::OffsetDateTime::now_utc()))
        }
    }

    #[tokio::test]
    async fn the_chain_remembers_the_first_source_that_answered() {
        let fails = Arc::new(Scripted {
            answers: false,
            calls: AtomicUsize::new(0),
        });
        let answers = Arc::new(Scripted {
            answers: true,
            calls: AtomicUsize::new(0),
        });
        let chain = FirstThatAnswers {
            sources: vec![fails.clone(), answers.clone()],
            chosen: Mutex::new(None),
        };
        chain.get_token(&["s"], None).await.unwrap();
        chain.get_token(&["s"], None).await.unwrap();
        assert_eq!(fails.calls.load(Ordering::SeqCst), 1, "asked once, then passed over");
        assert_eq!(answers.calls.load(Ordering::SeqCst), 2);
        let none = FirstThatAnswers {
            sources: vec![fails.clone()],
            chosen: Mutex::new(None),
        };
        let err = none.get_token(&["s"], None).await.unwrap_err();
        assert!(err.to_string().contains("not here"), "{err}");
    }
}
