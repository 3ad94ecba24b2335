//! The signed-in user of a request.

use std::collections::BTreeSet;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum_login::AuthSession;
use unified_tables::web::identity::{Identity, User};

use super::accounts::identity_error;
use super::app::AppState;
use super::error::ApiError;

/// The user a request's session belongs to, with their roles as stored now
/// (a role granted or taken applies from the next request on). A request
/// without a live session is refused with `401`.
#[derive(Debug, Clone)]
pub struct CurrentUser {
    /// The user's id: the partition of their notes.
    pub id: String,
    pub user: User,
    pub roles: BTreeSet<String>,
}

impl FromRequestParts<AppState> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<CurrentUser, ApiError> {
        let session = AuthSession::<Identity>::from_request_parts(parts, state)
            .await
            .map_err(|(_, reason)| ApiError::internal("reading the session", reason))?;
        let user = session.user.ok_or_else(ApiError::unauthenticated)?;
        let roles = state
            .identity
            .roles_of(user.id())
            .await
            .map_err(|e| identity_error("reading your roles", e))?
            .into_iter()
            .collect();
        Ok(CurrentUser {
            id: user.id().to_string(),
            user,
            roles,
        })
    }
}
