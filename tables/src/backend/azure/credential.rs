//! How requests are authorised: Shared Key with the account key, a shared
//! access signature, or (feature `entra-id`) an Entra ID token credential.

use std::fmt;
#[cfg(feature = "entra-id")]
use std::sync::Arc;

use super::connection_string::AccountCredentials;
use super::transport::Signer;
use crate::error::Result;

/// The authorisation of one connection.
#[derive(Clone)]
pub(crate) enum Auth {
    /// From a connection string: the account key or a SAS.
    Parsed(AccountCredentials),
    /// Bearer tokens from a token credential, for the scope
    /// `https://storage.azure.com/.default`, cached for the connection.
    #[cfg(feature = "entra-id")]
    Token(Arc<super::transport::token::TokenCache>),
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Parsed(credentials) => credentials.fmt(f),
            #[cfg(feature = "entra-id")]
            Auth::Token(_) => f.write_str("TokenCredential(..)"),
        }
    }
}

impl Auth {
    /// The signer of this authorisation for `account`.
    pub(crate) fn signer(&self, account: &str) -> Result<Signer> {
        match self {
            Auth::Parsed(credentials) => Signer::of(account, credentials),
            #[cfg(feature = "entra-id")]
            Auth::Token(cache) => Ok(Signer::Token(cache.clone())),
        }
    }
}
