//! Each engine runs in a process of its own (the benchmark runs itself
//! with a hidden `--child` argument), so its peak RSS is its own and a
//! cgroup can bound its memory. The child prints its rows as JSON lines;
//! the parent collects them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::cgroup::{self, Cgroup};
use crate::engine::{self, Setup};
use crate::measure;
use crate::outcome::Outcome;
use crate::report::{Ctx, Row, PROCESS};
use crate::session::Session;
use crate::workload::Workload;
use crate::{phases, ycsb};

/// What one child runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Suite {
    /// The seven phases on `keys` keys.
    Phases { keys: u64 },
    /// YCSB at one scale.
    Ycsb {
        scale: String,
        config: ycsb::run::Config,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    pub engine: String,
    pub suite: Suite,
    pub setup: Setup,
    /// The engine's directory: made by the child, removed when it ends.
    pub dir: PathBuf,
    pub seed: u64,
    /// The cgroup to join first (its `cgroup.procs`).
    pub cgroup_procs: Option<PathBuf>,
}

impl Suite {
    /// Where the rows of `engine` at this suite come from.
    pub fn ctx(&self, engine: &str) -> Ctx {
        let (suite, scale) = match self {
            Suite::Phases { .. } => ("phases", None),
            Suite::Ycsb { scale, .. } => ("ycsb", Some(scale.clone())),
        };
        Ctx {
            engine: engine.into(),
            suite,
            scale,
        }
    }
}

impl Spec {
    pub fn ctx(&self) -> Ctx {
        self.suite.ctx(&self.engine)
    }
}

/// Runs `spec` in a child process under `cg` (when given); its rows, with
/// a failed "process" row when it did not exit cleanly.
pub fn spawn(spec: &Spec, cg: Option<&Cgroup>, limit: Option<u64>) -> Vec<Row> {
    let ctx = spec.ctx();
    let failed = |e: String| {
        let mut r = ctx.row(PROCESS, None);
        r.error = Some(e);
        vec![r]
    };
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => return failed(format!("cannot find this program: {e}")),
    };
    let json = serde_json::to_string(spec).expect("a spec serialises");
    let child = Command::new(exe)
        .args(["--child", &json])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start the engine's process: {e}")),
    };
    crate::stop::child(Some(child.id()));
    let mut rows = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            match line
                .map_err(|e| e.to_string())
                .and_then(|l| serde_json::from_str::<Row>(&l).map_err(|e| format!("{e}: {l}")))
            {
                Ok(r) => rows.push(r),
                Err(e) => rows.extend(failed(format!(
                    "unreadable row from the engine's process: {e}"
                ))),
            }
        }
    }
    let status = child.wait();
    crate::stop::child(None);
    let peak = cg.and_then(Cgroup::peak);
    let done = match &status {
        Ok(s) if s.success() => None,
        Ok(s) => Some(exit_reason(*s, cg, limit)),
        Err(e) => Some(format!("lost the engine's process: {e}")),
    };
    match rows.iter_mut().find(|r| r.phase == PROCESS) {
        Some(p) => {
            p.cgroup_peak_bytes = peak;
            p.memory_limit_bytes = limit;
        }
        None => {
            let mut r = ctx.row(PROCESS, None);
            r.error =
                Some(done.unwrap_or_else(|| "the engine's process printed no summary".into()));
            r.cgroup_peak_bytes = peak;
            r.memory_limit_bytes = limit;
            rows.push(r);
        }
    }
    rows
}

fn exit_reason(s: std::process::ExitStatus, cg: Option<&Cgroup>, limit: Option<u64>) -> String {
    use std::os::unix::process::ExitStatusExt;
    let oom = cg.and_then(Cgroup::oom_kills).unwrap_or(0);
    match (s.signal(), limit) {
        (Some(9), Some(l)) if oom > 0 => format!(
            "killed for memory: the run needed more than its {} MiB cgroup limit",
            l >> 20
        ),
        (Some(sig), _) => format!("the engine's process was killed by signal {sig}"),
        (None, _) => format!("the engine's process exited with {s}"),
    }
}

