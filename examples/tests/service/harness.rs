//! Starting the service on loopback and talking to it.

use std::sync::Arc;

use reqwest::cookie::{CookieStore, Jar};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{json, Value};
use unified_tables::backend::faulty::FaultyBackend;
use unified_tables::backend::memory::{MemoryBackend, MemoryBlobBackend};
use unified_tables::backend::Backend;
use unified_tables::Tables;
use unified_tables_tests::gate::GateBackend;

use crate::service::{self, Config};

/// The admin's password in every scenario.
pub const ADMIN_PASSWORD: &str = "admin password for the tests";

type Faulty = FaultyBackend<GateBackend<Arc<dyn Backend>>>;

/// One running service.
pub struct Server {
    pub base: String,
    pub config: Config,
    /// The service's table backend: arm it to hold a request at a racy point.
    pub gate: GateBackend<Arc<dyn Backend>>,
    /// The same backend, failing the requests a scenario plans.
    pub faults: Faulty,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// The service over a fresh in-memory backend.
    pub async fn memory() -> Server {
        let gate = GateBackend::new(Arc::new(MemoryBackend::new()) as Arc<dyn Backend>);
        let faults = FaultyBackend::new(gate.clone());
        let tables = Tables::with_backend(faults.clone()).with_blobs(MemoryBlobBackend::new(), Default::default());
        Server::start(tables, gate, faults, "").await
    }

    /// The service over Azure / Azurite in tables of its own, or `None` when
    /// no connection is configured and none is required.
    pub async fn azure(hint: &str) -> Option<Server> {
        let env = unified_tables_tests::azure_env(hint).await?;
        // A prefix of this scenario's own for the service's tables, short
        // enough for the identity stores' longest table name.
        let gate = GateBackend::new(env.tables.backend().clone());
        let faults = FaultyBackend::new(gate.clone());
        let mut tables = Tables::with_backend(faults.clone());
        if let Some(blobs) = env.blobs.clone() {
            tables = tables.with_blobs(blobs, unified_tables_tests::blob_options());
        }
        let prefix = unified_tables_tests::unique_table("");
        Some(Server::start(tables, gate, faults, &prefix).await)
    }

    async fn start(tables: Tables, gate: GateBackend<Arc<dyn Backend>>, faults: Faulty, prefix: &str) -> Server {
        let config = Config::new(tables)
            .with_table_prefix(prefix)
            .with_admin_password(ADMIN_PASSWORD)
            .with_secure_cookies(false);
        Server::launch(config, gate, faults).await
    }

    /// Another instance of the service over the same tables (another host
    /// behind the same load balancer), with its configuration changed by `change`.
    pub async fn another_instance(&self, change: impl FnOnce(Config) -> Config) -> Server {
        Server::launch(change(self.config.clone()), self.gate.clone(), self.faults.clone()).await
    }

    async fn launch(config: Config, gate: GateBackend<Arc<dyn Backend>>, faults: Faulty) -> Server {
        let app = service::app(config.clone()).await.expect("the service starts");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let base = format!("http://{}", listener.local_addr().expect("a bound address"));
        let task = tokio::spawn(async move {
            service::serve(listener, app).await.expect("the service runs");
        });
        Server {
            base,
            config,
            gate,
            faults,
            task,
        }
    }

    /// A client keeping its own cookies.
    pub fn client(&self) -> Client {
        let jar = Arc::new(Jar::default());
        let http = reqwest::Client::builder()
            .cookie_provider(jar.clone())
            .build()
            .expect("a client");
        Client {
            base: self.base.clone(),
            http,
            jar,
        }
    }

    /// A new user, signed up and signed in, with a client of their own.
    pub async fn user(&self, name: &str) -> User {
        let client = self.client();
        let user = User {
            name: unique(name),
            password: format!("{name}'s long password"),
            client,
        };
        let (status, body) = user
            .client
            .send(Method::POST, "/signup", Some(user.credentials()))
            .await;
        assert_eq!(status, StatusCode::CREATED, "sign-up of {}: {body}", user.name);
        user.login().await;
        user
    }

    /// The admin, signed in.
    pub async fn admin(&self) -> User {
        let user = User {
            name: self.config.admin_name().to_owned(),
            password: ADMIN_PASSWORD.to_owned(),
            client: self.client(),
        };
        user.login().await;
        user
    }
}

/// A user name no other scenario uses (the tables of a run may be shared).
pub fn unique(name: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let run = std::process::id();
    format!("{name}-{run}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// A client of the service with its cookie jar.
pub struct Client {
    pub base: String,
    pub http: reqwest::Client,
    pub jar: Arc<Jar>,
}

impl Client {
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http.request(method, format!("{}{path}", self.base))
    }

    /// Sends a request with an optional JSON body; the status and the JSON answer (`null` when empty).
    pub async fn send(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(&body);
        }
        answer(request).await.0
    }

    /// The `Cookie` header this client sends to the service.
    pub fn cookie(&self) -> String {
        let url = self.base.parse().expect("the base url");
        self.jar
            .cookies(&url)
            .map(|v| v.to_str().expect("ASCII cookies").to_owned())
            .unwrap_or_default()
    }
}

/// Sends `request`: `((status, JSON body), ETag header)`.
pub async fn answer(request: RequestBuilder) -> ((StatusCode, Value), Option<String>) {
    let response = request.send().await.expect("the service answers");
    let status = response.status();
    let etag = response
        .headers()
        .get(reqwest::header::ETAG)
        .map(|v| v.to_str().expect("an ASCII ETag").to_owned());
    let text = response.text().await.expect("a body");
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("a JSON body ({e}): {text}"))
    };
    if !status.is_success() && status != StatusCode::NOT_MODIFIED {
        assert_error_body(status, &body);
    }
    ((status, body), etag)
}

/// Every refusal is a JSON object with a code and a sentence.
fn assert_error_body(status: StatusCode, body: &Value) {
    let code = body["error"].as_str();
    let message = body["message"].as_str();
    assert!(
        code.is_some_and(|c| !c.is_empty()) && message.is_some_and(|m| m.len() > 10),
        "a {status} answer says what went wrong in JSON: {body}"
    );
}

/// A signed-up user and their client.
pub struct User {
    pub name: String,
    pub password: String,
    pub client: Client,
}

impl User {
    pub fn credentials(&self) -> Value {
        json!({ "user_name": self.name, "password": self.password })
    }

    pub async fn login(&self) {
        let (status, body) = self.client.send(Method::POST, "/login", Some(self.credentials())).await;
        assert_eq!(status, StatusCode::OK, "login of {}: {body}", self.name);
        assert_eq!(body["user_name"], self.name.as_str(), "{body}");
    }

    pub async fn send(&self, method: Method, path: &str, body: Option<Value>) -> (StatusCode, Value) {
        self.client.send(method, path, body).await
    }

    /// Creates a note: its ETag.
    pub async fn create_note(&self, id: &str, title: &str) -> String {
        let ((status, body), etag) = answer(
            self.client
                .request(Method::POST, "/notes")
                .json(&json!({ "id": id, "title": title, "body": "text" })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        etag.expect("an ETag on a created note")
    }
}

impl User {
    /// The titles of the user's notes, as `GET /notes` lists them.
    pub async fn titles(&self) -> Vec<String> {
        let (status, body) = self.send(Method::GET, "/notes", None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let items = body["items"].as_array().expect("a listing");
        items
            .iter()
            .map(|n| n["title"].as_str().expect("a title").to_owned())
            .collect()
    }
}

/// The error code of a refusal.
pub fn code(body: &Value) -> &str {
    body["error"].as_str().unwrap_or("")
}
