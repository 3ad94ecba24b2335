//! The model the interleavings are checked against: the rows of one case as
//! a map of their tracked cells, each verb and the other writer's action as
//! a sequential step on it, and the check that some order of the two steps
//! (ours first, theirs first, or theirs alone when ours claims no effect or
//! an unknown outcome) explains what was observed: Jepsen's "every
//! acknowledged write takes effect exactly once, in an order consistent
//! with real time" for two overlapping operations.

use std::collections::BTreeMap;

use unified_tables::{ETag, ErrorKind, Row, Value};

use super::world::{Doubt, Evidence, Other};

/// The columns a case compares (stamps and system cells differ between attempts).
pub const TRACKED: [&str; 5] = ["Name", "Visits", "Title", "_N", "_TypeName"];

/// A row's tracked cells.
pub type Cells = BTreeMap<&'static str, Value>;

/// The tracked cells of `row`.
pub fn cells_of(row: &Row) -> Cells {
    TRACKED
        .iter()
        .filter_map(|&c| row.get(c).map(|v| (c, v.clone())))
        .collect()
}

/// Cells from pairs.
pub fn cells<const N: usize>(pairs: [(&'static str, Value); N]) -> Cells {
    pairs.into_iter().collect()
}

/// The rows of one case: tracked cells and a version number by row key.
#[derive(Debug, Clone, Default)]
pub struct Model {
    rows: BTreeMap<String, (Cells, u32)>,
    next: u32,
}

impl Model {
    /// Rows at version 0.
    pub fn of<'a>(rows: impl IntoIterator<Item = (&'a str, Cells)>) -> Model {
        Model {
            rows: rows.into_iter().map(|(k, c)| (k.to_owned(), (c, 0))).collect(),
            next: 1,
        }
    }

    /// Whether the row exists.
    pub fn contains(&self, rk: &str) -> bool {
        self.rows.contains_key(rk)
    }

    /// The row's cells.
    pub fn cells(&self, rk: &str) -> Option<&Cells> {
        self.rows.get(rk).map(|(c, _)| c)
    }

    /// The row's version (0: as the case began).
    pub fn version(&self, rk: &str) -> Option<u32> {
        self.rows.get(rk).map(|(_, v)| *v)
    }

    /// Writes the row whole, as a new version.
    pub fn put(&mut self, rk: &str, cells: Cells) {
        self.next += 1;
        self.rows.insert(rk.to_owned(), (cells, self.next));
    }

    /// Merges cells into an existing row, as a new version.
    pub fn merge(&mut self, rk: &str, cells: impl IntoIterator<Item = (&'static str, Value)>) {
        self.next += 1;
        let next = self.next;
        if let Some((c, v)) = self.rows.get_mut(rk) {
            c.extend(cells);
            *v = next;
        }
    }

    /// Removes the row.
    pub fn remove(&mut self, rk: &str) {
        self.rows.remove(rk);
    }

    /// Whether two models hold the same cells (versions aside).
    pub fn same_rows(&self, other: &Model) -> bool {
        self.rows.len() == other.rows.len()
            && self
                .rows
                .iter()
                .all(|(k, (c, _))| other.cells(k).is_some_and(|o| same_cells(o, c)))
    }

    /// The rows, for a failure message.
    pub fn show(&self) -> String {
        format!("{:?}", self.rows.iter().map(|(k, (c, _))| (k, c)).collect::<Vec<_>>())
    }
}

fn same_cells(a: &Cells, b: &Cells) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v))
}

/// What a call said, as the model can say it too.
#[derive(Debug, Clone, PartialEq)]
pub enum Said {
    /// Success, with the entity's tracked cells when the call returns one.
    Ok(Option<Cells>),
    /// No such row.
    NotFound,
    /// The key is taken.
    AlreadyExists,
    /// The version moved.
    Conflict,
    /// The outcome verbs' failed precondition, with the current row.
    Unmet(Cells),
    /// `OutcomeUnknown`.
    Unknown,
    /// Any other failure: a claim that nothing was applied.
    Failed(ErrorKind),
}

