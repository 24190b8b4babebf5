//! `flashkv hybrid`: create or inspect a HeteroDrive hybrid (an SSD cache in
//! front of an HDD) over two devices.
//!
//! A device argument is a preset name (a simulated device, in memory for this
//! run only) or the path of a file or block device. `create` formats the SSD
//! side and prints the layout, so `create` over two presets is a dry run that
//! shows the layout you would get; `inspect` opens an existing hybrid on two
//! files, runs recovery and reports the superblock state and what recovery
//! found.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use flashkv_device::{parse_size, presets, BlockDevice, FileDevice, FileOptions};
use flashkv_hybrid::{HybridDevice, HybridError, HybridStats, Layout, Options};
use serde::Serialize;

use crate::error::{print_json, CliError};

/// Create or inspect a hybrid SSD+HDD device (HeteroDrive, seed 003).
#[derive(Args)]
pub struct HybridArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Format the SSD as the cache of the HDD (the HDD's data is kept; any
    /// earlier cache contents are discarded) and print the layout.
    Create(Pair),
    /// Open an existing hybrid on two files, recover it and print its state.
    Inspect(Pair),
}

#[derive(Args)]
struct Pair {
    /// The cache device: a preset name or a file / block device path.
    #[arg(long, value_name = "PRESET|PATH")]
    ssd: String,
    /// The backing disk: a preset name or a file / block device path.
    #[arg(long, value_name = "PRESET|PATH")]
    hdd: String,
    /// Size of the SSD file when create makes it (e.g. 1g).
    #[arg(long, value_parser = size_arg)]
    ssd_size: Option<u64>,
    /// Size of the HDD file when create makes it (e.g. 8g).
    #[arg(long, value_parser = size_arg)]
    hdd_size: Option<u64>,
    /// Print only JSON on stdout.
    #[arg(long)]
    json: bool,
}

fn size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

/// A preset (simulated, in memory) or a file; `size` and `create` apply to files.
pub(crate) fn open_device(
    arg: &str,
    size: Option<u64>,
    create: bool,
) -> Result<Box<dyn BlockDevice>, CliError> {
    if let Ok(spec) = presets::get(arg) {
        let dev =
            flashkv_device::SimDevice::new(&spec).map_err(|e| CliError::Usage(e.to_string()))?;
        return Ok(Box::new(dev));
    }
    let path = std::path::Path::new(arg);
    if !create && !path.exists() {
        return Err(CliError::Usage(format!(
            "'{arg}' is neither a preset (see `flashkv devices`) nor an existing file"
        )));
    }
    let opts = FileOptions {
        capacity: size.unwrap_or(0),
        create,
        ..FileOptions::default()
    };
    let dev = FileDevice::open(path, &opts).map_err(|e| CliError::Usage(e.to_string()))?;
    if let Some(w) = dev.warning() {
        eprintln!("warning: {w}");
    }
    Ok(Box::new(dev))
}

fn is_preset(arg: &str) -> bool {
    presets::get(arg).is_ok()
}

/// Layout and options problems are the user's; device failures are not.
pub(crate) fn hybrid_error(e: HybridError) -> CliError {
    match e {
        HybridError::Device(d) => CliError::Failed(d.to_string()),
        other => CliError::Usage(other.to_string()),
    }
}

#[derive(Serialize)]
struct Report<'a> {
    action: &'a str,
    ssd: &'a str,
    hdd: &'a str,
    layout: Layout,
    options: &'a Options,
    stats: HybridStats,
}

pub fn run(a: HybridArgs) -> ExitCode {
    match run_inner(a) {
        Ok(code) => code,
        Err(e) => e.exit(),
    }
}

fn run_inner(a: HybridArgs) -> Result<ExitCode, CliError> {
    let (action, p) = match a.action {
        Action::Create(p) => ("create", p),
        Action::Inspect(p) => ("inspect", p),
    };
    let create = action == "create";
    if !create && (is_preset(&p.ssd) || is_preset(&p.hdd)) {
        return Err(CliError::Usage(
            "inspect needs two files: a preset lives in memory for one run only".into(),
        ));
    }
    let ssd = open_device(&p.ssd, p.ssd_size, create)?;
    let hdd = open_device(&p.hdd, p.hdd_size, create)?;
    let opts = Options::default();
    let dev = if create {
        HybridDevice::create(ssd, hdd, opts.clone())
    } else {
        HybridDevice::open(ssd, hdd, opts.clone())
    }
    .map_err(hybrid_error)?;
    let r = Report {
        action,
        ssd: &p.ssd,
        hdd: &p.hdd,
        layout: dev.layout(),
        options: &opts,
        stats: dev.hybrid_stats(),
    };
    if p.json {
        print_json(&r)?;
    } else {
        print_human(&r);
    }
    Ok(ExitCode::SUCCESS)
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

fn print_human(r: &Report) {
    let l = &r.layout;
    println!(
        "hybrid {}: SSD {} in front of HDD {}",
        r.action, r.ssd, r.hdd
    );
    println!(
        "  capacity        {} (mapped in {}-byte units)",
        mib(l.capacity),
        l.sector
    );
    println!("  superblock      2 copies at SSD offsets 0 and 4096");
    println!(
        "  mapping region  {} at {} ({} tablets of 4 KiB)",
        mib(l.map_slots * 4096),
        l.map_start,
        l.map_slots
    );
    println!(
        "  cache region    {} at {}",
        mib(l.cache_sectors * l.sector),
        l.cache_start
    );
    if let Some(rec) = r.stats.recovery {
        println!(
            "  recovery        {} records, {} dirty, {} scanned in {:.3} ms",
            rec.records,
            mib(rec.dirty_sectors * l.sector),
            mib(rec.scanned_bytes),
            rec.time_ns as f64 / 1e6
        );
    }
    println!(
        "  routing         writes >= {} KiB or runs >= {} KiB go to the HDD; promotion {}",
        r.options.size_threshold >> 10,
        r.options.seq_threshold >> 10,
        if r.options.promote { "on" } else { "off" }
    );
}
