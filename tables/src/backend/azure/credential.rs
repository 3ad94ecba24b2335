//! How requests are authorised: Shared Key with the account key, a shared
//! access signature, or (feature `identity`) an Entra ID token credential.

use std::fmt;
#[cfg(feature = "identity")]
use std::sync::Arc;

use azure_core::auth::Secret;
#[cfg(feature = "identity")]
use azure_core::auth::TokenCredential;
use azure_storage::StorageCredentials;

use super::connection_string::Credentials;
use crate::error::{Error, Result};

/// The authorisation of one connection.
#[derive(Clone)]
pub(crate) enum Auth {
    /// From a connection string: the account key or a SAS.
    Parsed(Credentials),
    /// Bearer tokens from a token credential, for the scope
    /// `https://storage.azure.com/.default`.
    #[cfg(feature = "identity")]
    Token(Arc<dyn TokenCredential>),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Parsed(credentials) => credentials.fmt(f),
            #[cfg(feature = "identity")]
            Auth::Token(_) => f.write_str("TokenCredential(..)"),
        }
    }
}

impl Auth {
    /// The crate family's credentials for `account`.
    pub(crate) fn storage_credentials(&self, account: &str) -> Result<StorageCredentials> {
        match self {
            Auth::Parsed(Credentials::AccountKey(key)) => Ok(StorageCredentials::access_key(
                account.to_owned(),
                Secret::new(key.clone()),
            )),
            Auth::Parsed(Credentials::SharedAccessSignature(sas)) => {
                check_sas(sas)?;
                StorageCredentials::sas_token(sas.as_str()).map_err(|e| {
                    Error::config("connection string: SharedAccessSignature cannot be read").with_source(e)
                })
            }
            #[cfg(feature = "identity")]
            Auth::Token(credential) => Ok(StorageCredentials::token_credential(credential.clone())),
        }
    }
}

/// A SAS must carry its signature (`sig=`) and a version (`sv=`): a token
/// copied in part is refused here rather than answered 403 later.
pub(crate) fn check_sas(sas: &str) -> Result<()> {
    let names: Vec<&str> = sas
        .split('&')
        .filter_map(|pair| pair.split_once('=').map(|(name, _)| name))
        .collect();
    for (name, what) in [("sig", "signature"), ("sv", "signed version")] {
        if !names.contains(&name) {
            return Err(Error::config(format!(
                "connection string: SharedAccessSignature has no `{name}=` ({what}); give the whole token, as generated"
            )));
        }
    }
    Ok(())
}
