//! Result rows, their median over repeats, and the table for people.

use serde::Serialize;

use crate::measure::DirSize;
use crate::phases::{Outcome, PHASES};

/// One measurement: a phase of an engine, or (phase "size") its disk use.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub engine: String,
    pub phase: String,
    pub ops_per_s: Option<f64>,
    /// Device bytes written ÷ user key+value bytes; null for reads.
    pub wa: Option<f64>,
    pub seconds: Option<f64>,
    pub ops: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub apparent_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// How many runs the numbers are the median of.
    pub repeats: usize,
}

pub const SIZE: &str = "size";

impl Row {
    fn new(engine: &str, phase: &str) -> Row {
        Row {
            engine: engine.into(),
            phase: phase.into(),
            ops_per_s: None,
            wa: None,
            seconds: None,
            ops: None,
            allocated_bytes: None,
            apparent_bytes: None,
            error: None,
            skipped: None,
            repeats: 1,
        }
    }

    pub fn phase(engine: &str, phase: &str, outcome: Outcome) -> Row {
        let mut r = Row::new(engine, phase);
        match outcome {
            Outcome::Done { ops, seconds, wa } => {
                r.ops = Some(ops);
                r.seconds = Some(seconds);
                r.ops_per_s = Some(ops as f64 / seconds.max(1e-9));
                r.wa = wa;
            }
            Outcome::Failed(e) => r.error = Some(e),
            Outcome::Skipped(why) => r.skipped = Some(why),
        }
        r
    }

    pub fn size(engine: &str, size: Result<DirSize, String>) -> Row {
        let mut r = Row::new(engine, SIZE);
        match size {
            Ok(s) => {
                r.allocated_bytes = Some(s.allocated);
                r.apparent_bytes = Some(s.apparent);
            }
            Err(e) => r.error = Some(e),
        }
        r
    }

    pub fn skipped(engine: &str, phase: &str, why: &str) -> Row {
        let mut r = Row::new(engine, phase);
        r.skipped = Some(why.into());
        r
    }
}

/// One row per (engine, phase) in first-seen order: a failure in any run
/// wins, then a skip, else the median of each number over the runs.
pub fn medians(rows: &[Row]) -> Vec<Row> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !keys.contains(&(&r.engine, &r.phase)) {
            keys.push((&r.engine, &r.phase));
        }
    }
    keys.into_iter()
        .map(|(e, p)| {
            let runs: Vec<&Row> = rows
                .iter()
                .filter(|r| r.engine == e && r.phase == p)
                .collect();
            combine(&runs)
        })
        .collect()
}

fn combine(runs: &[&Row]) -> Row {
    let pick = runs.iter().find(|r| r.error.is_some());
    let pick = pick.or_else(|| runs.iter().find(|r| r.skipped.is_some()));
    let mut out = (*pick.unwrap_or(&runs[0])).clone();
    out.repeats = runs.len();
    if pick.is_none() {
        out.ops_per_s = median(runs.iter().map(|r| r.ops_per_s));
        out.wa = median(runs.iter().map(|r| r.wa));
        out.seconds = median(runs.iter().map(|r| r.seconds));
        out.allocated_bytes =
            median(runs.iter().map(|r| r.allocated_bytes.map(|b| b as f64))).map(|b| b as u64);
        out.apparent_bytes =
            median(runs.iter().map(|r| r.apparent_bytes.map(|b| b as f64))).map(|b| b as u64);
    }
    out
}

/// The median of the present values (the lower middle one for an even count).
fn median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut v: Vec<f64> = values.flatten().collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied()
}

fn label(phase: &str) -> &'static str {
    match phase {
        "bulk-load" => "bulk load, one batch",
        "put-durable" => "500 individual durable puts",
        "batch-durable" => "50 durable batches of 1,000",
        "put-durable-4-threads" => "1,000 durable puts, 4 threads",
        "read" => "random point reads",
        "range" => "10-key ranges from a random key",
        "delete-half" => "delete half the keys, one batch",
        "read-2-threads" => "random reads, 2 threads",
        _ => "file size after (allocated, apparent)",
    }
}

