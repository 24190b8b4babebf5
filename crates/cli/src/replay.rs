//! `flashkv replay`: run a public block trace on a simulated device or hybrid.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args, ValueEnum};
use flashkv_device::{presets, BlockDevice, DeviceSpec, DeviceStats, SimDevice};
use flashkv_hybrid::replay::{replay_mapped, DeviceMap, Latency, ReplayReport, Timing};
use flashkv_hybrid::trace::{open_file, Format, Records, TimeUnit, TraceError, TraceRecord};
use flashkv_hybrid::{HybridStats, Options};
use serde::Serialize;

use crate::error::{print_json, CliError};
use crate::hybrid::PairArg;
use crate::progress::{self, Progress};

/// Replay a block trace (MSR Cambridge CSV, SPC/UMass, DiskSim ASCII or
/// blkparse text) on a device preset or on a hybrid of two presets, and report
/// latency percentiles and device counters. Requests are issued at their trace
/// times (so they queue on a slower device) unless --back-to-back; ranges past
/// their device's end are folded back into it by whole 4 KiB units.
///
/// A trace file is read twice (a malformed line is found before anything
/// is replayed); a pipe (`--trace /dev/stdin`) is read once, and a
/// malformed line then ends the replay with an error and no report.
#[derive(Args)]
#[command(group = ArgGroup::new("target").required(true).args(["device", "spec", "hybrid"]))]
pub struct ReplayArgs {
    /// The trace file.
    #[arg(long, value_name = "FILE")]
    trace: PathBuf,
    /// Its format.
    #[arg(long, value_enum)]
    format: TraceFormat,
    /// Unit of the trace's timestamps [default: msr 100 ns ticks, spc and
    /// blkparse s, disksim ms]; DiskSim traces made for MQSim are in ns.
    #[arg(long, value_enum)]
    time_unit: Option<Unit>,
    /// Where each trace device (DiskSim device number, MSR disk number, SPC
    /// ASU) goes on the target: `shared` (all on the whole target, the
    /// default), `stride=SIZE` (device d at d×SIZE, SIZE bytes each), or
    /// `DEV=OFFSET,...` (each from its offset to the next listed one).
    #[arg(long, value_name = "MAP", value_parser = map_arg)]
    device_map: Option<DeviceMap>,
    /// A device preset (see `flashkv devices`).
    #[arg(long, value_name = "PRESET")]
    device: Option<String>,
    /// A device spec file (TOML; same fields as a preset).
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// Capacity of the --device or --spec device, or of a hybrid's HDD (the
    /// hybrid's size), instead of the preset's own: 512GiB or 512g (2^30
    /// bytes each), 500GB (10^9 bytes each).
    #[arg(long, value_name = "SIZE", value_parser = size_arg)]
    capacity: Option<u64>,
    /// Capacity of a hybrid's SSD cache instead of the preset's own.
    #[arg(long, value_name = "SIZE", value_parser = size_arg)]
    ssd_capacity: Option<u64>,
    /// A hybrid: the SSD cache, then the HDD. Two presets (e.g.
    /// ssd-lowend,hdd-7200), or the two files `flashkv hybrid create` made
    /// (with --force, as replay writes zeros into them, and --back-to-back).
    #[arg(long, value_name = "SSD,HDD")]
    hybrid: Option<String>,
    /// Replay on the files of a --hybrid pair, overwriting their data where
    /// the trace writes.
    #[arg(long, requires = "hybrid")]
    force: bool,
    /// Issue each request when the previous one completes.
    #[arg(long)]
    back_to_back: bool,
    /// Hybrid: promote a 4 KiB block into the SSD cache after this many small
    /// random HDD reads of it; 0 turns promotion off.
    #[arg(long, value_name = "N", default_value_t = Options::default().promote_after)]
    promote_after: u32,
    /// Hybrid: memory for resident mapping tablets (e.g. 64m).
    #[arg(long, value_name = "SIZE", value_parser = size_arg)]
    memory_limit: Option<u64>,
    /// Replay only the first N records.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Print only JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Unit {
    Ns,
    Us,
    Ms,
    S,
}

