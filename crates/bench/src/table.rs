//! The Markdown tables people read: throughput (with WA), latency
//! percentiles, and each engine's process and files.

use crate::report::{Row, PROCESS, SIZE};

/// The (phase, threads, op) of the rows, in first-seen order.
fn keys(rows: &[&Row]) -> Vec<(String, Option<usize>, String)> {
    let mut out: Vec<(String, Option<usize>, String)> = Vec::new();
    for r in rows {
        let k = (r.phase.clone(), r.threads, r.op.clone());
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// A table with a row per label and a cell per engine; failed and
/// skipped cells get a numbered note under it.
struct Grid<'a> {
    engines: &'a [&'a str],
    text: String,
    notes: Vec<String>,
}

impl<'a> Grid<'a> {
    fn new(head: &str, engines: &'a [&'a str]) -> Grid<'a> {
        let text = format!(
            "| {head} | {} |\n|---|{}\n",
            engines.join(" | "),
            "---|".repeat(engines.len())
        );
        Grid {
            engines,
            text,
            notes: Vec::new(),
        }
    }

    fn line(
        &mut self,
        label: &str,
        find: impl Fn(&str) -> Option<&'a Row>,
        cell: fn(&Row) -> String,
    ) {
        self.text += &format!("| {label} |");
        for e in self.engines {
            let c = match find(e) {
                Some(r) => match r.error.as_ref().or(r.skipped.as_ref()) {
                    Some(why) => {
                        let what = if r.error.is_some() {
                            "error"
                        } else {
                            "skipped"
                        };
                        self.notes
                            .push(format!("{} {}: {what}: {why}", r.engine, r.phase));
                        format!("{what} [{}]", self.notes.len())
                    }
                    None => match &r.stopped {
                        Some(why) => {
                            self.notes.push(format!("{} {}: {why}", r.engine, r.phase));
                            format!("{} [{}]", cell(r), self.notes.len())
                        }
                        None => cell(r),
                    },
                },
                None => "–".into(),
            };
            self.text += &format!(" {c} |");
        }
        self.text.push('\n');
    }

    fn done(self) -> String {
        let mut s = self.text;
        for (i, n) in self.notes.iter().enumerate() {
            s += &format!("\n[{}] {}", i + 1, n.replace('\n', " "));
        }
        s
    }
}

fn threads_label(t: Option<usize>) -> String {
    match t {
        Some(1) | None => String::new(),
        Some(n) => format!(" · {n} threads"),
    }
}

/// Tables for one suite (and YCSB scale): `label` names a phase.
pub fn tables(rows: &[&Row], engines: &[&str], label: fn(&str) -> String) -> String {
    let find = |phase: &str, threads: Option<usize>, op: &str| finder(rows, phase, threads, op);
    let measured: Vec<_> = keys(rows)
        .into_iter()
        .filter(|(p, _, _)| p != SIZE && p != PROCESS)
        .collect();
    let mut thr = Grid::new("throughput (WA; WA through close)", engines);
    let mut lat = Grid::new("latency p50 / p99 / p99.9 / max", engines);
    for (phase, threads, op) in &measured {
        let name = format!("{}{}", label(phase), threads_label(*threads));
        if op == "all" {
            thr.line(&name, find(phase, *threads, op), throughput);
        }
        let mixed = measured
            .iter()
            .any(|(p, t, o)| p == phase && t == threads && o != "all");
        if op != "all" || !mixed {
            let what = if op == "all" {
                String::new()
            } else {
                format!(" — {op}")
            };
            lat.line(&format!("{name}{what}"), find(phase, *threads, op), latency);
        }
    }
    let mut acc = Grid::new("engine process and files", engines);
    acc.line(
        "peak RSS (harness before open)",
        find(PROCESS, None, "all"),
        rss,
    );
    acc.line(
        "cgroup peak (process + page cache)",
        find(PROCESS, None, "all"),
        cgroup,
    );
    acc.line(
        "files after close (allocated, apparent)",
        find(SIZE, None, "all"),
        size,
    );
    format!("{}\n\n{}\n\n{}", thr.done(), lat.done(), acc.done())
}