/// A Markdown table, phases down and engines across, then the reasons for
/// any failed or skipped cell.
pub fn table(rows: &[Row], engines: &[&str]) -> String {
    let mut s = format!(
        "| phase | {} |\n|---|{}\n",
        engines.join(" | "),
        "---|".repeat(engines.len())
    );
    let mut notes = Vec::new();
    for phase in PHASES.iter().chain([&SIZE]) {
        s += &format!("| {} |", label(phase));
        for e in engines {
            let cell = match rows.iter().find(|r| r.engine == *e && r.phase == *phase) {
                Some(r) => cell(r, &mut notes),
                None => "–".into(),
            };
            s += &format!(" {cell} |");
        }
        s.push('\n');
    }
    for (i, n) in notes.iter().enumerate() {
        s += &format!("\n[{}] {n}", i + 1);
    }
    s
}

fn cell(r: &Row, notes: &mut Vec<String>) -> String {
    if let Some(why) = r.error.as_ref().or(r.skipped.as_ref()) {
        let what = if r.error.is_some() {
            "error"
        } else {
            "skipped"
        };
        notes.push(format!("{} {}: {what}: {why}", r.engine, r.phase));
        return format!("{what} [{}]", notes.len());
    }
    if let (Some(a), Some(p)) = (r.allocated_bytes, r.apparent_bytes) {
        return format!("{} ({})", bytes(a), bytes(p));
    }
    let mut c = r.ops_per_s.map(rate).unwrap_or_default();
    if let Some(wa) = r.wa {
        c += &format!(", WA {}", sig(wa));
    }
    if r.seconds.is_some_and(|s| s >= 10.0) {
        c += &format!(" ({:.0} s)", r.seconds.unwrap_or_default());
    }
    c
}

fn rate(ops: f64) -> String {
    match ops {
        x if x >= 1e6 => format!("{}M/s", sig(x / 1e6)),
        x if x >= 1e3 => format!("{}k/s", sig(x / 1e3)),
        x => format!("{}/s", sig(x)),
    }
}

fn bytes(b: u64) -> String {
    let b = b as f64;
    match b {
        x if x >= 1e9 => format!("{} GB", sig(x / 1e9)),
        x if x >= 1e6 => format!("{} MB", sig(x / 1e6)),
        x => format!("{} kB", sig(x / 1e3)),
    }
}

/// Two or three significant digits, as a table needs.
fn sig(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(engine: &str, ops_per_s: f64) -> Row {
        let outcome = Outcome::Done {
            ops: 100,
            seconds: 100.0 / ops_per_s,
            wa: Some(ops_per_s),
        };
        Row::phase(engine, "bulk-load", outcome)
    }

    #[test]
    fn median_per_engine_and_failure_wins() {
        let rows = [
            done("a", 3.0),
            done("b", 5.0),
            done("a", 1.0),
            done("a", 2.0),
        ];
        let m = medians(&rows);
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].ops_per_s, m[0].wa, m[0].repeats),
            (Some(2.0), Some(2.0), 3)
        );
        assert_eq!(m[1].ops_per_s, Some(5.0));
        let failed = Row::phase("a", "bulk-load", Outcome::Failed("boom".into()));
        let m = medians(&[done("a", 3.0), failed]);
        assert_eq!((m[0].error.as_deref(), m[0].repeats), (Some("boom"), 2));
    }

    #[test]
    fn table_has_a_cell_per_engine_and_notes_for_failures() {
        let rows = [
            done("a", 58_123.0),
            Row::skipped("b", "bulk-load", "not built"),
        ];
        let t = table(&rows, &["a", "b"]);
        assert!(
            t.contains("| bulk load, one batch | 58.1k/s, WA 58123 | skipped [1] |"),
            "{t}"
        );
        assert!(t.contains("[1] b bulk-load: skipped: not built"), "{t}");
        assert_eq!(
            t.lines().filter(|l| l.starts_with("| ")).count(),
            2 + PHASES.len()
        );
    }
}
