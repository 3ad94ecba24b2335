//! The service's configuration, shared state and router.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::Router;
use axum_login::AuthManagerLayerBuilder;
use tower_sessions::cookie::{time, SameSite};
use tower_sessions::{Expiry, SessionManagerLayer};
use unified_tables::web::identity::{Identity, IdentityOptions, Lockout};
use unified_tables::web::sessions::TableSessionStore;
use unified_tables::{Store, Tables};

use super::error::ApiError;
use super::notes::Note;
use super::{accounts, notes};

/// How the service is set up. Built with [`Config::new`] and the `with_` methods.
#[derive(Clone)]
pub struct Config {
    tables: Tables,
    table_prefix: String,
    admin_name: String,
    admin_password: Option<String>,
    secure_cookies: bool,
    lockout: Lockout,
    session_lifetime: time::Duration,
}

impl Config {
    /// The defaults over `tables`: tables named without a prefix (`Notes`,
    /// `Sessions`, `IdentityUsers`, …), no admin account, secure cookies,
    /// five failed logins lock an account for five minutes, a session
    /// expires an hour after it was last written (at login).
    pub fn new(tables: Tables) -> Config {
        Config {
            tables,
            table_prefix: String::new(),
            admin_name: "admin".to_owned(),
            admin_password: None,
            secure_cookies: true,
            lockout: Lockout::default(),
            session_lifetime: time::Duration::hours(1),
        }
    }

    /// A prefix for every table name (ASCII letters and digits, starting with a letter).
    pub fn with_table_prefix(mut self, prefix: &str) -> Config {
        self.table_prefix = prefix.to_owned();
        self
    }

    /// Creates the user `admin` with this password at start-up, when no
    /// such user exists. Admins grant and take roles.
    pub fn with_admin_password(mut self, password: &str) -> Config {
        self.admin_password = Some(password.to_owned());
        self
    }

    /// Whether the session cookie is `Secure` (sent over HTTPS only). Turn
    /// it off to run over plain HTTP on loopback.
    pub fn with_secure_cookies(mut self, secure: bool) -> Config {
        self.secure_cookies = secure;
        self
    }

    /// The lockout policy.
    pub fn with_lockout(mut self, lockout: Lockout) -> Config {
        self.lockout = lockout;
        self
    }

    /// The admin's user name.
    pub fn admin_name(&self) -> &str {
        &self.admin_name
    }

    /// Failed logins in a row that lock an account.
    pub fn lockout_threshold(&self) -> u32 {
        self.lockout.max_failed_attempts()
    }

    /// The session store the service keeps its sessions in (for the host to
    /// sweep expired ones).
    pub fn session_store(&self) -> Result<TableSessionStore, unified_tables::Error> {
        TableSessionStore::new(&self.tables, self.table("Sessions"))
    }

    fn table(&self, name: &str) -> String {
        format!("{}{name}", self.table_prefix)
    }
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub notes: Store<Note>,
    pub identity: Identity,
}

/// The router of the whole service, with sessions in the table session
/// store and axum-login over the identity stores. Creates the roles and,
/// when configured, the admin account, so it fails fast when the storage
/// service cannot be reached.
pub async fn app(config: Config) -> Result<Router, unified_tables::Error> {
    let identity_options = IdentityOptions::new()
        .lockout(config.lockout)
        .table_prefix(config.table("Identity"))?;
    let identity = Identity::with_options(&config.tables, identity_options);
    accounts::bootstrap(&identity, &config.admin_name, config.admin_password.as_deref())
        .await
        .map_err(accounts::startup_error)?;
    let notes = config.tables.store_in::<Note>(config.table("Notes"));
    notes.ensure_created().await?;

    let session_layer = SessionManagerLayer::new(config.session_store()?)
        .with_secure(config.secure_cookies)
        .with_same_site(SameSite::Lax)
        .with_expiry(Expiry::OnInactivity(config.session_lifetime));
    let auth_layer = AuthManagerLayerBuilder::new(identity.clone(), session_layer).build();

    let state = AppState { notes, identity };
    Ok(Router::new()
        .route("/signup", post(accounts::sign_up))
        .route("/login", post(accounts::login))
        .route("/logout", post(accounts::logout))
        .route("/me", get(accounts::me))
        .route("/me/password", put(accounts::change_password))
        .route(
            "/users/{user_name}/roles/{role}",
            put(accounts::set_role).delete(accounts::set_role),
        )
        .route("/notes", post(notes::create).get(notes::list))
        .route(
            "/notes/{id}",
            get(notes::read).put(notes::replace).delete(notes::remove),
        )
        .fallback(accounts::no_route)
        .with_state(state)
        .layer(auth_layer)
        .layer(axum::middleware::map_response(bare_errors_as_json)))
}

/// The session and login layers answer a failure to load a session with a
/// bare `500`; give it a JSON body like every other refusal.
async fn bare_errors_as_json(response: Response) -> Response {
    let status = response.status();
    if status.is_server_error() && !response.headers().contains_key(header::CONTENT_TYPE) {
        return ApiError::new(
            status,
            "session_unavailable",
            "the session could not be read or written (the storage service may be unreachable); try again shortly",
        )
        .into_response();
    }
    response
}

/// Serves `app` on `listener` until the task is dropped or the listener fails.
pub async fn serve(listener: tokio::net::TcpListener, app: Router) -> std::io::Result<()> {
    axum::serve(listener, app).await
}