/// The row of an engine for (phase, threads, op).
fn finder<'a>(
    rows: &[&'a Row],
    phase: &str,
    threads: Option<usize>,
    op: &str,
) -> impl Fn(&str) -> Option<&'a Row> {
    let found: Vec<&'a Row> = rows
        .iter()
        .copied()
        .filter(|r| r.phase == phase && r.threads == threads && r.op == op)
        .collect();
    move |e: &str| found.iter().copied().find(|r| r.engine == e)
}

fn throughput(r: &Row) -> String {
    let mut c = r.ops_per_s.map(rate).unwrap_or_default();
    if let Some(wa) = r.wa {
        c += &format!(", WA {}", sig(wa));
        if let Some(w) = r.wa_close {
            c += &format!("; {}", sig(w));
        }
    }
    if r.seconds.is_some_and(|s| s >= 10.0) {
        c += &format!(" ({:.0} s)", r.seconds.unwrap_or_default());
    }
    c
}

fn latency(r: &Row) -> String {
    match (r.p50_us, r.p99_us, r.p999_us, r.max_us) {
        (Some(a), Some(b), Some(c), Some(d)) => {
            format!("{} / {} / {} / {}", time(a), time(b), time(c), time(d))
        }
        _ => "–".into(),
    }
}

fn rss(r: &Row) -> String {
    match (r.peak_rss_bytes, r.harness_rss_bytes) {
        (Some(p), Some(h)) => format!("{} ({})", bytes(p), bytes(h)),
        (Some(p), None) => bytes(p),
        _ => "–".into(),
    }
}

fn cgroup(r: &Row) -> String {
    match (r.cgroup_peak_bytes, r.memory_limit_bytes) {
        (Some(p), Some(l)) => format!("{} of {}", bytes(p), bytes(l)),
        _ => "unbounded".into(),
    }
}

fn size(r: &Row) -> String {
    match (r.allocated_bytes, r.apparent_bytes) {
        (Some(a), Some(p)) => format!("{} ({})", bytes(a), bytes(p)),
        _ => "–".into(),
    }
}

pub fn rate(ops: f64) -> String {
    match ops {
        x if x >= 1e6 => format!("{}M/s", sig(x / 1e6)),
        x if x >= 1e3 => format!("{}k/s", sig(x / 1e3)),
        x => format!("{}/s", sig(x)),
    }
}

/// Microseconds in the unit that suits them.
pub fn time(us: f64) -> String {
    match us {
        x if x >= 1e6 => format!("{} s", sig(x / 1e6)),
        x if x >= 1e3 => format!("{} ms", sig(x / 1e3)),
        x => format!("{} µs", sig(x)),
    }
}

pub fn bytes(b: u64) -> String {
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
    use crate::report::Ctx;

    fn row(engine: &str, phase: &str, op: &str) -> Row {
        let ctx = Ctx {
            engine: engine.into(),
            suite: "ycsb",
            scale: None,
        };
        let mut r = ctx.row(phase, Some(1));
        r.op = op.into();
        r.ops_per_s = Some(58_123.0);
        r.wa = Some(2.0);
        r.wa_close = Some(3.5);
        (r.p50_us, r.p99_us, r.p999_us, r.max_us) =
            (Some(12.0), Some(250.0), Some(1500.0), Some(2.5e6));
        r
    }

    #[test]
    fn cells_per_engine_latency_per_type_and_notes_for_failures() {
        let mut failed = row("b", "A", "all");
        failed.error = Some("Full(write-ahead log)".into());
        let rows = [
            row("a", "A", "all"),
            row("a", "A", "read"),
            row("a", "A", "update"),
            failed,
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        let t = tables(&refs, &["a", "b"], |p| format!("workload {p}"));
        assert!(
            t.contains("| workload A | 58.1k/s, WA 2.00; 3.50 | error [1] |"),
            "{t}"
        );
        assert!(t.contains("[1] b A: error: Full(write-ahead log)"), "{t}");
        assert!(
            t.contains("| workload A — read | 12.0 µs / 250 µs / 1.50 ms / 2.50 s | – |"),
            "{t}"
        );
        assert!(!t.contains("| workload A | 12.0 µs"), "{t}");
        assert!(
            t.contains("| files after close (allocated, apparent) | – | – |"),
            "{t}"
        );
    }
}
