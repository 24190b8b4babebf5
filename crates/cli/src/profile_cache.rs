//! `flashkv profile --cache cold,hot`: seed 002's cold and hot buffers, on
//! a real file (the page cache) or a simulated drive (the drive's cache),
//! across --file-sizes.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use flashkv_device::{presets, BlockDevice, DeviceSpec, SimDevice};
use flashkv_lab::cache::{self, CacheRow, SimRun};
use flashkv_lab::profile::Pattern;
use flashkv_lab::real::cache::CacheSpec;
use flashkv_lab::real::{self, Budget, HEADER};
use flashkv_lab::report::{f, size_label, Table};

use crate::error::{print_json, CliError};
use crate::files::{self, Created, Found};
use crate::profile::ProfileArgs;
use crate::progress::{Progress, Unit};

/// Seconds per run on a file when neither --ops nor --duration is given.
const DEFAULT_SECONDS: f64 = 5.0;

pub fn run(a: &ProfileArgs) -> Result<ExitCode, CliError> {
    // The default patterns (all four) become the read patterns.
    let all = [
        Pattern::SeqRead,
        Pattern::RandRead,
        Pattern::SeqWrite,
        Pattern::RandWrite,
    ];
    let reads;
    let a = if a.patterns == all {
        reads = ProfileArgs {
            patterns: vec![Pattern::SeqRead, Pattern::RandRead],
            ..a.clone()
        };
        &reads
    } else {
        a
    };
    check(a)?;
    let mut plot = Created::default();
    if let Some(svg) = &a.plot {
        check_plot(a, svg, &mut plot)?;
    }
    let (rows, title, warnings) = match &a.path {
        Some(path) => on_file(a, path)?,
        None => simulated(a)?,
    };
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    if let Some(svg) = &a.plot {
        cache::svg(&rows, &title)
            .and_then(|text| std::fs::write(svg, text))
            .map_err(|e| CliError::Usage(format!("--plot {}: {e}", svg.display())))?;
    }
    plot.keep();
    if a.json {
        print_json(&rows)?;
    } else {
        print!("{}", table(&title, &rows).text());
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses what a cache run cannot do, before anything is created.
fn check(a: &ProfileArgs) -> Result<(), CliError> {
    if let Some(p) = a.patterns.iter().find(|p| p.writes()) {
        return Err(CliError::Usage(format!(
            "--cache measures reads: --patterns {p} writes (use sr, rr)"
        )));
    }
    if a.warmup.is_some() {
        return Err(CliError::Usage(
            "--warmup does not apply with --cache: hot reads the file once first, cold reads nothing first".into(),
        ));
    }
    if let Some(s) = a.file_sizes.iter().find(|s| *s % HEADER != 0) {
        return Err(CliError::Usage(format!(
            "--file-sizes {}: not a multiple of 4 KiB",
            size_label(*s)
        )));
    }
    let smallest = a.file_sizes.iter().min().copied().or(a.span);
    if let (Some(s), Some(b)) = (smallest, a.block_sizes.iter().max()) {
        if *b > s {
            return Err(CliError::Usage(format!(
                "--block-sizes {}: larger than the file size {}",
                size_label(*b),
                size_label(s)
            )));
        }
    }
    Ok(())
}

/// The plot goes to a new file, or over an existing one with --force.
fn check_plot(a: &ProfileArgs, svg: &Path, created: &mut Created) -> Result<(), CliError> {
    if a.path.as_deref().is_some_and(|p| files::same_file(p, svg)) {
        return Err(CliError::Usage(format!(
            "--plot {}: the file being profiled",
            svg.display()
        )));
    }
    match files::inspect("--plot", svg)? {
        Found::Missing => created.add(svg),
        Found::File(_) if a.force => {}
        _ => {
            return Err(CliError::Usage(format!(
                "--plot {}: exists; pass --force to overwrite it",
                svg.display()
            )))
        }
    }
    Ok(())
}

type Rows = (Vec<CacheRow>, String, Vec<String>);

/// Every size, pattern, block size and cache state on a real file.
fn on_file(a: &ProfileArgs, path: &Path) -> Result<Rows, CliError> {
    let mut created = Created::default();
    if files::inspect("--path", path)? == Found::Missing {
        created.add(path);
    }
    let largest = a.file_sizes.iter().max().copied().or(a.span);
    let target = crate::profile_path::prepare(a, path, largest)?;
    let sizes = sizes(a, target.span);
    let budget = match (a.ops, a.duration) {
        (Some(n), _) => Budget::Ops(n),
        (None, d) => Budget::Time(Duration::from_secs_f64(d.unwrap_or(DEFAULT_SECONDS))),
    };
    let name = path.display().to_string();
    let specs = specs(a, &sizes, budget);
    let bar = Progress::new("profile --cache", specs.len() as u64, Unit::Count("points"));
    let (mut rows, mut warnings) = (Vec::new(), Vec::new());
    for (i, s) in specs.iter().enumerate() {
        let what = format!(
            "{} {} {} in {}",
            s.cache.name(),
            s.pattern,
            size_label(s.block_size),
            size_label(s.file_size)
        );
        bar.start(&what);
        let started = std::time::Instant::now();
        let (row, warning) = real::cache::run(&target, &name, s)?;
        if let Some(w) = warning.filter(|w| !warnings.contains(w)) {
            warnings.push(w);
        }
        rows.push(row);
        bar.finished(i as u64 + 1, &what, started.elapsed());
    }
    bar.finish();
    created.keep();
    let budget = match budget {
        Budget::Ops(n) => format!("{n} ops per point"),
        Budget::Time(d) => format!("{} s per point", d.as_secs_f64()),
    };
    let title = format!(
        "{name} — page cache cold (O_DIRECT) and hot (read once first), {budget}, iodepth {}",
        a.iodepth
    );
    Ok((rows, title, warnings))
}

fn sizes(a: &ProfileArgs, span: u64) -> Vec<u64> {
    if a.file_sizes.is_empty() {
        vec![span]
    } else {
        a.file_sizes.clone()
    }
}

fn specs(a: &ProfileArgs, sizes: &[u64], budget: Budget) -> Vec<CacheSpec> {
    let mut v = Vec::new();
    for &file_size in sizes {
        for &pattern in &a.patterns {
            for &block_size in &a.block_sizes {
                for &cache in &a.cache {
                    v.push(CacheSpec {
                        cache,
                        pattern,
                        block_size,
                        file_size,
                        budget,
                        iodepth: a.iodepth as usize,
                        seed: a.seed,
                    });
                }
            }
        }
    }
    v
}

/// The same on a simulated drive: its own cache, cold and hot.
fn simulated(a: &ProfileArgs) -> Result<Rows, CliError> {
    if a.duration.is_some() || (a.force && a.plot.is_none()) {
        return Err(CliError::Usage(
            "--duration and --force apply to --path (and --force to --plot) only".into(),
        ));
    }
    let spec = match (&a.device, &a.spec) {
        (Some(name), _) => presets::get(name)?,
        (None, Some(path)) => DeviceSpec::from_file(path)?,
        (None, None) => unreachable!("clap requires --device, --spec or --path"),
    };
    let capacity = SimDevice::new(&spec)?.geometry().capacity;
    let ops = a.ops.unwrap_or(2000);
    let mut rows = Vec::new();
    for file_size in sizes(a, a.span.unwrap_or(capacity)) {
        for &pattern in &a.patterns {
            for &block_size in &a.block_sizes {
                let run = SimRun {
                    pattern,
                    block_size,
                    ops,
                    file_size,
                    iodepth: a.iodepth as usize,
                    seed: a.seed,
                };
                rows.extend(run.rows(&spec, &a.cache)?);
            }
        }
    }
    let title = format!(
        "{} — drive cache cold (fresh) and hot (after one pass over the file), {ops} ops per point, iodepth {}",
        spec.name, a.iodepth
    );
    Ok((rows, title, Vec::new()))
}

fn table(title: &str, rows: &[CacheRow]) -> Table {
    let mut t = Table::new(
        title,
        &[
            "cache",
            "file",
            "pattern",
            "block",
            "IOPS",
            "MB/s",
            "mean µs",
            "p99 µs",
            "device read MB",
            "O_DIRECT",
        ],
    );
    for r in rows {
        t.push(vec![
            r.cache.name().to_string(),
            size_label(r.file_size),
            r.pattern.clone(),
            size_label(r.block_size),
            f(r.iops, 0),
            f(r.mb_per_s, 2),
            f(r.mean_latency_us, 1),
            f(r.p99_latency_us, 1),
            r.device_read_bytes
                .map_or("-".into(), |b| f(b as f64 / 1e6, 1)),
            r.direct
                .map_or("-".into(), |d| if d { "yes" } else { "no" }.into()),
        ]);
    }
    t
}
