//! `unified-tables`: look at, check, back up and move tables written by
//! unified-tables, without the program's types. A thin layer over
//! [`unified_tables::admin`].
//!
//! Exit codes: 0 success (fsck: clean), 1 fsck or get found damage, 2 error,
//! 130 stopped by Ctrl-C (continue with `--resume`). Every argument's
//! help is checked against `cli/tests/help/` (see `cli/tests/help.rs`).

mod commands;
mod connection;
mod progress;
mod show;
mod work_dir;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgGroup, Parser, Subcommand, ValueEnum};
use tracing_subscriber::Layer as _;

/// The connection used when neither an option nor the environment gives one.
const DEVELOPMENT: &str = "UseDevelopmentStorage=true";

/// After the command's own help: where the connection comes from, exit codes, examples.
const AFTER_HELP: &str = "\
The connection string is read from --connection, else from --connection-file, else
from $UNIFIED_TABLES_CONNECTION, else it is UseDevelopmentStorage=true (the local
emulator). Keys and SAS tokens in it never appear in output or errors; given with
--connection they show in `ps` and the shell's history, and a warning says so.

Exit codes: 0 success (fsck: clean), 1 fsck or get found damage, 2 error,
130 stopped by Ctrl-C (continue with --resume).

Examples:
  unified-tables --connection-file ~/.config/orders.conn fsck Orders
  UNIFIED_TABLES_CONNECTION=\"$(cat orders.conn)\" unified-tables stats Orders
  unified-tables get Orders eu 42";

#[derive(Parser, Debug)]
#[command(
    name = "unified-tables",
    version,
    about = "Look at, check, back up and move tables written by unified-tables",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// Connection string of the storage account (prefer --connection-file or
    /// $UNIFIED_TABLES_CONNECTION: a key given here shows in `ps`).
    #[arg(
        long,
        global = true,
        value_name = "STRING",
        conflicts_with = "connection_file",
        display_order = 100
    )]
    connection: Option<String>,
    /// A file holding the connection string.
    #[arg(long, global = true, value_name = "PATH", display_order = 101)]
    connection_file: Option<PathBuf>,
    /// The blob container of large values and files.
    #[arg(long, global = true, value_name = "NAME", default_value = unified_tables::layout::DEFAULT_CONTAINER, display_order = 102)]
    container: String,
    /// No progress output.
    #[arg(long, short, global = true, display_order = 103)]
    quiet: bool,
    /// Prints each request the command makes to stderr as it ends: method, URL (without a SAS's
    /// parameters), status, retries and time. Never a key, signature or token.
    #[arg(long, global = true, display_order = 104)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

/// What to do with an entity the target table already holds.
#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum Mode {
    /// Stop with an error (the entities written before it stay written).
    Insert,
    /// Keep the stored one.
    Skip,
    /// Replace it.
    Replace,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// One logical entity: large values reassembled and checked, JSON and gzip cells decoded.
    #[command(after_help = "\
Examples:
  unified-tables get Orders eu 42           the entity, as aligned text
  unified-tables get Orders eu 42 --json    as one JSON object
  unified-tables get Orders eu 42 --raw     its stored rows and cells")]
    Get {
        /// The table.
        table: String,
        /// The entity's PartitionKey.
        partition_key: String,
        /// The entity's RowKey.
        row_key: String,
        /// Print the stored rows and cells instead (JSON).
        #[arg(long)]
        raw: bool,
        /// Print JSON instead of aligned text.
        #[arg(long)]
        json: bool,
    },
    /// Entities page by page: a table on a terminal, JSON Lines otherwise; prints the cursor to resume.
    #[command(after_help = "\
Examples:
  unified-tables query Orders --partition eu --top 20
  unified-tables query Orders --partition eu --prefix 2024- --select Total,Status
  unified-tables query Orders --filter \"Total gt 100\" --json
  unified-tables query Orders --after <CURSOR>     the next page")]
    Query {
        /// The table.
        table: String,
        /// Only this partition (PartitionKey).
        #[arg(long, value_name = "PARTITION_KEY")]
        partition: Option<String>,
        /// Only RowKeys that start with this.
        #[arg(long, requires = "partition")]
        prefix: Option<String>,
        /// An OData $filter, sent as it is.
        #[arg(long)]
        filter: Option<String>,
        /// Columns to read, comma-separated.
        #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
        select: Option<Vec<String>>,
        /// Rows per page (at most 1000).
        #[arg(long, default_value_t = 100, value_name = "N")]
        top: u32,
        /// Continue after this cursor, printed by the previous page.
        #[arg(long, value_name = "CURSOR")]
        after: Option<String>,
        /// JSON Lines output, also on a terminal.
        #[arg(long)]
        json: bool,
    },
    /// Partitions, rows, entities, large values by tier and bytes, blobs and their bytes.
    #[command(after_help = "\