/// What one case observed.
#[derive(Debug)]
pub struct Observed {
    /// What our call said.
    pub said: Said,
    /// The version our call reported, when it reports one (empty: none known).
    pub etag: Option<ETag>,
    /// What the other writer's action got.
    pub other: Result<(), ErrorKind>,
    /// The rows once every write landed.
    pub end: Model,
    /// What a read-back had to go on.
    pub evidence: Evidence,
    /// Every version a write of ours produced (answered, or applied and unheard).
    pub ours: Vec<ETag>,
}

/// One verb under test, as the model sees it.
pub trait Step {
    /// Applies the verb to `model` as one sequential step, saying what it says.
    fn apply(&self, model: &mut Model) -> Said;
    /// Whether a success reports a version of a row it wrote whole (a
    /// replace), which a read-back that finds that row must report.
    fn reports_whole_version(&self) -> bool;
    /// Whether the verb deletes: after a lost answer, a delete whose rows
    /// are gone is reported done, whoever removed them (the documented
    /// exception: the caller wanted them gone).
    fn deletes(&self) -> bool;
}

/// Checks one case: `Err` says what no order of the two steps explains.
pub fn check(step: &dyn Step, other: Other, doubt: Doubt, start: &Model, seen: &Observed) -> Result<(), String> {
    // A version reported is one this call wrote.
    if let Some(etag) = seen.etag.as_ref().filter(|e| !e.as_str().is_empty()) {
        if !seen.ours.contains(etag) {
            return Err(format!(
                "reported the version {etag:?}, which no write of this call produced"
            ));
        }
    }
    // A version is reported when the read-back found the row exactly as written.
    let untouched = matches!(other, Other::Nothing | Other::Create) && doubt == Doubt::Lost;
    let unreported = seen.etag.as_ref().is_none_or(|e| e.as_str().is_empty());
    if untouched && step.reports_whole_version() && matches!(seen.said, Said::Ok(_)) && unreported {
        return Err("the row is exactly what the call wrote, and no version was reported".into());
    }
    // `OutcomeUnknown` only where the documented rule says so.
    if seen.said == Said::Unknown {
        let e = &seen.evidence;
        let decidable = e.token_held || e.deletes_gone || (e.pinned && doubt.attempts() > 1);
        if decidable {
            return Err(format!("OutcomeUnknown although the read-back could decide: {e:?}"));
        }
    }
    let orders: [(&str, bool, bool); 3] = [
        ("ours, theirs", true, true),
        ("theirs, ours", true, false),
        ("theirs", false, false),
    ];
    for (_, with_ours, ours_first) in orders {
        let mut m = start.clone();
        let rk = "r0";
        let (spec, theirs) = match (with_ours, ours_first) {
            (true, true) => {
                let s = step.apply(&mut m);
                (Some(s), other.apply(&mut m, rk))
            }
            (true, false) => {
                let t = other.apply(&mut m, rk);
                (Some(step.apply(&mut m)), t)
            }
            _ => (None, other.apply(&mut m, rk)),
        };
        if theirs != seen.other || !m.same_rows(&seen.end) {
            continue;
        }
        let explained = match (&seen.said, &spec) {
            (Said::Unknown, _) => true,
            // A call that failed for another reason claims nothing was applied.
            (Said::Failed(_), None) => true,
            (Said::Ok(None), Some(Said::Ok(_))) => true,
            (Said::Ok(None), Some(Said::NotFound)) => step.deletes() && seen.evidence.deletes_gone,
            (said, Some(spec)) => said == spec,
            _ => false,
        };
        if explained {
            return Ok(());
        }
    }
    Err(format!(
        "no order explains it: said {:?}, the other writer got {:?}, the rows end as {}",
        seen.said,
        seen.other,
        seen.end.show()
    ))
}
