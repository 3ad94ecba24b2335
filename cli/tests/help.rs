//! The help text of the command and of each subcommand, as a user reads it.
//!
//! Each `--help` is compared with its snapshot in `cli/tests/help/`
//! (`unified-tables.txt`, `get.txt`, …), so a change to what a user reads
//! shows in review as a diff. After an intended change, bless the snapshots
//! and read the diff:
//!
//! ```text
//! UPDATE_HELP=1 cargo test -p unified-tables-cli --test help
//! git diff cli/tests/help/
//! ```
//!
//! The texts are also held to the house rules: every argument has a
//! description, a default is shown once (by clap), and every subcommand
//! ends with examples.

use std::path::PathBuf;
use std::process::Command;

/// The subcommands (the command itself is the empty name).
const COMMANDS: &[&str] = &["", "get", "query", "stats", "fsck", "sweep", "export", "import", "copy"];

fn help(subcommand: &str, flag: &str) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_unified-tables"));
    if !subcommand.is_empty() {
        command.arg(subcommand);
    }
    let out = command
        .arg(flag)
        .env_remove("UNIFIED_TABLES_CONNECTION")
        .output()
        .expect("the command runs");
    assert!(out.status.success(), "{subcommand} {flag}: {out:?}");
    String::from_utf8(out.stdout).expect("text")
}

fn snapshot(subcommand: &str) -> PathBuf {
    let name = if subcommand.is_empty() {
        "unified-tables"
    } else {
        subcommand
    };
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/help/{name}.txt"))
}

#[test]
fn each_help_text_is_its_snapshot() {
    let bless = std::env::var_os("UPDATE_HELP").is_some();
    let mut differ = Vec::new();
    for sub in COMMANDS {
        let text = help(sub, "--help");
        let path = snapshot(sub);
        if bless {
            std::fs::write(&path, &text).expect("the snapshot is written");
            continue;
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        if kept != text {
            differ.push(format!(
                "--- {} (kept)\n{kept}\n+++ `unified-tables {sub} --help` (now)\n{text}",
                path.display()
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "the help differs from its snapshot; if the change is intended, run \
         `UPDATE_HELP=1 cargo test -p unified-tables-cli --test help` and read the diff\n\n{}",
        differ.join("\n")
    );
}

/// The argument lines of a short help (`-h`): `  <TABLE>  The table.`, `  --json  Print JSON`.
fn argument_lines(text: &str) -> Vec<&str> {
    let mut in_list = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        match line {
            "Arguments:" | "Options:" => in_list = true,
            "" => in_list = false,
            l if in_list && l.starts_with("  ") => lines.push(l),
            _ => {}
        }
    }
    lines
}

#[test]
fn every_argument_has_a_description() {
    for sub in COMMANDS {
        let text = help(sub, "-h");
        let lines = argument_lines(&text);
        assert!(!lines.is_empty(), "{sub}: no arguments listed:\n{text}");
        for line in lines {
            // `  --name <VALUE>  What it is`: a name, two spaces or more, a description.
            let described = line
                .trim_start()
                .split_once("  ")
                .is_some_and(|(_, d)| !d.trim().is_empty());
            assert!(
                described,
                "`unified-tables {sub}`: `{}` has no description",
                line.trim()
            );
        }
    }
}

#[test]
fn defaults_are_shown_once_and_every_subcommand_has_examples() {
    for sub in COMMANDS {
        for flag in ["-h", "--help"] {
            let text = help(sub, flag);
            for line in argument_lines(&text) {
                assert!(
                    !(line.contains("[default: ") && line.contains("(default")),
                    "`unified-tables {sub} {flag}`: a default shown twice: {line}"
                );
            }
            let examples = text.split_once("\nExamples:\n").map(|(_, e)| e).unwrap_or_default();
            assert!(
                examples
                    .lines()
                    .next()
                    .is_some_and(|l| l.starts_with("  unified-tables ")),
                "`unified-tables {sub} {flag}` ends without examples:\n{text}"
            );
            if !sub.is_empty() {
                assert!(
                    examples
                        .lines()
                        .all(|l| l.starts_with(&format!("  unified-tables {sub} "))),
                    "`unified-tables {sub}`: an example of another command:\n{examples}"
                );
            }
        }
    }
}
