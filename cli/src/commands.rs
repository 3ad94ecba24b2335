//! The subcommands, each a call into `unified_tables::admin`.

use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use serde_json::json;
use unified_tables::admin::{
    self, Admin, AdminQuery, ExportOptions, FsckOptions, ImportMode, ImportOptions, Read, Stop,
};
use unified_tables::backend::azure::AzureConnection;
use unified_tables::{BlobOptions, Tables};

use crate::progress::{describe, Mode as Shown, Progress};
use crate::show::{entity_json, entity_text, raw_json, table};
use crate::work_dir::WorkDir;
use crate::{connection, Cli, Command, Mode};

/// Parses `30s`, `15m`, `1h`, `2d` (or plain seconds).
pub fn duration(text: &str) -> std::result::Result<Duration, String> {
    let text = text.trim();
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 30s, 15m, 1h or 2d"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86_400,
        _ => return Err(format!("`{text}`: the unit must be s, m, h or d")),
    };
    Ok(Duration::from_secs(secs))
}

/// Refuses `import DIR --table TABLE`, the form of earlier versions, naming
/// the form that replaced it.
pub fn legacy_table(table: &str) -> std::result::Result<String, String> {
    Err(format!(
        "import takes the table first now, as every command does: unified-tables import {table} DIR"
    ))
}

/// Tables over a connection string; its secrets never reach an error.
fn connect(connection: &str, container: &str, grace: Option<Duration>) -> Result<Tables> {
    let parsed = AzureConnection::parse(connection);
    #[cfg(feature = "entra-id")]
    let parsed = parsed.or_else(|_| AzureConnection::with_default_credential(connection));
    let connection = parsed.map_err(|e| anyhow::anyhow!("the connection string is not usable: {e}"))?;
    let mut options = BlobOptions::new().with_container(container)?;
    if let Some(grace) = grace {
        options = options.with_cleanup_grace(grace);
    }
    let blobs = match connection.blob_endpoint().is_empty() {
        true => None,
        false => Some(connection.blob_backend()?),
    };
    let tables = Tables::connect_with(connection)?;
    Ok(match blobs {
        Some(backend) => tables.with_blobs(backend, options),
        None => tables,
    })
}

/// Raises `stop` on the first Ctrl-C; a second one ends the process.
fn stop_on_ctrl_c(quiet: bool) -> Stop {
    let stop = Stop::new();
    let raised = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            if !quiet {
                eprintln!(
                    "stopping after the current entity; run again with --resume to continue (Ctrl-C again to quit now)"
                );
            }
            raised.raise();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        }
    });
    stop
}

fn print_json(value: &serde_json::Value) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{value}")?;
    Ok(())
}

fn import_mode(mode: Mode) -> ImportMode {
    match mode {
        Mode::Insert => ImportMode::Insert,
        Mode::Skip => ImportMode::Skip,
        Mode::Replace => ImportMode::Replace,
    }
}

