//! Accounts: sign-up, login, logout, the signed-in user, password changes
//! and role grants, over the identity stores and axum-login.

use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use axum_login::{AuthSession, AuthzBackend};
use serde::{Deserialize, Serialize};
use unified_tables::web::identity::{Claim, Credentials, Identity, IdentityError, NewUser, SignIn, User};
use unified_tables::DateTime;

use super::app::AppState;
use super::error::{bad_body, ApiError};
use super::user::CurrentUser;

/// The role whose members may change a note's `published` field (see `Note`).
pub const PUBLISHER: &str = "publisher";
/// The role whose members grant and take roles.
pub const ADMIN: &str = "admin";
/// The permission the admin role carries.
pub const MANAGE_ROLES: &str = "roles.manage";
/// The shortest password the service accepts.
pub const MIN_PASSWORD_CHARS: usize = 10;

type Auth = AuthSession<Identity>;

/// The body of `POST /signup` and `POST /login`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignUp {
    user_name: String,
    password: String,
    email: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Login {
    user_name: String,
    password: String,
}

/// The body of `PUT /me/password`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PasswordChange {
    current_password: String,
    new_password: String,
}

/// A user as the API shows it.
#[derive(Serialize)]
pub struct UserView {
    id: String,
    user_name: String,
    roles: Vec<String>,
}

fn view(user: &User, roles: impl IntoIterator<Item = String>) -> UserView {
    UserView {
        id: user.id().to_string(),
        user_name: user.user_name().to_owned(),
        roles: roles.into_iter().collect(),
    }
}

fn invalid_credentials(status: StatusCode) -> ApiError {
    ApiError::new(status, "invalid_credentials", "the user name or the password is wrong")
}

fn check_password(password: &str) -> Result<(), ApiError> {
    if password.chars().count() < MIN_PASSWORD_CHARS {
        return Err(ApiError::bad_request(
            "weak_password",
            format!("a password needs at least {MIN_PASSWORD_CHARS} characters"),
        ));
    }
    Ok(())
}

/// `423 Locked` until `until`, with `Retry-After`.
fn locked_out(until: DateTime) -> ApiError {
    let seconds = (until.unix_nanos() - DateTime::now().unix_nanos()).max(0) / 1_000_000_000 + 1;
    ApiError {
        retry_after: Some(seconds as u64),
        ..ApiError::new(
            StatusCode::LOCKED,
            "locked_out",
            format!("too many failed logins: the account is locked until {until}; try again then"),
        )
    }
}

/// An identity error met while `doing` something, as the client should see it.
pub fn identity_error(doing: &str, error: IdentityError) -> ApiError {
    match error {
        IdentityError::DuplicateUserName => ApiError::new(StatusCode::CONFLICT, "user_name_taken", error.to_string()),
        IdentityError::DuplicateEmail => ApiError::new(StatusCode::CONFLICT, "email_taken", error.to_string()),
        IdentityError::RoleNotFound(ref role) => {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("no role is named `{role}`"))
        }
        IdentityError::UserNotFound(_) => ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such user"),
        IdentityError::WrongPassword => invalid_credentials(StatusCode::FORBIDDEN),
        IdentityError::LockedOut { until } => locked_out(until),
        IdentityError::Invalid { field, ref reason } => {
            ApiError::bad_request("invalid_value", format!("{field}: {reason}"))
        }
        IdentityError::Contended => ApiError {
            retry_after: Some(1),
            ..ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "contended", error.to_string())
        },
        IdentityError::Storage(e) => ApiError::storage(doing, e),
        other => ApiError::internal(doing, other),
    }
}

fn session_error(doing: &str, error: axum_login::Error<Identity>) -> ApiError {
    match error {
        axum_login::Error::Backend(e) => identity_error(doing, e),
        axum_login::Error::Session(e) => ApiError::internal(doing, e),
    }
}

/// `POST /signup`: registers a user (`409` when the name is taken in any letter case).
pub async fn sign_up(
    State(state): State<AppState>,
    body: Result<Json<SignUp>, JsonRejection>,
) -> Result<Response, ApiError> {
    let Json(body) = body.map_err(bad_body)?;
    if body.user_name.trim().is_empty() {
        return Err(ApiError::bad_request(
            "invalid_user_name",
            "`user_name` is empty: choose a user name",
        ));
    }
    check_password(&body.password)?;
    let mut new = NewUser::new(body.user_name.trim()).password(body.password);
    if let Some(email) = body.email {
        new = new.email(email);
    }
    let user = state
        .identity
        .register(new)
        .await
        .map_err(|e| identity_error("signing up", e))?;
    Ok((StatusCode::CREATED, Json(view(&user, []))).into_response())
}

