//! `flashkv profile`: access patterns × block sizes on a simulated device,
//! or (`--path`, in [`crate::profile_path`]) on a real file or block device.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use flashkv_device::{presets, BlockDevice, DeviceSpec, FtlCounters, SimDevice};
use flashkv_lab::profile::{self, Pattern, ProfileRow, ProfileSpec};
use flashkv_lab::report::{f, size_label, Table};

use crate::error::{print_json, CliError};
use crate::progress::{Progress, Unit};

/// Profile a simulated device: for each access pattern and block size, run
/// N requests (write patterns on a span written once beforehand, as fio users
/// precondition SSDs) and report IOPS, MB/s, mean and p99 latency (µs),
/// energy per operation (µJ) and erases. Each run starts on a fresh device.
/// On raw NAND a write to a programmed page is an in-place update (read the
/// erase unit, erase it, rewrite it).
///
/// With --path the same runs go to a real file or block device, timed by
/// the wall clock: O_DIRECT where the file system allows it, --iodepth
/// threads each with one synchronous request outstanding, a warm-up, and a
/// budget of --duration seconds or --ops requests per run. A missing file
/// is created at --span; an existing file that flashkv did not create, or a
/// block device, is only read unless --force; a mounted device is never written.
///
/// --cache cold,hot reads the file (or the start of a simulated drive) with
/// the cache cold and hot, at each of --file-sizes (seed 002's "Cold
/// Buffers vs. Hot Buffers"): on a file, cold bypasses the page cache with
/// O_DIRECT and hot reads the file once through it first, and each row
/// counts the bytes the kernel read from the device (/proc/self/io); on a
/// simulated drive the cache is the drive's own (an HDD's read segments).
#[derive(Args, Clone)]
#[command(group = clap::ArgGroup::new("target").required(true).args(["device", "spec", "path"]))]
pub struct ProfileArgs {
    /// A device preset (see `flashkv devices`).
    #[arg(long, value_name = "NAME")]
    pub(crate) device: Option<String>,
    /// A device spec file (TOML; same fields as a preset).
    #[arg(long, value_name = "FILE")]
    pub(crate) spec: Option<PathBuf>,
    /// A real file or block device to profile (created at --span if missing).
    #[arg(long, value_name = "FILE_OR_DEVICE")]
    pub(crate) path: Option<PathBuf>,
    /// Write even to an existing file flashkv did not create, or to an
    /// unmounted block device, destroying its contents (--path only).
    #[arg(long)]
    pub(crate) force: bool,
    /// Seconds each run lasts (--path only) [default: 5 when --ops is not given].
    #[arg(long, value_name = "SECONDS", conflicts_with = "ops", value_parser = crate::units::seconds)]
    pub(crate) duration: Option<f64>,
    /// Seconds of the same pattern run unmeasured before each run (--path only) [default: 1].
    #[arg(long, value_name = "SECONDS", value_parser = crate::units::seconds)]
    pub(crate) warmup: Option<f64>,
    /// Access patterns: sr (sequential read), rr (random read), sw, rw, mix (50/50 random).
    #[arg(long, value_delimiter = ',', default_value = "sr,rr,sw,rw", value_parser = parse_pattern)]
    pub(crate) patterns: Vec<Pattern>,
    /// Block sizes, e.g. 512,4k,64k,1m (k, m, g and KiB, MiB are powers of
    /// 1024; KB, MB, GB powers of 1000).
    #[arg(long, value_delimiter = ',', default_value = "4k,16k,64k,256k,1m", value_parser = parse_block)]
    pub(crate) block_sizes: Vec<u64>,
    /// Measured requests per pattern and block size, 1 to 1e12 (e.g. 1e10;
    /// latencies go into a histogram, so memory does not grow with it)
    /// [default: 2000 on a simulated device].
    #[arg(long, value_parser = parse_ops)]
    pub(crate) ops: Option<u64>,
    /// Bytes of the device the requests fall in, from offset 0, e.g. 64g or
    /// 300GB (GB = 10^9 bytes, GiB and g = 2^30) [default: the whole device;
    /// for a new --path file 256M].
    #[arg(long, value_parser = parse_span)]
    pub(crate) span: Option<u64>,
    /// Requests kept outstanding; the device uses what concurrency its model
    /// has (HDD command reordering, NAND channels and dies).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) iodepth: u64,
    /// Seed for random offsets: same seed, same numbers.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Read with the cache cold, hot or both (cold,hot): cold bypasses the
    /// page cache (O_DIRECT; where the file system refuses it, the file's
    /// cached pages are dropped first, with a warning), hot reads the file
    /// once through it first. Read patterns only (the default patterns
    /// become sr,rr); no --warmup.
    #[arg(long, value_delimiter = ',', value_parser = parse_cache)]
    pub(crate) cache: Vec<flashkv_lab::cache::Cache>,
    /// File sizes to read within, from the start of the file or drive, e.g.
    /// 32m,64m,128m,256m,512m,1g,2g (with --cache; the file is laid out at
    /// the largest) [default: --span].
    #[arg(long, value_delimiter = ',', value_parser = parse_span, requires = "cache", conflicts_with = "span")]
    pub(crate) file_sizes: Vec<u64>,
    /// Also draw the cold and hot curves against the file size as SVG (with --cache).
    #[arg(long, value_name = "FILE.svg", requires = "cache")]
    pub(crate) plot: Option<PathBuf>,
    /// Print the rows as JSON on stdout.
    #[arg(long)]
    pub(crate) json: bool,
}

