//! Result rows (one JSON object each), and their median over repeats.

use serde::{Deserialize, Serialize};

use crate::latency::Latency;
use crate::measure::DirSize;
use crate::outcome::Outcome;

/// One measurement: a phase or workload of an engine ("all" its
/// operations, or one operation type), its disk use ("size") or its
/// process ("process": peak RSS, cgroup).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Row {
    pub engine: String,
    /// "phases" or "ycsb".
    pub suite: String,
    /// YCSB: "memory" (the engines' defaults) or "larger" (data about 4×
    /// the cache budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// "all", or an operation type of a mixed workload.
    pub op: String,
    pub ops_per_s: Option<f64>,
    /// Device bytes written during the phase ÷ user key+value bytes.
    pub wa: Option<f64>,
    /// Device bytes of the phase plus its close and reopen ÷ user bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wa_close: Option<f64>,
    pub seconds: Option<f64>,
    pub ops: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_us: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apparent_bytes: Option<u64>,
    /// The engine's process: its peak resident memory (`VmHWM`)...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
    /// ...and what the harness held before the engine opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_rss_bytes: Option<u64>,
    /// Peak memory of the run's cgroup (process and page cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_peak_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    /// Why the phase stopped before all its operations (its time limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// How many runs the numbers are the median of.
    pub repeats: usize,
}

/// Where rows come from: the engine, the suite and the scale.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub engine: String,
    pub suite: &'static str,
    pub scale: Option<String>,
}

pub const SIZE: &str = "size";
pub const PROCESS: &str = "process";

impl Ctx {
    pub fn row(&self, phase: &str, threads: Option<usize>) -> Row {
        Row {
            engine: self.engine.clone(),
            suite: self.suite.into(),
            scale: self.scale.clone(),
            phase: phase.into(),
            threads,
            op: "all".into(),
            repeats: 1,
            ..Row::default()
        }
    }

    /// The phase's row ("all" its operations), then one per operation
    /// type when it mixes several.
    pub fn outcome(&self, phase: &str, threads: usize, outcome: Outcome) -> Vec<Row> {
        let mut r = self.row(phase, Some(threads));
        let m = match outcome {
            Outcome::Done(m) => m,
            Outcome::Failed(e) => {
                return vec![Row {
                    error: Some(e),
                    ..r
                }]
            }
            Outcome::Skipped(why) => {
                return vec![Row {
                    skipped: Some(why),
                    ..r
                }]
            }
        };
        r.ops = Some(m.ops as u64);
        r.seconds = Some(m.seconds);
        r.stopped = m.stopped;
        r.ops_per_s = Some(m.ops as f64 / m.seconds.max(1e-9));
        if let Some((device, user)) = m.written {
            let user = user.max(1) as f64;
            r.wa = Some(device as f64 / user);
            r.wa_close = m.closed.map(|c| (device + c.bytes) as f64 / user);
            r.close_seconds = m.closed.map(|c| c.seconds);
        }
        let mut all = Latency::default();
        for (_, l) in &m.latency {
            all.merge(l);
        }
        set_percentiles(&mut r, &all);
        let mut rows = vec![r];
        if m.latency.len() > 1 {
            for (kind, l) in &m.latency {
                let mut k = self.row(phase, Some(threads));
                k.op = (*kind).into();
                k.ops = Some(l.count());
                set_percentiles(&mut k, l);
                rows.push(k);
            }
        }
        rows
    }

    pub fn size(&self, size: Result<DirSize, String>) -> Row {
        let mut r = self.row(SIZE, None);
        match size {
            Ok(s) => {
                r.allocated_bytes = Some(s.allocated);
                r.apparent_bytes = Some(s.apparent);
            }
            Err(e) => r.error = Some(e),
        }
        r
    }
}

fn set_percentiles(r: &mut Row, l: &Latency) {
    if let Some(p) = l.percentiles() {
        r.p50_us = Some(p.p50_us);
        r.p99_us = Some(p.p99_us);
        r.p999_us = Some(p.p999_us);
        r.max_us = Some(p.max_us);
    }
}

type Key<'a> = (
    &'a str,
    &'a str,
    Option<&'a str>,
    &'a str,
    Option<usize>,
    &'a str,
);

fn key(r: &Row) -> Key<'_> {
    (
        &r.engine,
        &r.suite,
        r.scale.as_deref(),
        &r.phase,
        r.threads,
        &r.op,
    )
}

