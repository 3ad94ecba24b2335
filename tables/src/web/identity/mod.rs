//! Users, roles, claims, external logins and tokens in tables, with
//! axum-login's `AuthnBackend` and `AuthzBackend` over them.
