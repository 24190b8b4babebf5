//! `flashkv profile --path`: the profiler on a real file or block device.

use std::path::Path;
use std::time::Duration;

use flashkv_lab::profile::ProfileRow;
use flashkv_lab::real::{self, Budget, RealSpec, TargetError, TargetOptions};
use flashkv_lab::report::size_label;

use crate::error::CliError;
use crate::profile::ProfileArgs;

/// Seconds per run when neither --ops nor --duration is given.
const DEFAULT_SECONDS: f64 = 5.0;
const DEFAULT_WARMUP: f64 = 1.0;

pub fn run(a: &ProfileArgs, path: &Path) -> Result<(Vec<ProfileRow>, String), CliError> {
    let writes = a.patterns.iter().any(|p| p.writes());
    let target = real::prepare(
        path,
        &TargetOptions {
            span: a.span,
            writes,
            force: a.force,
            direct: true,
        },
    )
    .map_err(target_error)?;
    if let Some(w) = &target.warning {
        eprintln!("warning: {w}");
    }
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

    // The bar counts thousandths of a run; indicatif draws only on a terminal.
    let bar = indicatif::ProgressBar::new(specs.len() as u64 * 1000);
    let name = path.display().to_string();
    let mut rows = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        bar.set_message(format!("{} {}", s.pattern, size_label(s.block_size)));
        let at = |frac: f64| bar.set_position(i as u64 * 1000 + (frac * 1000.0) as u64);
        rows.push(real::run(&mut devs, &name, s, &at)?);
        bar.set_position((i as u64 + 1) * 1000);
    }
    bar.finish_and_clear();

    let budget = match budget {
        Budget::Ops(n) => format!("{n} ops per point"),
        Budget::Time(d) => format!("{} s per point", d.as_secs_f64()),
    };
    let title = format!(
        "{name} — {budget}, iodepth {}, span {}{}",
        a.iodepth,
        size_label(target.span),
        if target.direct {
            ", O_DIRECT"
        } else {
            ", buffered"
        }
    );
    Ok((rows, title))
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
