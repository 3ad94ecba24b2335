//! The `unified-tables` command as a process, against Azurite (or Azure):
//! exit codes, `--json` output, interrupted and resumed export and import,
//! copy between two tables.
//!
//! Runs when `UNIFIED_TABLES_TEST_CONNECTION` holds a connection string;
//! without one each test is skipped, unless `UNIFIED_TABLES_REQUIRE_AZURE=1`
//! (then it fails).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value as Json;
use unified_tables::backend::{UpdateMode, WriteOp};
use unified_tables::{Row, TableEntity, Tables, Value};

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct Doc {
    #[table(partition_key)]
    pk: String,
    #[table(row_key)]
    rk: String,
    title: String,
    count: i64,
    #[table(split = "gzip")]
    body: String,
}

/// The connection string, or `None` to skip (failing when Azure is required).
fn connection() -> Option<String> {
    match std::env::var("UNIFIED_TABLES_TEST_CONNECTION") {
        Ok(c) if !c.is_empty() => Some(c),
        _ if std::env::var("UNIFIED_TABLES_REQUIRE_AZURE").as_deref() == Ok("1")
            || std::env::var("CI").as_deref() == Ok("true") =>
        {
            panic!("UNIFIED_TABLES_TEST_CONNECTION is not set and Azure is required")
        }
        _ => {
            eprintln!("skipped: UNIFIED_TABLES_TEST_CONNECTION is not set");
            None
        }
    }
}

fn unique(hint: &str) -> String {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("cli{hint}{:x}{}", n & 0xffff_ffff, std::process::id())
}

fn scratch(hint: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(unique(hint));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn cli(connection: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_unified-tables"));
    c.env("UNIFIED_TABLES_CONNECTION", connection).env_remove("NO_COLOR");
    c
}

fn run(connection: &str, args: &[&str]) -> Output {
    cli(connection).args(args).output().expect("the command runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn tables(connection: &str) -> Tables {
    Tables::connect(connection).expect("a connection")
}

/// Printable characters gzip cannot pack much (so a value takes continuation rows).
fn noise(len: usize, seed: u64) -> String {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'!' + (state % 90) as u8)
        })
        .collect()
}

/// `n` documents in 3 partitions; every 100th has a body on continuation rows.
async fn seed(connection: &str, table: &str, n: usize) {
    let docs = tables(connection).store_in::<Doc>(table);
    for pk in ["a", "b", "c"] {
        let batch: Vec<Doc> = (0..n / 3)
            .map(|i| Doc {
                pk: pk.into(),
                rk: format!("{i:06}"),
                title: format!("doc {i}"),
                count: i as i64 * 1_000_000_007,
                body: if i % 100 == 0 {
                    noise(1_300_000, i as u64)
                } else {
                    format!("body {i}")
                },
            })
            .collect();
        docs.create_batch(&batch).await.expect("seeded");
    }
}

async fn count(connection: &str, table: &str) -> u64 {
    let docs = tables(connection).store_in::<Doc>(table);
    docs.count(unified_tables::QueryOptions::all()).await.unwrap()
}