/// One row per (engine, suite, scale, phase, threads, op) in first-seen
/// order: a failure in any run wins, then a skip, else the median of each
/// number over the runs.
pub fn medians(rows: &[Row]) -> Vec<Row> {
    let mut keys: Vec<Key<'_>> = Vec::new();
    for r in rows {
        if !keys.contains(&key(r)) {
            keys.push(key(r));
        }
    }
    keys.into_iter()
        .map(|k| {
            let runs: Vec<&Row> = rows.iter().filter(|r| key(r) == k).collect();
            combine(&runs)
        })
        .collect()
}

fn combine(runs: &[&Row]) -> Row {
    let pick = runs.iter().find(|r| r.error.is_some());
    let pick = pick.or_else(|| runs.iter().find(|r| r.skipped.is_some()));
    let mut out = (*pick.unwrap_or(&runs[0])).clone();
    out.repeats = runs.len();
    if pick.is_some() {
        return out;
    }
    let f = |get: fn(&Row) -> Option<f64>| median(runs.iter().map(|r| get(r)));
    let u = |get: fn(&Row) -> Option<u64>| {
        median(runs.iter().map(|r| get(r).map(|b| b as f64))).map(|b| b as u64)
    };
    out.ops_per_s = f(|r| r.ops_per_s);
    out.wa = f(|r| r.wa);
    out.wa_close = f(|r| r.wa_close);
    out.seconds = f(|r| r.seconds);
    out.p50_us = f(|r| r.p50_us);
    out.p99_us = f(|r| r.p99_us);
    out.p999_us = f(|r| r.p999_us);
    out.max_us = f(|r| r.max_us);
    out.close_seconds = f(|r| r.close_seconds);
    out.allocated_bytes = u(|r| r.allocated_bytes);
    out.apparent_bytes = u(|r| r.apparent_bytes);
    out.peak_rss_bytes = u(|r| r.peak_rss_bytes);
    out.harness_rss_bytes = u(|r| r.harness_rss_bytes);
    out.cgroup_peak_bytes = u(|r| r.cgroup_peak_bytes);
    out
}

/// The median of the present values (the lower middle one for an even count).
fn median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let mut v: Vec<f64> = values.flatten().collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{Closed, Measured};

    fn done(ops_per_s: f64, closed_bytes: u64) -> Vec<Row> {
        let mut read = Latency::default();
        read.record(2_000);
        let mut update = Latency::default();
        update.record(300_000);
        update.record(500_000);
        let m = Measured {
            ops: 3,
            seconds: 3.0 / ops_per_s,
            written: Some((1000, 500)),
            closed: Some(Closed {
                bytes: closed_bytes,
                seconds: 0.5,
            }),
            latency: vec![("read", read), ("update", update)],
            stopped: None,
        };
        let ctx = Ctx {
            engine: "a".into(),
            suite: "ycsb",
            scale: Some("memory".into()),
        };
        ctx.outcome("A", 4, Outcome::Done(m))
    }

    #[test]
    fn a_mixed_phase_has_an_all_row_and_one_per_type() {
        let rows = done(10.0, 250);
        assert_eq!(rows.len(), 3);
        let all = &rows[0];
        assert_eq!(
            (all.op.as_str(), all.ops, all.threads),
            ("all", Some(3), Some(4))
        );
        assert_eq!((all.wa, all.wa_close), (Some(2.0), Some(2.5)));
        assert!((all.p50_us.unwrap() - 300.0).abs() < 1.0, "{all:?}");
        assert!((all.max_us.unwrap() - 500.0).abs() < 1.0, "{all:?}");
        assert_eq!((rows[1].op.as_str(), rows[1].ops), ("read", Some(1)));
        assert!((rows[1].p99_us.unwrap() - 2.0).abs() < 0.01);
        assert_eq!(rows[2].ops_per_s, None);
        let json = serde_json::to_string(all).unwrap();
        let back: Row = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, all);
    }

    #[test]
    fn median_per_key_and_failure_wins() {
        let mut rows: Vec<Row> = [3.0, 1.0, 2.0].iter().flat_map(|&x| done(x, 0)).collect();
        let m = medians(&rows);
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].ops_per_s, m[0].repeats), (Some(2.0), 3));
        rows[3].error = Some("boom".into());
        let m = medians(&rows);
        assert_eq!((m[0].error.as_deref(), m[0].repeats), (Some("boom"), 3));
        assert_eq!(m[1].error, None);
    }
}