/// `POST /login`: checks the password (counting failures toward a lockout)
/// and opens a session: `401` for a wrong name or password alike, `423`
/// while locked out.
pub async fn login(
    mut auth: Auth,
    State(state): State<AppState>,
    body: Result<Json<Login>, JsonRejection>,
) -> Result<Json<UserView>, ApiError> {
    let Json(Login { user_name, password }) = body.map_err(bad_body)?;
    let user = match state
        .identity
        .sign_in(&Credentials::new(user_name.clone(), password))
        .await
        .map_err(|e| identity_error("signing in", e))?
    {
        SignIn::Succeeded(user) => user,
        SignIn::LockedOut { until } => return Err(locked_out(until)),
        SignIn::TwoFactorRequired(_) => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "two_factor_required",
                "this account has two-factor sign-in, which this example service does not offer",
            ))
        }
        _ => return Err(failed_login(&state, &user_name).await),
    };
    auth.login(&user)
        .await
        .map_err(|e| session_error("opening the session", e))?;
    let roles = state
        .identity
        .roles_of(user.id())
        .await
        .map_err(|e| identity_error("reading your roles", e))?;
    Ok(Json(view(&user, roles)))
}

/// The answer to a failed login: `401`, or `423` when this failure was the
/// one that locked the account (the store reports the lockout from the
/// next attempt on; the client learns it now).
async fn failed_login(state: &AppState, user_name: &str) -> ApiError {
    match state.identity.find_by_name(user_name).await {
        Ok(Some(user)) if user.is_locked_out(DateTime::now()) => match user.lockout_end() {
            Some(until) => locked_out(until),
            None => invalid_credentials(StatusCode::UNAUTHORIZED),
        },
        Ok(_) => invalid_credentials(StatusCode::UNAUTHORIZED),
        Err(e) => identity_error("signing in", e),
    }
}

/// `POST /logout`: deletes the session (from the session table, not only
/// from the client), whether or not one was open.
pub async fn logout(mut auth: Auth) -> Result<StatusCode, ApiError> {
    auth.logout()
        .await
        .map_err(|e| session_error("closing the session", e))?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /me`: the signed-in user and their roles.
pub async fn me(user: CurrentUser) -> Json<UserView> {
    Json(view(&user.user, user.roles))
}

/// `PUT /me/password`: changes the password given the current one. Every
/// other session of the user ends at once; this one stays signed in.
pub async fn change_password(
    mut auth: Auth,
    State(state): State<AppState>,
    user: CurrentUser,
    body: Result<Json<PasswordChange>, JsonRejection>,
) -> Result<StatusCode, ApiError> {
    let Json(body) = body.map_err(bad_body)?;
    check_password(&body.new_password)?;
    let updated = state
        .identity
        .change_password(user.user.id(), &body.current_password, &body.new_password)
        .await
        .map_err(|e| identity_error("changing the password", e))?;
    // The new security stamp ends every session made before it; renew this one.
    auth.login(&updated)
        .await
        .map_err(|e| session_error("renewing the session", e))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Refuses a user without the permission to manage roles.
async fn require_role_manager(auth: &Auth, user: &CurrentUser) -> Result<(), ApiError> {
    let allowed = auth
        .backend
        .has_perm(&user.user, MANAGE_ROLES.to_owned())
        .await
        .map_err(|e| identity_error("checking your permissions", e))?;
    if !allowed {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!("granting and taking roles needs the permission `{MANAGE_ROLES}` (the `{ADMIN}` role has it)"),
        ));
    }
    Ok(())
}

async fn named_user(state: &AppState, user_name: &str) -> Result<User, ApiError> {
    state
        .identity
        .find_by_name(user_name)
        .await
        .map_err(|e| identity_error("finding the user", e))?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no user is named `{user_name}`"),
            )
        })
}

/// `PUT /users/{user_name}/roles/{role}` adds the user to the role,
/// `DELETE` takes it away (admins only).
pub async fn set_role(
    method: Method,
    auth: Auth,
    State(state): State<AppState>,
    admin: CurrentUser,
    Path((user_name, role)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    require_role_manager(&auth, &admin).await?;
    let user = named_user(&state, &user_name).await?;
    let done = if method == Method::DELETE {
        state.identity.remove_from_role(user.id(), &role).await
    } else {
        state.identity.add_to_role(user.id(), &role).await
    };
    done.map_err(|e| identity_error("changing the user's roles", e))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Any other path.
pub async fn no_route() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_route",
        "no such route: see the README's example service section for the routes",
    )
}

/// Creates the roles the service uses and, given a password, the admin
/// account; what exists already is left as it is.
pub async fn bootstrap(identity: &Identity, admin: &str, password: Option<&str>) -> Result<(), IdentityError> {
    for role in [ADMIN, PUBLISHER] {
        match identity.create_role(role).await {
            Ok(_) | Err(IdentityError::DuplicateRole) => {}
            Err(e) => return Err(e),
        }
    }
    identity.add_role_claim(ADMIN, &Claim::permission(MANAGE_ROLES)).await?;
    let Some(password) = password else { return Ok(()) };
    let user = match identity.register(NewUser::new(admin).password(password)).await {
        Ok(user) => user,
        Err(IdentityError::DuplicateUserName) => identity.find_by_name(admin).await?.ok_or(IdentityError::Contended)?,
        Err(e) => return Err(e),
    };
    identity.add_to_role(user.id(), ADMIN).await
}

/// A start-up failure of the identity stores, as the storage error it is.
pub fn startup_error(error: IdentityError) -> unified_tables::Error {
    match error {
        IdentityError::Storage(e) => e,
        other => unified_tables::Error::config(format!("setting up the accounts: {other}")),
    }
}
