//! Progress of long commands: bars on a terminal, plain periodic lines
//! otherwise, nothing with `--quiet`.

use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use unified_tables::admin::{Event, Finding, Observer};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// indicatif bars on stderr.
    Bars,
    /// A line on stderr every few seconds.
    Lines,
    /// Nothing.
    Quiet,
}

impl Mode {
    /// Bars when stderr is a terminal, lines otherwise, nothing when quiet.
    pub fn detect(quiet: bool) -> Mode {
        match (quiet, std::io::stderr().is_terminal()) {
            (true, _) => Mode::Quiet,
            (false, true) => Mode::Bars,
            (false, false) => Mode::Lines,
        }
    }
}

struct Lines {
    phase: String,
    last: Instant,
    started: Instant,
}

/// Shows the events of one command.
#[derive(Clone)]
pub struct Progress {
    mode: Mode,
    command: &'static str,
    bar: ProgressBar,
    lines: Arc<Mutex<Lines>>,
}

/// How often a plain line is printed.
const LINE_EVERY: Duration = Duration::from_secs(2);

impl Progress {
    /// Progress of `command`.
    pub fn new(mode: Mode, command: &'static str) -> Progress {
        let bar = match mode {
            Mode::Bars => ProgressBar::new_spinner(),
            _ => ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden()),
        };
        bar.enable_steady_tick(Duration::from_millis(120));
        let now = Instant::now();
        Progress {
            mode,
            command,
            bar,
            lines: Arc::new(Mutex::new(Lines {
                phase: String::new(),
                last: now,
                started: now,
            })),
        }
    }

    /// An observer for the library's operations.
    pub fn observer(&self) -> Observer {
        let me = self.clone();
        Arc::new(move |event: &Event| me.on(event))
    }

    fn on(&self, event: &Event) {
        match self.mode {
            Mode::Quiet => {}
            Mode::Bars => self.bar_event(event),
            Mode::Lines => self.line_event(event),
        }
    }

    fn bar_event(&self, event: &Event) {
        match event {
            Event::Phase { name, total } => {
                self.bar.reset();
                let style = match total {
                    Some(n) => {
                        self.bar.set_length(*n);
                        self.bar.set_position(0);
                        ProgressStyle::with_template(
                            "{spinner:.green} {prefix:.bold} [{elapsed_precise}] {wide_bar:.cyan/blue} {pos}/{len} {msg}, ETA {eta}",
                        )
                    }
                    None => ProgressStyle::with_template(
                        "{spinner:.green} {prefix:.bold} [{elapsed_precise}] {pos} entities {msg}",
                    ),
                };
                if let Ok(style) = style {
                    self.bar.set_style(style.progress_chars("=> "));
                }
                self.bar.set_prefix(format!("{} {name}", self.command));
            }
            Event::Progress { rows, entities, bytes } => {
                let unit_is_bytes = self.lines.lock().map(|l| l.phase == "verify").unwrap_or(false);
                self.bar.set_position(if unit_is_bytes { *bytes } else { *entities });
                let secs = self.bar.elapsed().as_secs_f64().max(0.001);
                let rate = if unit_is_bytes { *bytes } else { *entities } as f64 / secs;
                let per = if unit_is_bytes {
                    format!("{}/s", HumanBytes(rate as u64))
                } else {
                    format!("{rate:.0}/s")
                };
                self.bar
                    .set_message(format!("{rows} rows, {}, {per}", HumanBytes(*bytes)));
            }
            Event::Found(finding) => self.bar.println(describe(finding)),
            Event::Note(note) => self.bar.println(note),
            _ => {}
        }
        if let (Event::Phase { name, .. }, Ok(mut l)) = (event, self.lines.lock()) {
            l.phase = (*name).to_owned();
        }
    }

    fn line_event(&self, event: &Event) {
        let Ok(mut l) = self.lines.lock() else { return };
        match event {
            Event::Phase { name, total } => {
                l.phase = (*name).to_owned();
                match total {
                    Some(n) => eprintln!("{} {name}: {n} to do", self.command),
                    None => eprintln!("{} {name}", self.command),
                }
            }
            Event::Progress { rows, entities, bytes } if l.last.elapsed() >= LINE_EVERY => {
                l.last = Instant::now();
                let secs = l.started.elapsed().as_secs_f64().max(0.001);
                eprintln!(
                    "{} {}: {entities} entities, {rows} rows, {} ({:.0} entities/s)",
                    self.command,
                    l.phase,
                    HumanBytes(*bytes),
                    *entities as f64 / secs
                );
            }
            Event::Found(finding) => eprintln!("{}", describe(finding)),
            Event::Note(note) => eprintln!("{} {note}", self.command),
            _ => {}
        }
    }

    /// Clears the bar (before the command's own output).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// One line about a finding.
pub fn describe(finding: &Finding) -> String {
    match finding {
        Finding::Damaged {
            partition_key,
            row_key,
            damage,
        } => {
            let what: Vec<String> = damage
                .iter()
                .map(|d| serde_json::to_string(d).unwrap_or_default())
                .collect();
            format!("damaged  {partition_key:?} {row_key:?}: {}", what.join(", "))
        }
        Finding::Leftover {
            partition_key,
            row_key,
            owner,
            repaired,
        } => format!(
            "leftover {partition_key:?} {row_key:?} (continuation row of {owner:?}){}",
            if *repaired { " - deleted" } else { "" }
        ),
        Finding::OrphanBlob { path, bytes, repaired } => format!(
            "orphan   {path} ({}){}",
            HumanBytes(*bytes),
            if *repaired { " - deleted" } else { "" }
        ),
        Finding::IndexInFlight {
            index,
            partition_key,
            row_key,
        } => format!("in flight {partition_key:?} {row_key:?} (reservation of index {index:?} of a write not finished yet) - not repaired"),
        other => format!("{other:?}"),
    }
}
