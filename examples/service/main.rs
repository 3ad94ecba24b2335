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
//!
//! Traces go to stdout: every operation's span as it closes, with its
//! OpenTelemetry attributes and time (`SERVICE_TRACE=debug` adds each
//! request and attempt, and what the store decided; see the guide's
//! Telemetry chapter). It prints them with `tracing-subscriber`'s `fmt`
//! layer, already in the workspace; an OTLP export puts
//! `tracing-opentelemetry`'s layer in the same subscriber instead, at the
//! cost of the OpenTelemetry SDK's crates.

use std::time::Duration;

use unified_tables_examples::tables_from_env;

// Some items of the service are used by its end-to-end tests only.
#[path = "lib.rs"]
#[allow(dead_code)]
mod service;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let level = match std::env::var("SERVICE_TRACE").as_deref() {
        Ok("debug") => tracing_subscriber::filter::LevelFilter::DEBUG,
        Ok("trace") => tracing_subscriber::filter::LevelFilter::TRACE,
        _ => tracing_subscriber::filter::LevelFilter::INFO,
    };
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .init();
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
