//! One line per figure, printed as an aligned plain-text table.

use std::time::Duration;

/// What a figure's ratio (library / reference, as printed) should reach.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// The ratio should be at most this.
    AtMost(f64),
    /// The ratio should be at least this.
    AtLeast(f64),
}

impl Target {
    /// Whether `ratio` reaches the target.
    fn reached_by(self, ratio: f64) -> bool {
        match self {
            Target::AtMost(b) => ratio <= b,
            Target::AtLeast(b) => ratio >= b,
        }
    }

    /// `>= 0.9 met`, `>= 0.9 MISSED`, or, for a miss where the best ratio
    /// this run allows does not reach the target either, `>= 0.9 capped at 0.66`.
    fn cell(self, ratio: Option<f64>, ceiling: Option<f64>) -> String {
        let (sign, bound) = match self {
            Target::AtMost(b) => ("<=", b),
            Target::AtLeast(b) => (">=", b),
        };
        let verdict = match (ratio.map(|r| self.reached_by(r)), ceiling) {
            (Some(true), _) => " met".to_owned(),
            (Some(false), Some(c)) if !self.reached_by(c) => format!(" capped at {c:.3}"),
            (Some(false), _) => " MISSED".to_owned(),
            (None, _) => String::new(),
        };
        format!("{sign} {bound}{verdict}")
    }
}

/// One measured figure beside its reference.
#[derive(Debug, Clone)]
pub struct Figure {
    /// What is measured.
    pub name: String,
    /// The library's figure, with its unit.
    pub library: String,
    /// The reference's figure, or `-` where none is measured.
    pub reference: String,
    /// Library / reference, of the figures as printed.
    pub ratio: Option<f64>,
    /// What the ratio should reach, where one is set.
    pub target: Option<Target>,
    /// The best ratio the same run allows, where one is measured: what the
    /// reference itself reaches, or the reference with the library's own
    /// work added where that work cannot overlap the requests.
    pub ceiling: Option<f64>,
    /// Over several runs: the lowest and highest ratio.
    pub spread: Option<(f64, f64)>,
}

impl Figure {
    /// A figure with a reference: `ratio` is `library / reference`.
    pub fn compared(name: impl Into<String>, library: (String, f64), reference: (String, f64)) -> Figure {
        Figure {
            name: name.into(),
            library: library.0,
            reference: reference.0,
            ratio: Some(library.1 / reference.1),
            target: None,
            ceiling: None,
            spread: None,
        }
    }

    /// A figure measured on its own (no reference on this backend).
    pub fn alone(name: impl Into<String>, library: String) -> Figure {
        Figure {
            name: name.into(),
            library,
            reference: "-".into(),
            ratio: None,
            target: None,
            ceiling: None,
            spread: None,
        }
    }

    /// The library's figure beside the raw crate's on a pooled client, with
    /// `target`, or alone where the crate was not measured (in memory).
    pub fn beside_raw(name: String, library: (String, f64), raw: Option<(String, f64)>, target: Target) -> Figure {
        match raw {
            None => Figure::alone(name, library.0),
            Some(raw) => Figure::compared(format!("{name} vs raw crate (pooled)"), library, raw).target(target),
        }
    }

    /// Sets the target of the ratio.
    pub fn target(mut self, target: Target) -> Figure {
        self.target = Some(target);
        self
    }

    /// Sets the best ratio the run allows (the field of that name): a miss
    /// that the ceiling misses too prints as `capped`.
    pub fn ceiling(mut self, ceiling: f64) -> Figure {
        self.ceiling = Some(ceiling);
        self
    }
}

/// The figures of several runs as one list, in the first run's order: for
/// each figure the run whose ratio is the median (the lower middle one),
/// with the lowest and highest ratio of the runs; its ceiling is the
/// median of the runs' ceilings. One run is returned as it is.
pub fn median_of_runs(runs: Vec<Vec<Figure>>) -> Vec<Figure> {
    if runs.len() < 2 {
        return runs.into_iter().next().unwrap_or_default();
    }
    let first = runs[0].clone();
    first
        .iter()
        .map(|f| {
            let mut same: Vec<&Figure> = runs
                .iter()
                .filter_map(|r| r.iter().find(|g| g.name == f.name))
                .collect();
            if same.iter().any(|g| g.ratio.is_none()) {
                return f.clone();
            }
            let ratio = |g: &&Figure| g.ratio.unwrap_or(f64::NAN);
            same.sort_by(|a, b| ratio(a).total_cmp(&ratio(b)));
            let mut median = same[(same.len() - 1) / 2].clone();
            median.spread = Some((ratio(&same[0]), ratio(&same[same.len() - 1])));
            let mut ceilings: Vec<f64> = same.iter().filter_map(|g| g.ceiling).collect();
            ceilings.sort_by(f64::total_cmp);
            median.ceiling = ceilings.get(ceilings.len().saturating_sub(1) / 2).copied();
            median
        })
        .collect()
}

/// Prints the figures as one table: `figure | library | reference | ratio | target`,
/// and `runs` (the lowest and highest ratio) when the figures come from several runs.
pub fn print_table(figures: &[Figure]) {
    let several = figures.iter().any(|f| f.spread.is_some());
    let mut header: Vec<String> = ["figure", "library", "reference", "ratio", "target"]
        .map(String::from)
        .into();
    if several {
        header.push("runs (min-max)".into());
    }
    let rows: Vec<Vec<String>> = figures
        .iter()
        .map(|f| {
            let mut row = vec![
                f.name.clone(),
                f.library.clone(),
                f.reference.clone(),
                f.ratio.map_or_else(|| "-".into(), |r| format!("{r:.3}")),
                f.target.map_or_else(|| "-".into(), |t| t.cell(f.ratio, f.ceiling)),
            ];
            if several {
                row.push(
                    f.spread
                        .map_or_else(|| "-".into(), |(lo, hi)| format!("{lo:.3}-{hi:.3}")),
                );
            }
            row
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, &w))| match i {
                0 | 4 => format!("{c:<w$}"),
                _ => format!("{c:>w$}"),
            })
            .collect();
        println!("{}", parts.join(" | ").trim_end());
    };
    line(&header);
    println!(
        "{}",
        widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>().join("-+-")
    );
    for row in &rows {
        line(row);
    }
}

/// The median (the lower middle one for an even count; zero for none).
pub fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values
        .get(values.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or_default()
}

/// A duration in the unit that suits it, three significant digits or so.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.1} us", s * 1e6)
    } else {
        format!("{:.0} ns", s * 1e9)
    }
}

/// `n` with thousands separators.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