fn parse_cache(s: &str) -> Result<flashkv_lab::cache::Cache, String> {
    flashkv_lab::cache::Cache::parse(s)
        .ok_or_else(|| format!("unknown cache state '{s}' (cold, hot)"))
}

fn parse_pattern(s: &str) -> Result<Pattern, String> {
    Pattern::parse(s).ok_or_else(|| format!("unknown pattern '{s}' (sr, rr, sw, rw, mix)"))
}

fn parse_block(s: &str) -> Result<u64, String> {
    crate::units::nonzero_size(s)
}

fn parse_span(s: &str) -> Result<u64, String> {
    crate::units::nonzero_size(s)
}

/// A request count: an integer or a whole number in exponent form (1e10).
fn parse_ops(s: &str) -> Result<u64, String> {
    let max = flashkv_lab::profile::MAX_OPS;
    let v = s
        .parse::<u64>()
        .ok()
        .or_else(|| {
            let f = s.parse::<f64>().ok()?;
            (f.fract() == 0.0 && f >= 1.0 && f <= max as f64).then_some(f as u64)
        })
        .filter(|v| (1..=max).contains(v));
    v.ok_or_else(|| format!("'{s}' is not a whole number of requests from 1 to {max} (1e12)"))
}

pub fn run(a: ProfileArgs) -> Result<ExitCode, CliError> {
    if !a.cache.is_empty() {
        return crate::profile_cache::run(&a);
    }
    let (rows, title) = match &a.path {
        Some(path) => crate::profile_path::run(&a, path)?,
        None => simulated(&a)?,
    };
    if a.json {
        print_json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", table(title, &rows).text());
    if let Some(t) = internals_table(&rows) {
        print!("\n{}", t.text());
    }
    Ok(ExitCode::SUCCESS)
}

fn simulated(a: &ProfileArgs) -> Result<(Vec<ProfileRow>, String), CliError> {
    if a.duration.is_some() || a.warmup.is_some() || a.force {
        return Err(CliError::Usage(
            "--duration, --warmup and --force apply to --path only".into(),
        ));
    }
    let ops = a.ops.unwrap_or(2000);
    let spec = match (&a.device, &a.spec) {
        (Some(name), _) => presets::get(name)?,
        (None, Some(path)) => DeviceSpec::from_file(path)?,
        (None, None) => unreachable!("clap requires --device or --spec"),
    };
    // One device at a time, and none built just to read the capacity: the
    // first run's device answers the checks, and each run starts fresh.
    let probe = SimDevice::new(&spec)?;
    let span = a.span.unwrap_or(probe.geometry().capacity);
    // Check every combination before running any, so bad input fails fast.
    let specs: Vec<ProfileSpec> = a
        .patterns
        .iter()
        .flat_map(|&pattern| {
            a.block_sizes.iter().map(move |&block_size| ProfileSpec {
                pattern,
                block_size,
                ops,
                span,
                iodepth: a.iodepth as usize,
                seed: a.seed,
            })
        })
        .collect();
    for s in &specs {
        profile::validate(&probe, s)?;
    }
    let rows = run_all(&spec, &specs, probe)?;
    let title = format!(
        "{} — {ops} ops per point, iodepth {}, span {}",
        spec.name,
        a.iodepth,
        crate::units::exact(span)
    );
    Ok((rows, title))
}

/// Runs each point on a fresh device (the first on `probe`, unused so
/// far), with progress over the work of all of them (requests, and MiB of
/// preconditioning), so a long point moves.
fn run_all(
    spec: &DeviceSpec,
    specs: &[ProfileSpec],
    probe: SimDevice,
) -> Result<Vec<ProfileRow>, CliError> {
    let mut first = Some(probe);
    let total: u64 = specs.iter().map(profile::work).sum();
    let bar = Progress::new("profile", total, Unit::Work);
    let (mut rows, mut done) = (Vec::new(), 0u64);
    for (i, s) in specs.iter().enumerate() {
        let what = format!(
            "[{}/{}] {} {}",
            i + 1,
            specs.len(),
            s.pattern,
            size_label(s.block_size)
        );
        bar.start(&what);
        let started = Instant::now();
        let mut dev = match first.take() {
            Some(dev) => dev,
            None => SimDevice::new(spec)?,
        };
        let running = format!(" ({what} running)");
        rows.push(profile::run_observed(&mut dev, &spec.name, s, &mut |n| {
            done += n;
            bar.advance_to(done, &running);
        })?);
        bar.finished(done, &what, started.elapsed());
    }
    bar.finish();
    Ok(rows)
}

/// What the FTL's merges, mapping cache, data cache and planes did in each
/// run: the columns of the mechanisms some run used, if any did.
fn internals_table(rows: &[ProfileRow]) -> Option<Table> {
    type Column = (&'static str, fn(&FtlCounters) -> String);
    type Group = (fn(&FtlCounters) -> bool, &'static [Column]);
    let groups: [Group; 4] = [
        (
            |c| c.switch_merges + c.partial_merges + c.full_merges > 0,
            &[
                ("switch merges", |c| c.switch_merges.to_string()),
                ("partial", |c| c.partial_merges.to_string()),
                ("full", |c| c.full_merges.to_string()),
            ],
        ),
        (
            |c| c.map_cache_hits + c.map_cache_misses > 0,
            &[
                ("map hits %", |c| f(100.0 * c.map_hit_ratio(), 1)),
                ("transl. reads", |c| c.translation_reads.to_string()),
                ("transl. writes", |c| c.translation_writes.to_string()),
            ],
        ),
        (
            |c| c.cache_writes + c.cache_read_hits > 0,
            &[
                ("cached writes", |c| c.cache_writes.to_string()),
                ("absorbed", |c| c.cache_write_hits.to_string()),
                ("destaged", |c| c.cache_destages.to_string()),
                ("read hits", |c| c.cache_read_hits.to_string()),
            ],
        ),
        (
            |c| c.multi_plane_ops > 0,
            &[("multi-plane ops", |c| c.multi_plane_ops.to_string())],
        ),
    ];
    let used: Vec<&Column> = groups
        .iter()
        .filter(|(any, _)| rows.iter().any(|r| any(&r.ftl)))
        .flat_map(|(_, cols)| cols.iter())
        .collect();
    if used.is_empty() {
        return None;
    }
    let mut head = vec!["pattern", "block"];
    head.extend(used.iter().map(|c| c.0));
    let mut t = Table::new("FTL internals per run".to_string(), &head);
    for r in rows {
        let mut cells = vec![r.pattern.clone(), size_label(r.block_size)];
        cells.extend(used.iter().map(|c| (c.1)(&r.ftl)));
        t.push(cells);
    }
    Some(t)
}

fn table(title: String, rows: &[ProfileRow]) -> Table {
    let mut t = Table::new(
        title,
        &[
            "pattern",
            "block",
            "IOPS",
            "MB/s",
            "mean µs",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
            "max µs",
            "µJ/op",
            "erases",
        ],
    );
    for r in rows {
        t.push(vec![
            r.pattern.clone(),
            size_label(r.block_size),
            f(r.iops, 0),
            f(r.mb_per_s, 2),
            f(r.mean_latency_us, 1),
            f(r.p50_latency_us, 1),
            f(r.p99_latency_us, 1),
            f(r.p999_latency_us, 1),
            f(r.max_latency_us, 1),
            f(r.energy_uj_per_op, 2),
            r.erases.to_string(),
        ]);
    }
    t
}
