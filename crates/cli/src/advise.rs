//! `flashkv advise`: block sizes, scan-versus-random breakeven and the
//! five-minute rule for a device model or a measured profile.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use flashkv_device::{presets, DeviceSpec};
use flashkv_engine::IoProfile;
use flashkv_lab::advisor::{self, Advice, AdviceError, AdviceOptions, DeviceClass};
use flashkv_lab::profile::ProfileRow;
use flashkv_lab::report::{f, size_label, Table};

use crate::error::{print_json, CliError};

/// Advise on a device: per access pattern (sr, rr, sw, rw) the best block
/// size and why, seed 000's Algorithm 1 answer for the device class beside
/// it, the fraction of a file that can be read page by page at random before
/// a full sequential read is cheaper (seed 002's rule of thumb), Gray's
/// five-minute rule for caching a page in RAM, and energy per GB.
///
/// A model (--device, --spec) is profiled in simulation over --file-size;
/// a profile (--profile, the JSON of `flashkv profile`) is taken as measured.
#[derive(Args)]
#[command(group = clap::ArgGroup::new("target").required(true).args(["device", "spec", "profile"]))]
pub struct AdviseArgs {
    /// A device preset (see `flashkv devices`).
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
    /// A device spec file (TOML; same fields as a preset).
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// Rows written by `flashkv profile --json` (sr and rr rows at least,
    /// including rr at the page size).
    #[arg(long, value_name = "PROFILE.json")]
    profile: Option<PathBuf>,
    /// Size of the file the random reads fall in [default: the whole device].
    #[arg(long, value_name = "SIZE", value_parser = parse_positive)]
    file_size: Option<u64>,
    /// Database page size: the unit of a random read.
    #[arg(long, default_value = "4k", value_parser = parse_positive)]
    page_size: u64,
    /// Requests outstanding in the simulated profile (SSD random figures
    /// are rated at 32) [default: 32; not with --profile].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024))]
    iodepth: Option<u64>,
    /// Requests per simulated point [default: 300; not with --profile].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    ops: Option<u64>,
    /// Price of the device in USD (five-minute rule).
    #[arg(long, default_value_t = 100.0, value_parser = parse_price)]
    device_usd: f64,
    /// Price of RAM in USD per GiB (five-minute rule).
    #[arg(long, default_value_t = 3.0, value_parser = parse_price)]
    ram_usd_per_gb: f64,
    /// Print the advice as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

fn parse_positive(s: &str) -> Result<u64, String> {
    crate::units::nonzero_size(s)
}

fn parse_price(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a positive price")),
    }
}

pub fn run(a: AdviseArgs) -> Result<ExitCode, CliError> {
    let o = AdviceOptions {
        page_size: a.page_size,
        file_size: a.file_size,
        iodepth: a.iodepth.unwrap_or(32) as usize,
        ops: a.ops.unwrap_or(300),
        device_usd: a.device_usd,
        ram_usd_per_gb: a.ram_usd_per_gb,
        seed: 1,
    };
    let (rows, class) = match (&a.device, &a.spec, &a.profile) {
        (Some(name), _, _) => modelled(presets::get(name)?, &o)?,
        (None, Some(path), _) => modelled(DeviceSpec::from_file(path)?, &o)?,
        (None, None, Some(path)) => {
            if a.file_size.is_some() {
                return Err(CliError::Usage(
                    "--file-size applies to a model; profile a span of that size with `flashkv profile --span`".into(),
                ));
            }
            if a.ops.is_some() || a.iodepth.is_some() {
                return Err(CliError::Usage(
                    "--ops and --iodepth apply to a model; a --profile was measured with its own"
                        .into(),
                ));
            }
            measured(path)?
        }
        (None, None, None) => unreachable!("clap requires --device, --spec or --profile"),
    };
    let advice = advisor::advise(&rows, class, &o).map_err(|e| match e {
        AdviceError::Profile(p) => p.into(),
        other => CliError::Usage(other.to_string()),
    })?;
    if a.json {
        print_json(&advice)?;
    } else {
        print!("{}", text(&advice, &o));
    }
    Ok(ExitCode::SUCCESS)
}

fn modelled(
    spec: DeviceSpec,
    o: &AdviceOptions,
) -> Result<(Vec<ProfileRow>, DeviceClass), CliError> {
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_message(format!("profiling {} in simulation", spec.name));
    spinner.enable_steady_tick(std::time::Duration::from_millis(100));
    let rows = advisor::profile_model(&spec, o)?;
    spinner.finish_and_clear();
    Ok((rows, DeviceClass::of_model(&spec.model)))
}

fn measured(path: &PathBuf) -> Result<(Vec<ProfileRow>, DeviceClass), CliError> {
    let bad = |e: String| CliError::Usage(format!("{}: {e}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let rows: Vec<ProfileRow> = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not the JSON of `flashkv profile --json`: {e}")))?;
    let class = DeviceClass::of_rows(&rows)
        .ok_or_else(|| bad("the profile has no random read (rr) rows".into()))?;
    Ok((rows, class))
}

fn text(a: &Advice, o: &AdviceOptions) -> String {
    let mut t = Table::new(
        format!("{} — device class {}", a.device, a.device_class.name()),
        &[
            "pattern",
            "best block",
            "MB/s",
            "mean µs",
            "J/GB",
            "Algorithm 1",
            "why",
        ],
    );
    for p in &a.patterns {
        t.push(vec![
            p.pattern.clone(),
            size_label(p.best_block_size),
            f(p.mb_per_s, 1),
            f(p.mean_latency_us, 0),
            p.energy_j_per_gb.map_or("-".into(), |e| f(e, 2)),
            size_label(p.algorithm1_block_size),
            p.why.clone(),
        ]);
    }
    let io = IoProfile::from(a);
    format!(
        "{}{}\nScan versus random: reading more than {:.1} % of a file's {} pages at random costs more than reading the whole file sequentially.\n  {}\nFive-minute rule: cache a {} page in RAM if it is used at least once every {:.0} s (device ${:.0}, RAM ${:.2}/GiB).\n  {}\nEngine: Options::builder().io_profile(IoProfile {{ scan_read_bytes: {}, seq_write_bytes: {}, breakeven_fraction: {:.4} }})\n",
        t.text(),
        for_file(a, o),
        a.breakeven_fraction * 100.0,
        size_label(o.page_size),
        a.breakeven_formula,
        size_label(o.page_size),
        a.five_minute_rule_s,
        o.device_usd,
        o.ram_usd_per_gb,
        a.five_minute_formula,
        io.scan_read_bytes,
        io.seq_write_bytes,
        io.breakeven_fraction,
    )
}

/// Algorithm 1 with the file size (seed 000's future direction), when the
/// advice is for a file of --file-size.
fn for_file(a: &Advice, o: &AdviceOptions) -> String {
    let Some(size) = o.file_size else {
        return String::new();
    };
    let mut s = format!(
        "Algorithm 1 with the file size ({}), from seed 000's Experiment 2 on its drives:\n",
        size_label(size)
    );
    for p in &a.patterns {
        if let (Some(b), Some(why)) = (p.algorithm1_file_block_size, &p.algorithm1_file_why) {
            s.push_str(&format!("  {} {}: {why}\n", p.pattern, size_label(b)));
        }
    }
    s
}