/// Runs one command; the exit code.
pub async fn run(cli: Cli) -> Result<u8> {
    let connection = connection::source(cli.connection.as_deref(), cli.connection_file.as_deref())?;
    let grace = match &cli.command {
        Command::Fsck { grace, .. } => Some(*grace),
        _ => None,
    };
    let tables = connect(&connection, &cli.container, grace)?;
    let shown = Shown::detect(cli.quiet);
    match cli.command {
        Command::Get {
            table,
            partition_key,
            row_key,
            raw,
            json,
        } => {
            let admin = Admin::new(&tables, table)?;
            let (entity, damage) = match admin.get(&partition_key, &row_key).await? {
                None => bail!("no entity with PartitionKey `{partition_key}` and RowKey `{row_key}`"),
                Some(Read::Whole(e)) => (e, Vec::new()),
                Some(Read::Damaged(e, d)) => (e, d),
            };
            match (raw, json) {
                (true, _) => print_json(&raw_json(&entity))?,
                (false, true) => print_json(&entity_json(&entity))?,
                (false, false) => print!("{}", entity_text(&entity)),
            }
            for d in &damage {
                eprintln!("damaged: {}", serde_json::to_string(d)?);
            }
            Ok(if damage.is_empty() { 0 } else { 1 })
        }
        Command::Query {
            table: name,
            partition,
            prefix,
            filter,
            select,
            top,
            after,
            json,
        } => {
            let admin = Admin::new(&tables, name)?;
            let query = AdminQuery {
                partition,
                prefix,
                filter,
                select,
                top: Some(top),
                after: after.map(|c| c.parse()).transpose()?,
            };
            let page = admin.query(&query).await?;
            let rows: Vec<serde_json::Value> = page.entities.iter().map(entity_json).collect();
            if !json && std::io::stdout().is_terminal() {
                print!("{}", table(&rows, 6));
                if let Some(c) = &page.cursor {
                    println!("more: --after {c}");
                }
            } else {
                for row in &rows {
                    print_json(row)?;
                }
                if let Some(c) = &page.cursor {
                    print_json(&json!({ "cursor": c.to_string() }))?;
                }
            }
            for (pk, rk) in &page.damaged {
                eprintln!("damaged: {pk:?} {rk:?} (run fsck)");
            }
            Ok(0)
        }
        Command::Stats { table, partition, json } => {
            let admin = Admin::new(&tables, table)?;
            let progress = Progress::new(shown, "stats");
            let stats = admin.stats(partition.as_deref(), Some(progress.observer())).await?;
            progress.finish();
            if json {
                print_json(&serde_json::to_value(&stats)?)?;
            } else {
                println!("partitions         {}", stats.partitions);
                println!("entities           {}", stats.entities);
                println!(
                    "rows               {} ({} continuation rows)",
                    stats.rows, stats.continuation_rows
                );
                println!(
                    "index rows         {} ({} intents not applied)",
                    stats.index_rows, stats.index_intents
                );
                println!("row bytes          {}", indicatif::HumanBytes(stats.row_bytes));
                for (tier, t) in &stats.large {
                    println!(
                        "large ({tier:?})    {} values, {}",
                        t.values,
                        indicatif::HumanBytes(t.bytes)
                    );
                }
                println!(
                    "blobs              {}, {}",
                    stats.blobs,
                    indicatif::HumanBytes(stats.blob_bytes)
                );
            }
            Ok(0)
        }
        Command::Fsck {
            table,
            partition,
            repair,
            json,
            ..
        } => {
            let admin = Admin::new(&tables, table)?;
            let progress = Progress::new(if json { Shown::Quiet } else { shown }, "fsck");
            let options = FsckOptions {
                partition,
                repair,
                observer: Some(progress.observer()),
                stop: stop_on_ctrl_c(cli.quiet),
            };
            let report = admin.fsck(options).await?;
            progress.finish();
            if json {
                print_json(&serde_json::to_value(&report)?)?;
            } else {
                for f in &report.findings {
                    println!("{}", describe(f));
                }
                println!(
                    "{} entities, {} rows checked: {} findings, {} repaired{}",
                    report.entities,
                    report.rows,
                    report.findings.len(),
                    report.repaired,
                    if report.interrupted { " (stopped early)" } else { "" }
                );
            }
            Ok(match (report.interrupted, report.is_clean()) {
                (true, _) => 130,
                (false, true) => 0,
                (false, false) => 1,
            })
        }
        Command::Sweep {
            table,
            partition,
            older_than,
            dry_run,
            json,
        } => {
            let admin = Admin::new(&tables, table)?;
            if dry_run {
                let orphans = admin.orphan_blobs(partition.as_deref(), older_than).await?;
                if json {
                    let list: Vec<_> = orphans.iter().map(|(p, b)| json!({"path": p, "bytes": b})).collect();
                    print_json(&json!({ "dry_run": true, "orphans": list }))?;
                } else {
                    for (path, bytes) in &orphans {
                        println!("would delete {path} ({})", indicatif::HumanBytes(*bytes));
                    }
                    println!("{} orphan blobs older than {older_than:?}", orphans.len());
                }
                return Ok(0);
            }
            let report = admin.sweep(partition.as_deref(), older_than).await?;
            if json {
                print_json(&json!({ "deleted": report.deleted, "examined": report.examined }))?;
            } else {
                println!(
                    "{} orphan blobs deleted, {} blobs examined",
                    report.deleted, report.examined
                );
            }
            Ok(0)
        }
        Command::Export {
            table,
            out,
            partition,
            resume,
            entities_per_file,
            json,
        } => {
            let admin = Admin::new(&tables, table)?;
            let progress = Progress::new(shown, "export");
            let options = ExportOptions {
                partition,
                resume,
                entities_per_file,
                observer: Some(progress.observer()),
                stop: stop_on_ctrl_c(cli.quiet),
            };
            let report = admin.export(&out, options).await?;
            progress.finish();
            let m = &report.manifest;
            if json {
                print_json(&json!({ "interrupted": report.interrupted, "manifest": m }))?;
            } else {
                println!(
                    "{} entities ({} rows), {} in {} data files, {} blobs ({}) in {}{}",
                    m.entities,
                    m.rows,
                    indicatif::HumanBytes(m.data_bytes),
                    m.files.len(),
                    m.blobs,
                    indicatif::HumanBytes(m.blob_bytes),
                    out.display(),
                    if report.interrupted {
                        " - stopped; continue with --resume"
                    } else {
                        ""
                    }
                );
            }
            Ok(if report.interrupted { 130 } else { 0 })
        }
        Command::Import {
            table,
            dir,
            legacy_table,
            mode,
            resume,
            json,
        } => {
            debug_assert!(legacy_table.is_none(), "refused as it is parsed");
            let admin = Admin::new(&tables, table)?;
            let progress = Progress::new(shown, "import");
            let options = ImportOptions {
                mode: import_mode(mode),
                resume,
                observer: Some(progress.observer()),
                stop: stop_on_ctrl_c(cli.quiet),
                ..ImportOptions::default()
            };
            let report = admin.import(&dir, options).await?;
            progress.finish();
            finish_import(&report, json)
        }
        Command::Copy {
            table,
            to,
            to_env,
            to_file,
            to_table,
            work_dir,
            mode,
            resume,
            json,
        } => {
            let to = connection::target(to.as_deref(), to_env.as_deref(), to_file.as_deref())?;
            let target_tables = connect(&to, &cli.container, None).context("the target")?;
            let target_name = to_table.unwrap_or_else(|| table.clone());
            let source = Admin::new(&tables, table)?;
            let target = Admin::new(&target_tables, target_name)?;
            let work = match work_dir {
                Some(dir) => WorkDir::given(&dir)?,
                None => WorkDir::fresh(source.table(), target.table())?,
            };
            let work_dir = &work.path;
            if !resume && work_dir.join("manifest.json").exists() {
                bail!(
                    "{} holds a copy that did not finish: pass --resume to continue it, or remove the folder",
                    work_dir.display()
                );
            }
            let progress = Progress::new(shown, "copy");
            let stop = stop_on_ctrl_c(cli.quiet);
            let export = ExportOptions {
                resume,
                observer: Some(progress.observer()),
                stop: stop.clone(),
                ..ExportOptions::default()
            };
            let import = ImportOptions {
                mode: import_mode(mode),
                resume,
                observer: Some(progress.observer()),
                stop,
                ..ImportOptions::default()
            };
            let report = admin::copy(&source, &target, work_dir, export, import).await;
            progress.finish();
            let code = report
                .map_err(anyhow::Error::from)
                .and_then(|report| finish_import(&report, json));
            match code {
                Ok(0) => work.remove(),
                _ if work_dir.join("manifest.json").exists() => eprintln!(
                    "the copy's work directory is kept: continue with --resume --work-dir {}",
                    work_dir.display()
                ),
                _ if work.made => work.remove(),
                _ => {}
            }
            code
        }
    }
}