impl From<Unit> for TimeUnit {
    fn from(u: Unit) -> Self {
        match u {
            Unit::Ns => TimeUnit::Ns,
            Unit::Us => TimeUnit::Us,
            Unit::Ms => TimeUnit::Ms,
            Unit::S => TimeUnit::S,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum TraceFormat {
    Msr,
    Spc,
    Disksim,
    Blkparse,
}

impl From<TraceFormat> for Format {
    fn from(f: TraceFormat) -> Self {
        match f {
            TraceFormat::Msr => Format::Msr,
            TraceFormat::Spc => Format::Spc,
            TraceFormat::Disksim => Format::Disksim,
            TraceFormat::Blkparse => Format::Blkparse,
        }
    }
}

#[derive(Serialize)]
struct Output {
    trace: PathBuf,
    target: String,
    /// The target's addressable bytes.
    capacity: u64,
    timing: &'static str,
    #[serde(flatten)]
    report: ReplayReport,
    /// For a single device: its counters (NAND work, merges, mapping and
    /// data cache, multi-plane operations).
    #[serde(skip_serializing_if = "Option::is_none")]
    device: Option<DeviceStats>,
    /// For a hybrid: its own counters and those of each device.
    #[serde(skip_serializing_if = "Option::is_none")]
    hybrid: Option<HybridStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ssd: Option<DeviceStats>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hdd: Option<DeviceStats>,
}

pub fn run(a: ReplayArgs) -> ExitCode {
    match run_inner(a) {
        Ok(code) => code,
        Err(e) => e.exit(),
    }
}

/// The --device or --spec device, at --capacity if given.
fn single(a: &ReplayArgs) -> Result<(Box<dyn BlockDevice>, String), CliError> {
    let mut spec = match (&a.device, &a.spec) {
        (Some(name), _) => presets::get(name.trim()).map_err(|e| CliError::Usage(e.to_string()))?,
        (None, Some(path)) => DeviceSpec::from_file(path)
            .map_err(|e| CliError::Usage(format!("{}: {e}", path.display())))?,
        (None, None) => unreachable!("called with --device or --spec"),
    };
    if let Some(c) = a.capacity {
        spec.capacity = c;
    }
    let name = spec.name.clone();
    let dev = SimDevice::new(&spec).map_err(|e| CliError::Usage(e.to_string()))?;
    Ok((Box::new(dev), name))
}

type TraceFile = Records<std::io::BufReader<std::fs::File>>;

fn trace_error(a: &ReplayArgs, e: TraceError) -> CliError {
    match e {
        TraceError::Io(io) => CliError::Usage(format!("{}: {io}", a.trace.display())),
        other => CliError::Usage(format!("{}: {other}", a.trace.display())),
    }
}

/// The trace's records (up to --limit), read as they are used.
fn records(a: &ReplayArgs) -> Result<std::iter::Take<TraceFile>, CliError> {
    let unit = a.time_unit.map(TimeUnit::from);
    let r = open_file(a.format.into(), unit, &a.trace).map_err(|e| trace_error(a, e))?;
    Ok(r.take(a.limit.unwrap_or(usize::MAX)))
}

/// What the replay read of the trace: records and the time they span.
#[derive(Default)]
struct Seen {
    records: u64,
    last_ns: u64,
}

fn run_inner(a: ReplayArgs) -> Result<ExitCode, CliError> {
    // A first pass finds a malformed line before anything is replayed; both
    // passes stream, so a trace larger than memory replays. A pipe can be
    // read only once: it gets the replay's pass alone, without a count for
    // a progress bar.
    let file = std::fs::metadata(&a.trace).is_ok_and(|m| m.is_file());
    let mut bar = None;
    if file {
        let mut n = 0u64;
        for r in records(&a)? {
            r.map_err(|e| trace_error(&a, e))?;
            n += 1;
        }
        if n == 0 {
            return Err(CliError::Usage(no_records(&a)));
        }
        bar = Some(Progress::new("replay", n, progress::Unit::Count("records")));
    }
    let started = std::time::Instant::now();
    let (mut failure, mut seen) = (None, Seen::default());
    let stream = records(&a)?
        .map_while(|r| r.map_err(|e| failure = Some(e)).ok())
        .inspect(|r| {
            seen.records += 1;
            seen.last_ns = seen.last_ns.max(r.time_ns);
            if let Some(b) = bar.as_ref().filter(|_| seen.records % 4096 == 0) {
                b.advance_to(seen.records, "");
            }
        });
    let timing = if a.back_to_back {
        Timing::BackToBack
    } else {
        Timing::AsTraced
    };
    let out = match &a.hybrid {
        None => on_device(&a, stream, timing)?,
        Some(pair) => on_hybrid(&a, pair, stream, timing)?,
    };
    if let Some(e) = failure {
        return Err(trace_error(&a, e));
    }
    if let Some(b) = bar {
        b.finished(
            seen.records,
            &a.trace.display().to_string(),
            started.elapsed(),
        );
        b.finish();
    }
    if seen.records == 0 {
        return Err(CliError::Usage(no_records(&a)));
    }
    if let Some(w) = implausible_rate(&a, &seen) {
        eprintln!("warning: {w}");
    }
    if a.json {
        print_json(&out)?;
    } else {
        print_human(&out);
    }
    Ok(ExitCode::SUCCESS)
}

/// Fewer than one request a second over a trace of some length is no
/// block trace a person would replay: most likely its timestamps are in a
/// smaller unit than the format's default (DiskSim traces made for MQSim
/// are in ns). A few records say too little to judge.
fn implausible_rate(a: &ReplayArgs, seen: &Seen) -> Option<String> {
    const ENOUGH: u64 = 32;
    let span_s = seen.last_ns as f64 / 1e9;
    let rate = (seen.records - 1) as f64 / span_s.max(1e-9);
    if a.time_unit.is_some() || seen.records < ENOUGH || rate >= 1.0 {
        return None;
    }
    let unit = match a.format {
        TraceFormat::Msr => "100 ns ticks",
        TraceFormat::Spc | TraceFormat::Blkparse => "seconds",
        TraceFormat::Disksim => "milliseconds",
    };
    Some(format!(
        "{}: {} requests over {span_s:.0} s of trace time is {rate:.3} per second, too slow for a \
         block trace: are its timestamps in {unit} (the format's default)? If they are \
         nanoseconds, as in DiskSim traces made for MQSim, give --time-unit ns (or us)",
        a.trace.display(),
        seen.records
    ))
}

/// A device map the target cannot hold is the user's to fix.
fn replay_failed(e: flashkv_device::DeviceError) -> CliError {
    match e {
        flashkv_device::DeviceError::Spec(m) => CliError::Usage(m),
        e => CliError::Failed(e.to_string()),
    }
}

/// Replays on one device (a preset, a spec or a file).
fn on_device(
    a: &ReplayArgs,
    stream: impl Iterator<Item = TraceRecord>,
    timing: Timing,
) -> Result<Output, CliError> {
    if a.ssd_capacity.is_some() {
        return Err(CliError::Usage(
            "--ssd-capacity applies to --hybrid only".into(),
        ));
    }
    let map = a.device_map.clone().unwrap_or_default();
    let (mut dev, name) = single(a)?;
    let report = replay_mapped(&mut *dev, stream, timing, &map).map_err(replay_failed)?;
    Ok(Output {
        trace: a.trace.clone(),
        target: name,
        capacity: dev.geometry().capacity,
        timing: timing_name(timing),
        report,
        device: Some(dev.stats()),
        hybrid: None,
        ssd: None,
        hdd: None,
    })
}

/// Replays on a hybrid: two presets, or the two files `hybrid create` made.
fn on_hybrid(
    a: &ReplayArgs,
    pair: &str,
    stream: impl Iterator<Item = TraceRecord>,
    timing: Timing,
) -> Result<Output, CliError> {
    let pair = PairArg::parse(pair)?;
    if pair.is_files() && !a.force {
        return Err(CliError::Usage(format!(
            "--hybrid {}: replay writes zeros where the trace writes, over the pair's data; pass --force to replay on these files",
            a.hybrid.as_deref().unwrap_or_default()
        )));
    }
    if pair.is_files() && timing == Timing::AsTraced {
        return Err(CliError::Usage(
            "--hybrid on files: files run at their hardware's speed, not at trace times; add --back-to-back".into(),
        ));
    }
    let opts = Options {
        promote: a.promote_after > 0,
        promote_after: a.promote_after.max(1),
        memory_limit: a.memory_limit.unwrap_or(Options::default().memory_limit),
        ..Options::default()
    };
    let map = a.device_map.clone().unwrap_or_default();
    let (mut dev, target) = pair.open_sized(opts, a.ssd_capacity, a.capacity)?;
    let report = replay_mapped(&mut dev, stream, timing, &map).map_err(replay_failed)?;
    if pair.is_files() {
        // What the replay wrote is the files' data now: make it durable.
        let at = dev.clock();
        dev.flush_at(at)
            .map_err(|e| CliError::Failed(e.to_string()))?;
    }
    let (ssd, hdd) = dev.devices();
    Ok(Output {
        trace: a.trace.clone(),
        target,
        capacity: dev.geometry().capacity,
        timing: timing_name(timing),
        report,
        device: None,
        hybrid: Some(dev.hybrid_stats()),
        ssd: Some(ssd.stats()),
        hdd: Some(hdd.stats()),
    })
}

/// Why a trace gave nothing to replay; blkparse output may hold events of
/// other kinds only (D, C: issued, completed), which are not read.
fn no_records(a: &ReplayArgs) -> String {
    let shown = a.trace.display();
    match a.format {
        TraceFormat::Blkparse => format!(
            "{shown}: no records: flashkv replays blkparse's Q (queued) read and write events, one per request, and found none (trace with blktrace's default actions, not only D or C)"
        ),
        _ => format!("{shown}: no records"),
    }
}

fn map_arg(s: &str) -> Result<DeviceMap, String> {
    s.parse()
}

fn size_arg(s: &str) -> Result<u64, String> {
    crate::units::size(s)
}

fn timing_name(t: Timing) -> &'static str {
    match t {
        Timing::AsTraced => "as-traced",
        Timing::BackToBack => "back-to-back",
    }
}

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1000.0)
}

