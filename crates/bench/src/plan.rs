//! What a benchmark run does, checked from the arguments, and running it:
//! every engine in its own process, rounds interleaved, then the medians
//! printed (and written with --out).

use std::path::{Path, PathBuf};

use crate::cgroup::Cgroup;
use crate::child::{self, Spec, Suite};
use crate::engine::{self, Setup, NAMES};
use crate::report::{self, Row};
use crate::ycsb::mix::by_letter;
use crate::ycsb::run::{Config, LOAD_BATCH};
use crate::{svg, table, Args};

const MIB: u64 = 1 << 20;
/// The error of a run stopped by a signal.
pub const INTERRUPTED: &str = "interrupted: the engines' files are removed, nothing is reported";
/// What a process needs besides the engine's cache: the heap an engine
/// keeps at its defaults besides the cache (RocksDB's 64 MiB write buffer,
/// fjall's memtables and journal, sled's structures), the program, and the
/// dirty pages of its writes. With 64 the first full run had redb, fjall,
/// sled and flashkv's in-place store killed for memory.
const HEADROOM_MIB: u64 = 96;

/// One scale a suite runs at.
#[derive(Debug, Clone)]
struct Scale {
    /// `None` for the seven phases.
    name: Option<&'static str>,
    suite: Suite,
    setup: Setup,
    /// The cgroup limit, when the machine allows one.
    limit: Option<u64>,
    /// Why there is no limit where one was asked for.
    unbounded: Option<String>,
}

pub struct Plan {
    engines: Vec<&'static str>,
    left_out: Vec<&'static str>,
    scales: Vec<Scale>,
    parent: PathBuf,
    repeat: u32,
    seed: u64,
}

impl Plan {
    /// The plan, or a one-line usage error.
    pub fn from_args(a: &Args) -> Result<Plan, String> {
        let (engines, left_out) = select(a)?;
        let parent = a.dir.clone().unwrap_or_else(|| PathBuf::from("/var/tmp"));
        if !parent.is_dir() {
            return Err(format!(
                "--dir {}: not an existing directory",
                parent.display()
            ));
        }
        if let Some(out) = &a.out {
            check_out(out)?;
        }
        let scales = if a.ycsb {
            ycsb_scales(a)?
        } else {
            phase_scale(a)?
        };
        Ok(Plan {
            engines,
            left_out,
            scales,
            parent,
            repeat: a.repeat,
            seed: a.seed,
        })
    }

    /// Runs every engine at every scale, `repeat` rounds, and prints.
    pub fn run(&self, a: &Args) -> Result<(), String> {
        check_space(&self.parent, &self.scales)?;
        let work = tempfile::Builder::new()
            .prefix("flashkv-bench-")
            .tempdir_in(&self.parent)
            .map_err(|e| format!("cannot make a directory in {}: {e}", self.parent.display()))?;
        for s in &self.scales {
            if let Some(why) = &s.unbounded {
                eprintln!("the larger-than-memory scale runs without a memory limit: {why}");
            }
        }
        if !self.left_out.is_empty() {
            eprintln!("left out (not built): {}", self.left_out_text());
        }
        let mut rows = Vec::new();
        let mut runs = 0;
        for round in 0..self.repeat {
            // Alternate the order so slow drift on a shared machine evens out.
            let mut order = self.engines.clone();
            if round % 2 == 1 {
                order.reverse();
            }
            for scale in &self.scales {
                for &engine in &order {
                    if crate::stop::asked() {
                        drop(work);
                        return Err(INTERRUPTED.into());
                    }
                    runs += 1;
                    rows.extend(self.run_one(scale, engine, round, runs, work.path()));
                }
            }
        }
        if crate::stop::asked() {
            drop(work);
            return Err(INTERRUPTED.into());
        }
        let mut rows = report::medians(&rows);
        for n in &self.left_out {
            let mut r = Row {
                engine: (*n).into(),
                suite: if a.ycsb { "ycsb" } else { "phases" }.into(),
                phase: "all".into(),
                op: "all".into(),
                repeats: 0,
                ..Row::default()
            };
            r.skipped = Some(format!("not built; enable with: {}", hint(n)));
            rows.push(r);
        }
        self.print(a, &rows)?;
        work.close()
            .map_err(|e| format!("cannot remove the work directory: {e}"))
    }