fn finish_import(report: &admin::ImportReport, json: bool) -> Result<u8> {
    if json {
        print_json(&serde_json::to_value(report)?)?;
    } else {
        println!(
            "{} entities written, {} skipped, {} rows, {} blobs{}",
            report.written,
            report.skipped,
            report.rows,
            report.blobs,
            if report.interrupted {
                " - stopped; continue with --resume"
            } else {
                ""
            }
        );
    }
    Ok(if report.interrupted { 130 } else { 0 })
}

#[cfg(test)]
mod tests {
    use unified_tables::backend::Backend as _;
    use unified_tables::service::ServiceProfile;

    /// A key of 64 bytes (0, 1, ..., 63) in base64: no account's.
    const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw==";

    /// A Cosmos DB for Table connection string (its endpoint's host) gives
    /// a handle on that service's profile, and a storage account's the
    /// Table Storage profile.
    #[tokio::test]
    async fn a_cosmos_connection_string_gives_a_cosmos_handle() {
        let cosmos = format!(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={KEY};TableEndpoint=https://acct.table.cosmos.azure.com:443/;"
        );
        let tables = super::connect(&cosmos, "values", None).expect("the Cosmos connection is usable");
        assert_eq!(tables.backend().profile(), ServiceProfile::CosmosTable);

        let storage =
            format!("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={KEY};EndpointSuffix=core.windows.net");
        let tables = super::connect(&storage, "values", None).expect("the storage connection is usable");
        assert_eq!(tables.backend().profile(), ServiceProfile::TableStorage);
    }
}