fn print_human(o: &Output) {
    let r = &o.report;
    println!(
        "replay {} on {} of {} ({})",
        o.trace.display(),
        o.target,
        crate::units::exact(o.capacity),
        o.timing
    );
    println!(
        "  records {}  reads {}  writes {}  skipped (empty) {}  folded {}",
        r.records, r.reads, r.writes, r.skipped, r.folded
    );
    println!(
        "  read {:.1} MiB  written {:.1} MiB  makespan {:.3} s",
        r.read_bytes as f64 / (1 << 20) as f64,
        r.write_bytes as f64 / (1 << 20) as f64,
        r.makespan_ns as f64 / 1e9
    );
    if r.per_device.len() > 1 {
        println!("  trace device   offset        reads     writes   read MiB  write MiB  folded");
        for d in &r.per_device {
            println!(
                "  {:<12} {:>8} {:>12} {:>10} {:>10.1} {:>10.1} {:>7}",
                d.device,
                if d.offset == 0 {
                    "0".into()
                } else {
                    flashkv_lab::report::size_label(d.offset)
                },
                d.reads,
                d.writes,
                d.read_bytes as f64 / (1 << 20) as f64,
                d.write_bytes as f64 / (1 << 20) as f64,
                d.folded
            );
        }
    }
    println!(
        "  throughput {:.0} IOPS  {:.2} MB/s  over a makespan of {:.3} s",
        r.iops,
        r.mb_per_s,
        r.makespan_ns as f64 / 1e9
    );
    println!("  latency (µs)   count      mean       p50       p95       p99     p99.9       max");
    for (name, l) in [
        ("all", r.latency),
        ("reads", r.read_latency),
        ("writes", r.write_latency),
    ] {
        row(name, l);
    }
    for (side, s) in [("", &o.device), ("SSD ", &o.ssd), ("HDD ", &o.hdd)] {
        for line in s.iter().flat_map(crate::internals::lines) {
            println!("  {side}{line}");
        }
    }
    if let Some(h) = &o.hybrid {
        println!(
            "  hybrid: writes to SSD {} / HDD {}, read hit ratio {:.3}, flushed {:.1} MiB at {:.1} MB/s, dirty {:.1} MiB, promotions {}, tablet swaps {} in / {} out",
            h.ssd_write_requests,
            h.hdd_write_requests,
            h.read_hit_ratio,
            h.flush_bytes as f64 / (1 << 20) as f64,
            h.flush_mb_per_s,
            h.dirty_bytes as f64 / (1 << 20) as f64,
            h.promotions,
            h.tablet_loads,
            h.tablet_stores
        );
    }
}

fn row(name: &str, l: Latency) {
    println!(
        "  {:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        name,
        l.count,
        us(l.mean_ns),
        us(l.p50_ns as f64),
        us(l.p95_ns as f64),
        us(l.p99_ns as f64),
        us(l.p999_ns as f64),
        us(l.max_ns as f64)
    );
}