Examples:
  unified-tables stats Orders
  unified-tables stats Orders --partition eu --json")]
    Stats {
        /// The table.
        table: String,
        /// Only this partition (PartitionKey).
        #[arg(long, value_name = "PARTITION_KEY")]
        partition: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Checks every large value, continuation row and blob. Exit 0 clean, 1 found something, 2 error.
    #[command(after_help = "\
Examples:
  unified-tables fsck Orders
  unified-tables fsck Orders --partition eu --json
  unified-tables fsck Orders --repair --grace 1h")]
    Fsck {
        /// The table.
        table: String,
        /// Only this partition (PartitionKey).
        #[arg(long, value_name = "PARTITION_KEY")]
        partition: Option<String>,
        /// Delete leftover continuation rows (on their ETag) and orphan blobs older than --grace.
        #[arg(long)]
        repair: bool,
        /// With --repair: how old an orphan blob must be to be deleted (30s, 15m, 1h, 2d).
        #[arg(long, value_parser = commands::duration, default_value = "5m", value_name = "DURATION")]
        grace: Duration,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Deletes orphan blobs (blobs no row references) older than --older-than.
    #[command(after_help = "\
Examples:
  unified-tables sweep Orders --dry-run
  unified-tables sweep Orders --older-than 2d")]
    Sweep {
        /// The table.
        table: String,
        /// Only this partition (PartitionKey).
        #[arg(long, value_name = "PARTITION_KEY")]
        partition: Option<String>,
        /// Only orphan blobs last modified longer ago than this (30s, 15m, 1h, 2d).
        #[arg(long, value_parser = commands::duration, default_value = "1h", value_name = "DURATION")]
        older_than: Duration,
        /// List what would be deleted; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// JSON Lines of logical entities, blob files named by SHA-256, and a manifest.
    #[command(after_help = "\
Examples:
  unified-tables export Orders --out backup/orders
  unified-tables export Orders --out backup/orders --resume     after Ctrl-C
  unified-tables export Orders --out backup/eu --partition eu")]
    Export {
        /// The table.
        table: String,
        /// The directory to write into (created if missing; it must not hold another export).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Only this partition (PartitionKey).
        #[arg(long, value_name = "PARTITION_KEY")]
        partition: Option<String>,
        /// Continue an export that was stopped.
        #[arg(long)]
        resume: bool,
        /// Entities per data file (a resumed export writes at most one again).
        #[arg(long, default_value_t = 10_000, value_name = "N")]
        entities_per_file: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Writes an export into a table, after checking every hash.
    #[command(after_help = "\
Examples:
  unified-tables import OrdersRestored backup/orders
  unified-tables import Orders backup/orders --mode skip
  unified-tables import OrdersRestored backup/orders --resume     after Ctrl-C")]
    Import {
        /// The table to write into (created if missing).
        table: String,
        /// The export's directory.
        dir: PathBuf,
        /// The form `import DIR --table TABLE` of earlier versions, refused with the new form.
        #[arg(long = "table", hide = true, value_name = "TABLE", value_parser = commands::legacy_table)]
        legacy_table: Option<String>,
        /// What to do with an entity the table already holds.
        #[arg(long, value_enum, default_value = "insert")]
        mode: Mode,
        /// Continue an import that was stopped (its position is kept in DIR).
        #[arg(long)]
        resume: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Export piped into import: the copy owns its continuation rows and blobs.
    #[command(
        group(ArgGroup::new("target").required(true).args(["to", "to_env", "to_file"])),
        after_help = "\
Examples:
  unified-tables copy Orders --to-env TARGET_CONNECTION
  unified-tables copy Orders --to-file target.conn --to-table OrdersCopy
  unified-tables copy Orders --to-file target.conn --resume --work-dir <DIR>     the folder a stopped copy printed"
    )]
    Copy {
        /// The table to copy.
        table: String,
        /// Connection string of the target account (prefer --to-env or --to-file: a key given here shows in `ps`).
        #[arg(long, value_name = "STRING")]
        to: Option<String>,
        /// The environment variable holding the target's connection string.
        #[arg(long, value_name = "VAR")]
        to_env: Option<String>,
        /// A file holding the target's connection string.
        #[arg(long, value_name = "PATH")]
        to_file: Option<PathBuf>,
        /// Target table (default: TABLE).
        #[arg(long, value_name = "TABLE")]
        to_table: Option<String>,
        /// Where the export is kept while it is imported, removed when the copy succeeds: a new or empty directory only you can reach (default: a new private temporary one).
        #[arg(long, value_name = "DIR")]
        work_dir: Option<PathBuf>,
        /// What to do with an entity the target table already holds.
        #[arg(long, value_enum, default_value = "insert")]
        mode: Mode,
        /// Continue a copy that was stopped (with the --work-dir it printed).
        #[arg(long, requires = "work_dir")]
        resume: bool,
        /// Print JSON.
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