fn json_of(out: &Output) -> Json {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

/// Waits for `check` up to a minute.
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn manifest(dir: &Path) -> Option<Json> {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).ok()?).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fsck_exit_codes_json_output_and_no_secrets() {
    let Some(conn) = connection() else { return };
    let table = unique("fsck");
    seed(&conn, &table, 30).await;
    let clean = run(&conn, &["fsck", &table, "--json"]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stderr));
    let report = json_of(&clean);
    assert_eq!(report["entities"], 30);
    assert_eq!(report["findings"], Json::Array(vec![]));

    // A leftover continuation row: found (1), repaired, clean again (0).
    let leftover = Row::new("a", "gone~0001")
        .with("_SplitOf", Value::String("gone".into()))
        .with("_SplitIndex", Value::Int32(1));
    let op = WriteOp::Upsert {
        row: leftover,
        mode: UpdateMode::Replace,
    };
    tables(&conn).backend().execute(&table, op).await.unwrap();
    let found = run(&conn, &["fsck", &table, "--json"]);
    assert_eq!(found.status.code(), Some(1), "{}", text(&found.stderr));
    assert_eq!(json_of(&found)["findings"][0]["finding"], "leftover");
    let repaired = run(&conn, &["fsck", &table, "--repair", "--json"]);
    assert_eq!(json_of(&repaired)["repaired"], 1);
    assert_eq!(run(&conn, &["fsck", &table]).status.code(), Some(0));

    // An error is 2, and the key of the connection string is never printed.
    let secret = "c2VjcmV0LWtleS1ub3QtdG8tcHJpbnQ=";
    let bad = format!(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={secret};TableEndpoint=http://127.0.0.1:9/devstoreaccount1;BlobEndpoint=http://127.0.0.1:9/devstoreaccount1"
    );
    let failed = run(&bad, &["fsck", &table, "--json"]);
    assert_eq!(failed.status.code(), Some(2));
    let all = text(&failed.stdout) + &text(&failed.stderr);
    assert!(!all.contains(secret) && !all.contains("c2VjcmV0"), "{all}");
    assert!(all.contains("error"), "{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_shows_each_request_and_no_secret() {
    let Some(conn) = connection() else { return };
    let table = unique("verbose");
    seed(&conn, &table, 3).await;
    let quiet = run(&conn, &["get", &table, "a", "000000", "--json"]);
    assert!(!text(&quiet.stderr).contains("http.request"), "{}", text(&quiet.stderr));

    let shown = run(&conn, &["get", &table, "a", "000000", "--json", "--verbose"]);
    assert_eq!(shown.status.code(), Some(0), "{}", text(&shown.stderr));
    assert_eq!(
        json_of(&shown)["RowKey"],
        "000000",
        "stdout is the entity, as without --verbose"
    );
    let stderr = text(&shown.stderr);
    let requests: Vec<&str> = stderr.lines().filter(|l| l.contains("http.request{")).collect();
    // The main row, then its continuation rows.
    assert!(requests.len() >= 2, "{stderr}");
    assert!(
        requests[0].contains("http.request.method=GET")
            // The request's template: the table, never the keys of the row.
            && requests[0].contains(&format!("/{table}(\u{2026})"))
            && !requests[0].contains("RowKey")
            && requests[0].contains("http.response.status_code=200")
            && requests[0].contains("time.busy="),
        "{}",
        requests[0]
    );
    assert!(requests.iter().any(|r| r.contains("resource=\"query\"")), "{stderr}");
    let key = conn
        .split(';')
        .find_map(|part| part.strip_prefix("AccountKey="))
        .expect("a key in the test connection");
    assert!(
        !stderr.contains(key) && !stderr.to_lowercase().contains("sharedkey"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_query_print_logical_entities() {
    let Some(conn) = connection() else { return };
    let table = unique("get");
    seed(&conn, &table, 9).await;
    let got = run(&conn, &["get", &table, "a", "000000", "--json"]);
    assert_eq!(got.status.code(), Some(0), "{}", text(&got.stderr));
    let entity = json_of(&got);
    assert_eq!(entity["Body"].as_str().map(str::len), Some(1_300_000), "reassembled");
    assert_eq!(entity["Count@odata.type"], "Edm.Int64");
    let raw = json_of(&run(&conn, &["get", &table, "a", "000000", "--raw"]));
    assert!(
        raw.as_array().unwrap().len() > 1,
        "the main row and its continuation rows"
    );
    assert_eq!(run(&conn, &["get", &table, "a", "nope"]).status.code(), Some(2));

    // Pages of two rows (continuation rows count, and are never listed), followed by their cursors.
    let mut keys = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..10 {
        let mut args = vec!["query", &table, "--partition", "b", "--top", "2", "--json"];
        if let Some(c) = &after {
            args.extend(["--after", c.as_str()]);
        }
        let page = run(&conn, &args);
        assert_eq!(page.status.code(), Some(0), "{}", text(&page.stderr));
        after = None;
        for line in text(&page.stdout).lines() {
            let json: Json = serde_json::from_str(line).unwrap();
            match json["cursor"].as_str() {
                Some(c) => after = Some(c.to_owned()),
                None => keys.push(json["RowKey"].as_str().unwrap().to_owned()),
            }
        }
        if after.is_none() {
            break;
        }
    }
    assert_eq!(keys, ["000000", "000001", "000002"]);
    let stats = json_of(&run(&conn, &["stats", &table, "--json"]));
    assert_eq!(
        (stats["entities"].as_u64(), stats["partitions"].as_u64()),
        (Some(9), Some(3))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_export_and_import_resume_to_the_same_table() {
    let Some(conn) = connection() else { return };
    let table = unique("src");
    let n = 1_500;
    seed(&conn, &table, n).await;
    let dir = scratch("export");
    let dir_s = dir.to_str().unwrap();

    // Export, stopped by Ctrl-C (SIGINT) once a data file is written: exit 130, then resumed.
    let mut child = cli(&conn)
        .args(["export", &table, "--out", dir_s, "--entities-per-file", "50", "--quiet"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("a first data file", || {
        manifest(&dir).is_some_and(|m| m["files"].as_array().is_some_and(|f| !f.is_empty()))
    });
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "stopped cleanly");
    let partial = manifest(&dir).unwrap();
    assert_eq!(partial["complete"], false);
    assert!(partial["entities"].as_u64().unwrap() < n as u64);
    let resumed = run(&conn, &["export", &table, "--out", dir_s, "--resume", "--json"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    let m = json_of(&resumed);
    assert_eq!(m["manifest"]["entities"], n as u64);
    assert_eq!(m["manifest"]["complete"], true);

    // Import, killed (SIGKILL) after its first transactions, then resumed: every entity once.
    let target = unique("dst");
    let position = dir.join(format!("import-{target}.position.json"));
    let mut child = cli(&conn)
        .args(["import", &target, dir_s, "--quiet"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the import's first transaction", || {
        std::fs::read_to_string(&position)
            .ok()
            .and_then(|p| serde_json::from_str::<Json>(&p).ok())
            .is_some_and(|p| p["line"].as_u64().unwrap_or(0) > 0 || p["file"].as_u64().unwrap_or(0) > 0)
    });
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success(), "killed before the end");
    let written_before = count(&conn, &target).await;
    assert!(written_before < n as u64, "{written_before}");
    let again = run(&conn, &["import", &target, dir_s]);
    assert_eq!(again.status.code(), Some(2), "refused without --resume");
    assert!(text(&again.stderr).contains("resume"), "{}", text(&again.stderr));
    let resumed = run(&conn, &["import", &target, dir_s, "--resume", "--json"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert_eq!(count(&conn, &target).await, n as u64);
    let docs = tables(&conn).store_in::<Doc>(&target);
    let big = docs.get(("c", "000100")).await.unwrap().expect("imported");
    assert_eq!(big.body.len(), 1_300_000);
    assert_eq!(run(&conn, &["fsck", &target]).status.code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_between_two_tables() {
    let Some(conn) = connection() else { return };
    let table = unique("from");
    seed(&conn, &table, 60).await;
    let file = scratch("conn").join("target.conn");
    std::fs::write(&file, format!("{conn}\n")).unwrap();
    let from = tables(&conn).store_in::<Doc>(&table);

    // The target's connection string from an environment variable, from a file, or
    // (with a warning that never shows the key) from the command line.
    let by_env = unique("toenv");
    let by_file = unique("tofile");
    let by_option = unique("toopt");
    let copies = [
        (by_env.as_str(), vec!["--to-env", "UT_COPY_TARGET"]),
        (by_file.as_str(), vec!["--to-file", file.to_str().unwrap()]),
        (by_option.as_str(), vec!["--to", conn.as_str()]),
    ];
    for (target, how) in &copies {
        let mut args = vec!["copy", table.as_str(), "--to-table", target, "--json"];
        args.extend(how.iter().copied());
        let out = cli(&conn).env("UT_COPY_TARGET", &conn).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(json_of(&out)["written"], 60);
        let warned = text(&out.stderr).contains("warning: the key in --to shows in `ps`");
        assert_eq!(warned, how[0] == "--to", "{how:?}: {}", text(&out.stderr));
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(
            !all.contains("AccountKey=Eby8") && !all.contains("Eby8vdM0"),
            "no secrets in the output: {all}"
        );
        let to = tables(&conn).store_in::<Doc>(*target);
        for key in [("a", "000000"), ("b", "000007"), ("c", "000019")] {
            let a = from.get(key).await.unwrap().unwrap();
            let b = to.get(key).await.unwrap().unwrap();
            assert_eq!((a.title, a.count, a.body), (b.title, b.count, b.body));
        }
    }
    let missing = cli(&conn)
        .env_remove("UT_COPY_TARGET")
        .args(["copy", &table, "--to-env", "UT_COPY_TARGET"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("UT_COPY_TARGET"),
        "{}",
        text(&missing.stderr)
    );
}

/// The connection string from `--connection-file` or the environment with
/// no warning; from `--connection` with one that never shows the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_strings_from_a_file_or_the_environment() {
    let Some(conn) = connection() else { return };
    let table = unique("conn");
    seed(&conn, &table, 3).await;
    let file = scratch("connfile").join("source.conn");
    std::fs::write(&file, format!("  {conn}\n")).unwrap();
    let stats = ["stats", table.as_str(), "--json"];
    let plain = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_unified-tables"));
        c.env_remove("UNIFIED_TABLES_CONNECTION");
        c
    };
    let by_file = plain()
        .args(stats)
        .args(["--connection-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    let by_env = cli(&conn).args(stats).output().unwrap();
    let by_option = plain().args(stats).args(["--connection", &conn]).output().unwrap();
    for (how, out) in [("file", &by_file), ("environment", &by_env), ("option", &by_option)] {
        assert_eq!(out.status.code(), Some(0), "{how}: {}", text(&out.stderr));
        assert_eq!(json_of(out)["entities"], 3, "{how}");
        let warned = text(&out.stderr).contains("warning: the key in --connection shows in `ps`");
        assert_eq!(warned, how == "option", "{how}: {}", text(&out.stderr));
        assert!(
            !text(&out.stderr).contains("Eby8vdM0"),
            "{how}: the key is never printed"
        );
    }
    // The file wins over the environment.
    let bad_env = cli("DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;TableEndpoint=http://127.0.0.1:9/devstoreaccount1")
        .args(stats)
        .args(["--connection-file", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(bad_env.status.code(), Some(0), "{}", text(&bad_env.stderr));
    let unreadable = plain()
        .args(stats)
        .args(["--connection-file", "/nonexistent/conn"])
        .output()
        .unwrap();
    assert_eq!(unreadable.status.code(), Some(2));
    assert!(
        text(&unreadable.stderr).contains("--connection-file /nonexistent/conn"),
        "{}",
        text(&unreadable.stderr)
    );
    let both = plain()
        .args(stats)
        .args([
            "--connection",
            "UseDevelopmentStorage=true",
            "--connection-file",
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2), "one or the other");
}

/// A copy that stops keeps its work directory, private to the user, and
/// names it; a resume from it finishes the copy and removes it.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_copy_keeps_its_private_work_directory_and_resumes_from_it() {
    use std::os::unix::fs::MetadataExt as _;
    let Some(conn) = connection() else { return };
    let table = unique("stopfrom");
    seed(&conn, &table, 30).await;
    // The target holds one of the entities: an insert stops there.
    let target = unique("stopto");
    let docs = tables(&conn).store_in::<Doc>(&target);
    docs.ensure_created().await.unwrap();
    let mut taken = tables(&conn)
        .store_in::<Doc>(&table)
        .get(("b", "000004"))
        .await
        .unwrap()
        .unwrap();
    docs.create(&mut taken).await.unwrap();

    let copy = |extra: &[&str]| {
        let mut args = vec![
            "copy",
            table.as_str(),
            "--to-env",
            "UT_COPY_TARGET",
            "--to-table",
            target.as_str(),
            "--json",
        ];
        args.extend_from_slice(extra);
        cli(&conn).env("UT_COPY_TARGET", &conn).args(&args).output().unwrap()
    };
    let stopped = copy(&[]);
    assert_eq!(stopped.status.code(), Some(2), "{}", text(&stopped.stderr));
    let stderr = text(&stopped.stderr);
    let kept = stderr
        .lines()
        .find_map(|l| {
            l.split_once("--resume --work-dir ")
                .map(|(_, p)| PathBuf::from(p.trim()))
        })
        .unwrap_or_else(|| panic!("the work directory is named: {stderr}"));
    let meta = std::fs::symlink_metadata(&kept).unwrap();
    assert!(
        meta.is_dir() && kept.starts_with(std::env::temp_dir()),
        "{}",
        kept.display()
    );
    assert_eq!(meta.mode() & 0o777, 0o700, "private to the user");
    let mine = std::fs::metadata(scratch("uid")).unwrap().uid();
    assert_eq!(meta.uid(), mine, "the user's own");
    let name = kept.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("unified-tables-copy-{table}-{target}-")),
        "{name}"
    );
    assert!(
        name.len() > format!("unified-tables-copy-{table}-{target}-").len(),
        "and not predictable: {name}"
    );
    assert!(kept.join("manifest.json").exists());

    let work = kept.to_str().unwrap();
    let resumed = copy(&["--resume", "--work-dir", work, "--mode", "skip"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", text(&resumed.stderr));
    assert_eq!(count(&conn, &target).await, 30);
    assert!(!kept.exists(), "removed once the copy finished");
}

#[derive(TableEntity, Debug, Clone, PartialEq)]
struct User {
    #[table(partition_key)]
    org: String,
    #[table(row_key)]
    id: String,
    #[unique]
    email: String,
    #[index]
    city: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_rows_show_in_get_raw_count_in_stats_and_drift_in_fsck() {
    let Some(conn) = connection() else { return };
    let table = unique("ix");
    let users = tables(&conn).store_in::<User>(&table);
    for (id, email) in [("1", "a@x.com"), ("2", "b@x.com")] {
        let mut u = User {
            org: "o".into(),
            id: id.into(),
            email: email.into(),
            city: "Lviv".into(),
        };
        users.create(&mut u).await.unwrap();
    }
    let raw = run(&conn, &["get", &table, "o", "1", "--raw"]);
    assert_eq!(raw.status.code(), Some(0), "{}", text(&raw.stderr));
    let rows = json_of(&raw);
    let keys: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["RowKey"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["1", "~ix|city|Lviv!1", "~ix|email|a@x.com!"], "{rows}");

    let stats = run(&conn, &["stats", &table, "--json"]);
    let stats = json_of(&stats);
    assert_eq!(
        (stats["entities"].as_u64(), stats["index_rows"].as_u64()),
        (Some(2), Some(4)),
        "{stats}"
    );

    // An index row whose entity is gone: found, repaired, clean again.
    users.delete(("o", "2")).await.unwrap();
    let orphan = Row::new("o", "~ix|city|Lviv!2")
        .with("_IndexOf", Value::String("city".into()))
        .with("_IndexOn", Value::String("City".into()))
        .with("_IndexRow", Value::String("2".into()))
        .with("City", Value::String("Lviv".into()));
    let op = WriteOp::Upsert {
        row: orphan,
        mode: UpdateMode::Replace,
    };
    tables(&conn).backend().execute(&table, op).await.unwrap();
    let found = run(&conn, &["fsck", &table, "--json"]);
    assert_eq!(found.status.code(), Some(1), "{}", text(&found.stderr));
    assert_eq!(json_of(&found)["findings"][0]["finding"], "index_orphan");
    let repaired = run(&conn, &["fsck", &table, "--repair", "--json"]);
    assert_eq!(json_of(&repaired)["repaired"], 1);
    let clean = run(&conn, &["fsck", &table, "--json"]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stdout));
}
