//! Building blocks for web services on unified-tables: a tower-sessions
//! session store (feature `tower-sessions`) and user, role and login stores
//! with axum-login backends over them (feature `axum-login`).

#[cfg(feature = "axum-login")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum-login")))]
pub mod identity;
#[cfg(feature = "tower-sessions")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower-sessions")))]
pub mod sessions;
