//! `flashkv profile --path`: the profiler on a real file or block device.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use flashkv_lab::profile::ProfileRow;
use flashkv_lab::real::{
    self, Budget, RealSpec, TargetError, TargetOptions, DEFAULT_SPAN, HEADER, MARKER,
};
use flashkv_lab::report::size_label;

use crate::error::CliError;
use crate::files::{self, Created, Found};
use crate::profile::ProfileArgs;
use crate::progress::{Progress, Unit};

/// Seconds per run when neither --ops nor --duration is given.
const DEFAULT_SECONDS: f64 = 5.0;
const DEFAULT_WARMUP: f64 = 1.0;

pub fn run(a: &ProfileArgs, path: &Path) -> Result<(Vec<ProfileRow>, String), CliError> {
    let mut created = Created::default();
    if files::inspect("--path", path)? == Found::Missing {
        created.add(path);
    }
    let rows = measure(a, path)?;
    created.keep();
    Ok(rows)
}

/// Bytes preparing `path` adds: a new file, or the growth of one the
/// profiler made before. Foreign files and devices are never grown.
fn growth(path: &Path, span: Option<u64>) -> Result<u64, CliError> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(HEADER + span.unwrap_or(DEFAULT_SPAN));
    };
    let mut head = vec![0u8; MARKER.len()];
    let ours = meta.is_file()
        && std::fs::File::open(path)
            .and_then(|mut f| f.read_exact(&mut head))
            .is_ok()
        && head == MARKER;
    Ok(match (ours, span) {
        (true, Some(s)) => (HEADER + s).saturating_sub(meta.len()),
        _ => 0,
    })
}

fn measure(a: &ProfileArgs, path: &Path) -> Result<(Vec<ProfileRow>, String), CliError> {
    check_block_sizes(a, path)?;
    let target = prepare(a, path, a.span)?;
    let budget = match (a.ops, a.duration) {
        (Some(n), _) => Budget::Ops(n),
        (None, d) => Budget::Time(Duration::from_secs_f64(d.unwrap_or(DEFAULT_SECONDS))),
    };
    let specs: Vec<RealSpec> = a
        .patterns
        .iter()
        .flat_map(|&pattern| {
            a.block_sizes.iter().map(move |&block_size| RealSpec {
                pattern,
                block_size,
                base: target.base,
                span: target.span,
                budget,
                warmup: Duration::from_secs_f64(a.warmup.unwrap_or(DEFAULT_WARMUP)),
                seed: a.seed,
            })
        })
        .collect();
    let mut devs = target.open(a.iodepth as usize)?;
    let name = path.display().to_string();
    // Each run counts 1,000 units, moved by its measured phase's fraction.
    let bar = Progress::new("profile", specs.len() as u64 * 1000, Unit::Work);
    let mut rows = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let what = format!(
            "[{}/{}] {} {}",
            i + 1,
            specs.len(),
            s.pattern,
            size_label(s.block_size)
        );
        bar.start(&what);
        let started = std::time::Instant::now();
        let base = i as u64 * 1000;
        let running = format!(" ({what} running)");
        let tick = |f: f64| bar.advance_to(base + (f.clamp(0.0, 1.0) * 1000.0) as u64, &running);
        rows.push(real::run(&mut devs, &name, s, &tick)?);
        bar.finished(base + 1000, &what, started.elapsed());
    }
    bar.finish();
    let budget = match budget {
        Budget::Ops(n) => format!("{n} ops per point"),
        Budget::Time(d) => format!("{} s per point", d.as_secs_f64()),
    };
    let io = if target.direct {
        "O_DIRECT"
    } else {
        "buffered"
    };
    let title = format!(
        "{name} — {budget}, iodepth {}, span {}, {io}",
        a.iodepth,
        size_label(target.span),
    );
    Ok((rows, title))
}

/// Refuses a block size larger than the span, before anything is filled
/// (a misaligned span is refused by `prepare`, also before it fills).
fn check_block_sizes(a: &ProfileArgs, path: &Path) -> Result<(), CliError> {
    let span = a
        .span
        .or((!path.exists()).then_some(DEFAULT_SPAN))
        .filter(|s| s % HEADER == 0);
    let too_big = span.and_then(|s| a.block_sizes.iter().find(|&&b| b > s));
    if let (Some(span), Some(&bs)) = (span, too_big) {
        return Err(CliError::Usage(format!(
            "--block-sizes {}: larger than the span of {}",
            size_label(bs),
            size_label(span)
        )));
    }
    Ok(())
}

/// Lays out `span` to profile, filling what is new once the file
/// system is known to have room, with a progress bar.
pub(crate) fn prepare(
    a: &ProfileArgs,
    path: &Path,
    span: Option<u64>,
) -> Result<real::Target, CliError> {
    let need = growth(path, span)?;
    if need > 0 {
        files::ensure_room("--path", path, need)?;
    }
    // A new file's header is written apart from the fill.
    let fill_bytes = if path.exists() {
        need
    } else {
        need.saturating_sub(HEADER)
    };
    let started = std::time::Instant::now();
    let fill = Progress::new(
        &format!("filling {}", path.display()),
        fill_bytes,
        Unit::Bytes,
    );
    let target = real::prepare_with(
        path,
        &TargetOptions {
            span,
            writes: a.patterns.iter().any(|p| p.writes()),
            force: a.force,
            direct: true,
        },
        &mut |done, _| fill.advance_to(done, ""),
    )
    .map_err(target_error)?;
    if fill_bytes > 0 {
        fill.finished(fill_bytes, "done", started.elapsed());
    }
    fill.finish();
    if let Some(w) = &target.warning {
        eprintln!("warning: {w}");
    }
    Ok(target)
}

fn target_error(e: TargetError) -> CliError {
    use flashkv_device::DeviceError;
    use std::io::ErrorKind;
    match e {
        // A missing directory, no permission, or a mounted block device
        // refused for writing: the user's to fix.
        TargetError::Device(DeviceError::Io(e))
            if matches!(
                e.kind(),
                ErrorKind::NotFound | ErrorKind::PermissionDenied | ErrorKind::ResourceBusy
            ) =>
        {
            CliError::Usage(e.to_string())
        }
        TargetError::Device(d) => d.into(),
        other => CliError::Usage(other.to_string()),
    }
}