/// The child's side: runs `spec`, printing each row as a JSON line.
pub fn run(spec: &Spec) -> Result<(), String> {
    let started = Instant::now();
    let ctx = spec.ctx();
    let Some(open) = engine::opener(&spec.engine) else {
        return Err(format!("engine {} is not in this build", spec.engine));
    };
    // The phases' pairs are made before the engine opens (and before the
    // harness's memory is read).
    let phases_workload = match &spec.suite {
        Suite::Phases { keys } => Some(Workload::new(*keys as usize, spec.seed)),
        Suite::Ycsb { .. } => None,
    };
    let harness = measure::rss_bytes().map(|(now, _)| now).ok();
    std::fs::create_dir(&spec.dir)
        .map_err(|e| format!("cannot make {}: {e}", spec.dir.display()))?;
    let emit = |rows: Vec<Row>| {
        for r in rows {
            progress(&r);
            let line = serde_json::to_string(&r).expect("rows serialise");
            let mut out = std::io::stdout().lock();
            // The parent reads to the end; a closed pipe means it is gone.
            let _ = writeln!(out, "{line}").and_then(|()| out.flush());
        }
    };
    match Session::create(open, spec.setup, &spec.dir) {
        Ok(mut s) => {
            let mut report = |phase: &str, threads: usize, o: Outcome| {
                emit(ctx.outcome(phase, threads, o));
            };
            match (&spec.suite, &phases_workload) {
                (Suite::Phases { .. }, Some(w)) => phases::run(&mut s, w, &mut report),
                (Suite::Ycsb { config, .. }, _) => {
                    let limit = |s: &mut Session| match &spec.cgroup_procs {
                        Some(procs) => under_limit(s, procs),
                        None => Ok(()),
                    };
                    ycsb::run::run(&mut s, config, limit, &mut report)
                }
                (Suite::Phases { .. }, None) => unreachable!("the workload is made above"),
            }
            let closed = s.finish();
            let size =
                closed.and_then(|()| measure::dir_size(&spec.dir).map_err(|e| e.to_string()));
            emit(vec![ctx.size(size)]);
        }
        Err(e) => {
            let mut r = ctx.row("open", None);
            r.error = Some(e);
            emit(vec![r]);
        }
    }
    if let Err(e) = std::fs::remove_dir_all(&spec.dir) {
        eprintln!("warning: cannot remove {}: {e}", spec.dir.display());
    }
    let mut p = ctx.row(PROCESS, None);
    p.seconds = Some(started.elapsed().as_secs_f64());
    p.peak_rss_bytes = measure::rss_bytes().map(|(_, peak)| peak).ok();
    p.harness_rss_bytes = harness;
    emit(vec![p]);
    Ok(())
}

/// After the load: the engine closed, its files synced and dropped from
/// the page cache, this process moved into the cgroup of the memory limit
/// and its peak RSS restarted, then the engine reopened. The load runs
/// unbounded (a limit that small would let it write only as fast as a
/// cgroup v1 flushes its dirty pages); the workloads run under the limit
/// on a cold cache.
fn under_limit(s: &mut Session, procs: &Path) -> Result<(), String> {
    s.rest(|dir| {
        measure::evict(dir).map_err(|e| format!("dropping the files from the page cache: {e}"))?;
        cgroup::join(procs)?;
        measure::reset_peak_rss().map_err(|e| format!("restarting the peak RSS: {e}"))
    })
}

/// One line on stderr per measurement, as it comes.
fn progress(r: &Row) {
    if r.op != "all" {
        return;
    }
    let what = match (&r.error, &r.skipped, r.ops_per_s) {
        (Some(e), ..) => format!("error: {e}"),
        (_, Some(s), _) => format!("skipped: {s}"),
        (.., Some(ops)) => {
            let wa = match (r.wa, r.wa_close) {
                (Some(w), Some(c)) => format!(", WA {w:.2}, through close {c:.2}"),
                (Some(w), None) => format!(", WA {w:.2}"),
                _ => String::new(),
            };
            let p99 = r
                .p99_us
                .map(|p| format!(", p99 {p:.0} µs"))
                .unwrap_or_default();
            let close = r
                .close_seconds
                .map(|c| format!(", close+reopen {c:.2} s"))
                .unwrap_or_default();
            let stopped = r
                .stopped
                .as_deref()
                .map(|s| format!("; {s}"))
                .unwrap_or_default();
            format!(
                "{ops:.0} ops/s{wa}{p99} ({:.2} s{close}){stopped}",
                r.seconds.unwrap_or_default()
            )
        }
        _ => match (r.allocated_bytes, r.peak_rss_bytes) {
            (Some(a), _) => format!(
                "{a} bytes allocated, {} apparent",
                r.apparent_bytes.unwrap_or_default()
            ),
            (_, Some(p)) => format!("peak RSS {} MB", p >> 20),
            _ => String::new(),
        },
    };
    let scale = r
        .scale
        .as_deref()
        .map(|s| format!(" [{s}]"))
        .unwrap_or_default();
    let threads = r.threads.map(|t| format!(" ×{t}")).unwrap_or_default();
    eprintln!("{}{scale} {}{threads}: {what}", r.engine, r.phase);
}

/// A directory name for one run of one engine.
pub fn run_dir(work: &Path, engine: &str, scale: Option<&str>, round: u32) -> PathBuf {
    match scale {
        Some(s) => work.join(format!("{engine}-{s}-{round}")),
        None => work.join(format!("{engine}-{round}")),
    }
}