    fn run_one(&self, scale: &Scale, engine: &str, round: u32, n: u32, work: &Path) -> Vec<Row> {
        let cg = match scale.limit {
            Some(bytes) => {
                match Cgroup::create(&format!("flashkv-bench-{}-{n}", std::process::id()), bytes) {
                    Ok(cg) => Some(cg),
                    Err(e) => {
                        let mut r = scale.suite.ctx(engine).row(report::PROCESS, None);
                        r.error = Some(format!("cannot make the run's cgroup: {e}"));
                        return vec![r];
                    }
                }
            }
            None => None,
        };
        let spec = Spec {
            engine: engine.into(),
            suite: scale.suite.clone(),
            setup: scale.setup,
            dir: child::run_dir(work, engine, scale.name, round),
            seed: self.seed,
            cgroup_procs: cg.as_ref().map(Cgroup::procs),
        };
        child::spawn(&spec, cg.as_ref(), scale.limit)
    }

    fn left_out_text(&self) -> String {
        self.left_out
            .iter()
            .map(|n| format!("{n} (feature {})", engine::feature_of(n)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn print(&self, a: &Args, rows: &[Row]) -> Result<(), String> {
        let text = self.tables(a, rows);
        if a.json {
            for r in rows {
                println!("{}", serde_json::to_string(r).expect("rows serialise"));
            }
        } else {
            println!("{text}");
        }
        if let Some(out) = &a.out {
            self.write_out(out, &text, rows)?;
        }
        Ok(())
    }

    fn tables(&self, a: &Args, rows: &[Row]) -> String {
        let mut s = String::new();
        for scale in &self.scales {
            let of: Vec<&Row> = rows
                .iter()
                .filter(|r| r.scale.as_deref() == scale.name && r.phase != "all")
                .collect();
            s += &format!("{}\n\n", self.header(a, scale));
            let label = if a.ycsb { ycsb_label } else { phase_label };
            s += &table::tables(&of, &self.engines, label);
            s += "\n\n";
        }
        if !self.left_out.is_empty() {
            s += &format!("Left out (not built): {}.\n", self.left_out_text());
        }
        s
    }

    fn header(&self, a: &Args, scale: &Scale) -> String {
        let median = format!("median of {} run(s), engines interleaved", self.repeat);
        match &scale.suite {
            Suite::Phases { keys } => format!(
                "### Seven phases: {keys} keys (24-byte keys, 150-byte values), seed {}, {median}\n\n\
                 Every write is durable (synced) when it returns; each write phase then closes and \
                 reopens the engine, and \"WA through close\" counts what that wrote too.",
                self.seed
            ),
            Suite::Ycsb { config: c, .. } => {
                let data = c.records * c.value_size as u64;
                let memory = match (&scale.setup.cache_bytes, scale.limit, &scale.unbounded) {
                    (None, ..) => "Every engine with its default cache, memory unbounded".to_string(),
                    (Some(b), Some(l), _) => format!(
                        "Every engine given a {} MiB cache budget (its own setting); each engine's \
                         process limited to {} MiB (cgroup: heap and page cache)",
                        b >> 20,
                        l >> 20
                    ),
                    (Some(b), None, why) => format!(
                        "Every engine given a {} MiB cache budget (its own setting); memory \
                         unbounded ({})",
                        b >> 20,
                        why.as_deref().unwrap_or("no limit asked for")
                    ),
                };
                format!(
                    "### YCSB, {}: {} records of {} B ({:.1} MiB), {} operations per workload and \
                     thread count, seed {}, {median}\n\n{memory}. Load in durable batches of \
                     {LOAD_BATCH}; each update, insert and read-modify-write is one durable \
                     commit; each writing workload then closes and reopens the engine (WA through \
                     close). Threads: {:?}.",
                    if scale.name == Some("larger") { "larger than memory" } else { "data in memory" },
                    c.records,
                    c.value_size,
                    data as f64 / f64::from(1 << 20),
                    c.ops,
                    self.seed,
                    a.threads
                )
            }
        }
    }

    fn write_out(&self, out: &Path, text: &str, rows: &[Row]) -> Result<(), String> {
        let err = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
        std::fs::create_dir_all(out).map_err(|e| err(out, e))?;
        let md = out.join("bench.md");
        std::fs::write(&md, text).map_err(|e| err(&md, e))?;
        let jsonl = out.join("bench.jsonl");
        let lines: String = rows
            .iter()
            .map(|r| serde_json::to_string(r).expect("rows serialise") + "\n")
            .collect();
        std::fs::write(&jsonl, lines).map_err(|e| err(&jsonl, e))?;
        for fig in self.figures(rows) {
            let paths = svg::write(out, &fig, &self.engines).map_err(|e| err(out, e))?;
            for p in paths {
                eprintln!("wrote {}", p.display());
            }
        }
        Ok(())
    }

    fn figures<'a>(&self, rows: &'a [Row]) -> Vec<svg::Figure<'a>> {
        let mut figs = Vec::new();
        for scale in &self.scales {
            let of = |threads: Option<usize>| -> Vec<&'a Row> {
                rows.iter()
                    .filter(|r| r.scale.as_deref() == scale.name)
                    .filter(|r| threads.is_none() || r.threads == threads)
                    .collect()
            };
            match (&scale.suite, scale.name) {
                (Suite::Phases { .. }, _) => figs.push(svg::Figure {
                    stem: "phases".into(),
                    title: "Seven phases".into(),
                    categories: crate::phases::PHASES
                        .iter()
                        .map(|(p, _)| (*p, p.to_string()))
                        .collect(),
                    rows: of(None),
                }),
                (Suite::Ycsb { config, .. }, Some(name)) => {
                    for &t in &config.threads {
                        figs.push(svg::Figure {
                            stem: format!("ycsb-{name}-{t}t"),
                            title: format!("YCSB, {name} scale, {t} thread(s)"),
                            categories: config
                                .workloads
                                .iter()
                                .filter_map(|&l| by_letter(l))
                                .map(|w| (w.name, w.letter.to_string()))
                                .collect(),
                            rows: of(Some(t)),
                        });
                    }
                }
                (Suite::Ycsb { .. }, None) => {}
            }
        }
        figs
    }
}

