//! An axum service on unified-tables: accounts and sessions in tables
//! (axum-login over the identity stores, tower-sessions over the table
//! session store) and a notes resource with `ETag` / `If-Match`, cursor
//! paging and a role-gated field.
//!
//! ```text
//! cargo run -p unified-tables-examples --example service                                   # in memory, on 127.0.0.1:3000
//! cargo run -p unified-tables-examples --example service -- "UseDevelopmentStorage=true"   # Azurite
//! ```
//!
//! `SERVICE_ADDR` chooses another address, `SERVICE_ADMIN_PASSWORD` creates
//! the `admin` account. The routes are listed in `lib.rs` and the README.

use std::time::Duration;

use unified_tables_examples::tables_from_env;

// Some items of the service are used by its end-to-end tests only.
#[path = "lib.rs"]
#[allow(dead_code)]
mod service;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (tables, backend) = tables_from_env()?;
    let address = std::env::var("SERVICE_ADDR").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    let mut config = service::Config::new(tables)
        // The example serves plain HTTP; behind TLS keep the default (`Secure` cookies).
        .with_secure_cookies(false);
    if let Ok(password) = std::env::var("SERVICE_ADMIN_PASSWORD") {
        config = config.with_admin_password(&password);
    }
    // Expired sessions are read as absent; this removes their rows.
    let sessions = config.session_store()?;
    let app = service::app(config).await?;
    tokio::spawn(tower_sessions::ExpiredDeletion::continuously_delete_expired(
        sessions,
        Duration::from_secs(60),
    ));
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!(
        "the example service listens on http://{} over {backend}",
        listener.local_addr()?
    );
    service::serve(listener, app).await?;
    Ok(())
}
