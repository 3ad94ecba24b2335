//! `unified-tables`: look at, check, back up and move tables written by
//! unified-tables, without the program's types. A thin layer over
//! [`unified_tables::admin`].
//!
//! Exit codes: 0 success (fsck: clean), 1 fsck found something, 2 error,
//! 130 stopped by Ctrl-C (continue with `--resume`).

mod commands;
mod progress;
mod show;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tracing_subscriber::Layer as _;

/// The connection used when neither `--connection` nor the environment gives one.
const DEVELOPMENT: &str = "UseDevelopmentStorage=true";

#[derive(Parser, Debug)]
#[command(
    name = "unified-tables",
    version,
    about = "Look at, check, back up and move tables written by unified-tables"
)]
pub struct Cli {
    /// Storage connection string (default: $UNIFIED_TABLES_CONNECTION, else UseDevelopmentStorage=true).
    /// Keys and SAS tokens in it never appear in output or errors.
    #[arg(long, global = true, env = "UNIFIED_TABLES_CONNECTION", hide_env_values = true)]
    connection: Option<String>,
    /// The blob container of large values and files.
    #[arg(long, global = true, default_value = unified_tables::BlobOptions::DEFAULT_CONTAINER)]
    container: String,
    /// No progress output.
    #[arg(long, short, global = true)]
    quiet: bool,
    /// Prints each request the command makes to stderr as it ends: method, URL (without a SAS's
    /// parameters), status, retries and time. Never a key, signature or token.
    #[arg(long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

/// What `import` does with an entity that exists.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Mode {
    /// Stop with an error.
    Insert,
    /// Keep the stored one.
    Skip,
    /// Replace it.
    Replace,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// One logical entity: large values reassembled and checked, JSON and gzip cells decoded.
    Get {
        table: String,
        partition_key: String,
        row_key: String,
        /// The stored rows and cells instead.
        #[arg(long)]
        raw: bool,
        /// JSON output.
        #[arg(long)]
        json: bool,
    },
    /// Entities page by page: a table on a terminal, JSON Lines otherwise; prints the cursor to resume.
    Query {
        table: String,
        #[arg(long)]
        partition: Option<String>,
        /// RowKey prefix (needs --partition).
        #[arg(long)]
        prefix: Option<String>,
        /// OData $filter, sent as it is.
        #[arg(long)]
        filter: Option<String>,
        /// Columns to read, comma-separated.
        #[arg(long, value_delimiter = ',')]
        select: Option<Vec<String>>,
        /// Rows per page (at most 1000).
        #[arg(long, default_value_t = 100)]
        top: u32,
        /// The cursor a previous page printed.
        #[arg(long)]
        after: Option<String>,
        /// JSON Lines output, also on a terminal.
        #[arg(long)]
        json: bool,
    },
    /// Partitions, rows, entities, large values by tier and bytes, blobs and their bytes.
    Stats {
        table: String,
        #[arg(long)]
        partition: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Checks every large value, continuation row and blob. Exit 0 clean, 1 found something, 2 error.
    Fsck {
        table: String,
        #[arg(long)]
        partition: Option<String>,
        /// Delete leftover continuation rows (on their ETag) and orphan blobs older than the cleanup grace.
        #[arg(long)]
        repair: bool,
        /// Cleanup grace for --repair, e.g. 5m (default 5m).
        #[arg(long, value_parser = commands::duration)]
        grace: Option<std::time::Duration>,
        #[arg(long)]
        json: bool,
    },
    /// Deletes orphan blobs older than --older-than.
    Sweep {
        table: String,
        #[arg(long)]
        partition: Option<String>,
        /// e.g. 30s, 15m, 1h, 2d (default 1h).
        #[arg(long, value_parser = commands::duration, default_value = "1h")]
        older_than: std::time::Duration,
        /// List what would be deleted.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// JSON Lines of logical entities, blob files named by SHA-256, and a manifest.
    Export {
        table: String,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        partition: Option<String>,
        /// Continue an export that was stopped.
        #[arg(long)]
        resume: bool,
        /// Entities per data file.
        #[arg(long, default_value_t = 10_000)]
        entities_per_file: u64,
        #[arg(long)]
        json: bool,
    },
    /// Writes an export into a table, after checking every hash.
    Import {
        dir: PathBuf,
        #[arg(long)]
        table: String,
        #[arg(long, value_enum, default_value = "insert")]
        mode: Mode,
        /// Continue an import that was stopped.
        #[arg(long)]
        resume: bool,
        #[arg(long)]
        json: bool,
    },
    /// Export piped into import: the copy owns its continuation rows and blobs.
    Copy {
        table: String,
        /// Connection string of the target account.
        #[arg(long)]
        to: String,
        /// Target table (default: the same name).
        #[arg(long)]
        to_table: Option<String>,
        /// Where the export is kept while it is imported (default: a folder in the temp dir named after the tables).
        #[arg(long)]
        work_dir: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "insert")]
        mode: Mode,
        /// Continue a copy that was stopped.
        #[arg(long)]
        resume: bool,
        #[arg(long)]
        json: bool,
    },
}

/// With `--verbose`: the transport's request spans (target `unified_tables::http`, DEBUG),
/// each printed to stderr when it closes, with its fields and time.
fn show_requests() {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let requests = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false);
    let only_requests =
        Targets::new().with_target(unified_tables::backend::azure::transport::TARGET, tracing::Level::DEBUG);
    let _ = tracing_subscriber::registry()
        .with(requests.with_filter(only_requests))
        .try_init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.verbose {
        show_requests();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // Secrets never leave: every error is redacted as it is printed.
            let text = format!("{e:#}");
            eprintln!("error: {}", unified_tables::redact(&text));
            ExitCode::from(2)
        }
    }
}