fn hint(engine: &str) -> String {
    format!(
        "cargo run --release -p flashkv-bench --features {} -- ...",
        engine::feature_of(engine)
    )
}

/// The engines asked for (built ones, in order) and those this build lacks.
fn select(a: &Args) -> Result<(Vec<&'static str>, Vec<&'static str>), String> {
    let names: Vec<String> = match (&a.engines, a.quick) {
        (Some(e), _) => e.clone(),
        (None, true) => vec!["flashkv-inplace".into(), "flashkv-ipl".into()],
        (None, false) => NAMES.iter().map(|n| n.to_string()).collect(),
    };
    let (mut built, mut left_out) = (Vec::new(), Vec::new());
    for n in &names {
        let Some(&name) = NAMES.iter().find(|k| *k == n) else {
            return Err(format!(
                "unknown engine '{n}' (known: {})",
                NAMES.join(", ")
            ));
        };
        if built.contains(&name) || left_out.contains(&name) {
            return Err(format!("engine '{n}' given twice"));
        }
        match engine::opener(name) {
            Some(_) => built.push(name),
            None => left_out.push(name),
        }
    }
    Ok((built, left_out))
}

/// An output directory: missing (its parent must exist) or a directory.
fn check_out(out: &Path) -> Result<(), String> {
    match std::fs::metadata(out) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(format!(
            "--out {}: exists and is not a directory",
            out.display()
        )),
        Err(_) => {
            let parent = out
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if parent.is_dir() {
                Ok(())
            } else {
                Err(format!(
                    "--out {}: directory {} does not exist",
                    out.display(),
                    parent.display()
                ))
            }
        }
    }
}

fn phase_scale(a: &Args) -> Result<Vec<Scale>, String> {
    let keys = a.keys.unwrap_or(if a.quick { 2000 } else { 300_000 });
    Ok(vec![Scale {
        name: None,
        suite: Suite::Phases { keys },
        setup: Setup::default(),
        limit: None,
        unbounded: None,
    }])
}

fn ycsb_scales(a: &Args) -> Result<Vec<Scale>, String> {
    let mut workloads = Vec::new();
    for w in &a.workloads {
        let mut chars = w.trim().chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) if by_letter(c).is_some() => workloads.push(c.to_ascii_uppercase()),
            _ => return Err(format!("unknown workload '{w}' (known: a, b, c, d, e, f)")),
        }
    }
    let cache = a.cache_mib.unwrap_or(if a.quick { 1 } else { 64 }) * MIB;
    let config = |records: u64| Config {
        records,
        ops: a.ops.unwrap_or(if a.quick { 500 } else { 10_000 }),
        value_size: a.value_size as usize,
        threads: a.threads.iter().map(|&t| t as usize).collect(),
        workloads: workloads.clone(),
        seed: a.seed,
        max_seconds: a.max_seconds,
        load_seconds: a.load_seconds,
    };
    let records = a.records.unwrap_or(if a.quick { 1000 } else { 100_000 });
    let mut scales = vec![Scale {
        name: Some("memory"),
        suite: Suite::Ycsb {
            scale: "memory".into(),
            config: config(records),
        },
        setup: Setup::default(),
        limit: None,
        unbounded: None,
    }];
    let large = a.large_records.unwrap_or(4 * cache / a.value_size);
    if large > 0 {
        let limit_mib = a.memory_limit_mib.unwrap_or(cache / MIB + HEADROOM_MIB);
        let (limit, unbounded) = match limit_mib {
            0 => (None, Some("--memory-limit-mib 0".to_string())),
            m => match Cgroup::create(
                &format!("flashkv-bench-{}-probe", std::process::id()),
                m * MIB,
            ) {
                Ok(_probe) => (Some(m * MIB), None),
                Err(why) => (None, Some(format!("no cgroup: {why}"))),
            },
        };
        scales.push(Scale {
            name: Some("larger"),
            suite: Suite::Ycsb {
                scale: "larger".into(),
                config: config(large),
            },
            setup: Setup {
                cache_bytes: Some(cache),
            },
            limit,
            unbounded,
        });
    }
    Ok(scales)
}

/// Refuses to start when the file system cannot hold the largest store
/// with room to spare (flashkv's apparent size runs to several times the
/// data with its log).
fn check_space(dir: &Path, scales: &[Scale]) -> Result<(), String> {
    let data: u64 = scales
        .iter()
        .map(|s| match &s.suite {
            Suite::Phases { keys } => keys * 174,
            Suite::Ycsb { config: c, .. } => {
                let inserts = c.ops * c.threads.len() as u64;
                (c.records + inserts) * (c.value_size as u64 + 24)
            }
        })
        .max()
        .unwrap_or(0);
    let need = data * 8 + (1 << 30);
    let free = flashkv_device::free_space(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if free < need {
        return Err(format!(
            "{} has {} MB free; this run needs about {} MB (use --dir or a smaller scale)",
            dir.display(),
            free >> 20,
            need >> 20
        ));
    }
    Ok(())
}

fn phase_label(phase: &str) -> String {
    match phase {
        "bulk-load" => "bulk load, one batch",
        "put-durable" => "500 individual durable puts",
        "batch-durable" => "50 durable batches of 1,000",
        "put-durable-4-threads" => "1,000 durable puts",
        "read" => "random point reads",
        "range" => "10-key ranges from a random key",
        "delete-half" => "delete half the keys, one batch",
        "read-2-threads" => "random reads",
        other => other,
    }
    .into()
}

fn ycsb_label(phase: &str) -> String {
    match phase.chars().next().and_then(by_letter) {
        Some(w) if phase.len() == 1 => format!("{}: {}", w.letter, w.what),
        _ if phase == "load" => format!("load, durable batches of {LOAD_BATCH}"),
        _ => phase.into(),
    }
}
