//! `flashkv hybrid`: create or inspect a HeteroDrive hybrid (an SSD cache in
//! front of an HDD) over two devices.
//!
//! A device argument is a preset name (a simulated device, in memory for this
//! run only) or the path of a file or block device. `create` formats the SSD
//! side and prints the layout, so `create` over two presets is a dry run that
//! shows the layout you would get; `inspect` opens an existing hybrid on two
//! files, runs recovery and reports the superblock state and what recovery
//! found.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use flashkv_device::{presets, BlockDevice, DeviceError, FileDevice, FileOptions};
use flashkv_hybrid::{
    is_hybrid_ssd, HybridDevice, HybridError, HybridStats, Layout, Options, SUPERBLOCK_BYTES,
};
use serde::Serialize;

use crate::error::{print_json, CliError};
use crate::files::{self, Created, Found};
use crate::units;

/// Create or inspect a hybrid SSD+HDD device (HeteroDrive, seed 003).
#[derive(Args)]
pub struct HybridArgs {
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Format the SSD as the cache of the HDD (the HDD's data is kept) and
    /// print the layout. Missing files are made at --ssd-size / --hdd-size;
    /// existing files must be a hybrid pair with nothing left to write back,
    /// else --force.
    Create(Pair),
    /// Open an existing hybrid on two files, recover it and print its state.
    Inspect(InspectArgs),
}

#[derive(Args)]
struct InspectArgs {
    /// The SSD file of a pair `hybrid create` made (it holds the superblock).
    #[arg(long, value_name = "PATH")]
    ssd: String,
    /// The HDD file of the pair.
    #[arg(long, value_name = "PATH")]
    hdd: String,
    /// Print only JSON on stdout.
    #[arg(long)]
    json: bool,
}

impl From<InspectArgs> for Pair {
    fn from(a: InspectArgs) -> Pair {
        Pair {
            ssd: a.ssd,
            hdd: a.hdd,
            ssd_size: None,
            hdd_size: None,
            force: false,
            json: a.json,
        }
    }
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
    #[arg(long, value_parser = units::nonzero_size)]
    ssd_size: Option<u64>,
    /// Size of the HDD file when create makes it (e.g. 8g).
    #[arg(long, value_parser = units::nonzero_size)]
    hdd_size: Option<u64>,
    /// Create over existing files flashkv does not recognise as this pair
    /// (destroys the SSD file's contents; the HDD file's contents become the
    /// hybrid's data), or over a cache holding data not yet on the HDD.
    #[arg(long)]
    force: bool,
    /// Print only JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// A preset (simulated, in memory) or a file; `size` and `create` apply to files.
fn open_device(
    arg: &str,
    size: Option<u64>,
    create: bool,
) -> Result<Box<dyn BlockDevice>, CliError> {
    open_side("", arg, size, create, &mut Created::default())
}

/// As [`open_device`]; `flag` names the argument in errors and a file this
/// call creates is added to `created`.
fn open_side(
    flag: &str,
    arg: &str,
    size: Option<u64>,
    create: bool,
    created: &mut Created,
) -> Result<Box<dyn BlockDevice>, CliError> {
    if let Ok(spec) = presets::get(arg) {
        let dev =
            flashkv_device::SimDevice::new(&spec).map_err(|e| CliError::Usage(e.to_string()))?;
        return Ok(Box::new(dev));
    }
    let path = Path::new(arg);
    let found = files::inspect(flag_or("--device", flag), path)?;
    if found == Found::Missing {
        if !create {
            return Err(CliError::Usage(format!(
                "{}'{arg}' is neither a preset (see `flashkv devices`) nor an existing file",
                prefix(flag)
            )));
        }
        created.add(path);
    }
    let opts = FileOptions {
        capacity: size.unwrap_or(0),
        create,
        ..FileOptions::default()
    };
    let dev = FileDevice::open(path, &opts)
        .map_err(|e| CliError::Usage(format!("{}{}", prefix(flag), io_message(e))))?;
    if let Some(w) = dev.warning() {
        eprintln!("warning: {w}");
    }
    Ok(Box::new(dev))
}

fn flag_or<'a>(default: &'a str, flag: &'a str) -> &'a str {
    if flag.is_empty() {
        default
    } else {
        flag
    }
}

fn prefix(flag: &str) -> String {
    if flag.is_empty() {
        String::new()
    } else {
        format!("{flag} ")
    }
}

/// A device error without the "I/O error:" wrapper (the path says where).
fn io_message(e: DeviceError) -> String {
    match e {
        DeviceError::Io(io) => io.to_string(),
        other => other.to_string(),
    }
}

/// Preset `name`, at `capacity` if given.
fn sized(name: &str, capacity: Option<u64>) -> Result<Box<dyn BlockDevice>, CliError> {
    let mut spec = presets::get(name).map_err(|e| CliError::Usage(e.to_string()))?;
    if let Some(c) = capacity {
        spec.capacity = c;
    }
    let dev = flashkv_device::SimDevice::new(&spec).map_err(|e| CliError::Usage(e.to_string()))?;
    Ok(Box::new(dev))
}

fn is_preset(arg: &str) -> bool {
    presets::get(arg).is_ok()
}

/// A `--hybrid SSD,HDD` argument of `serve` and `replay`: two presets (a
/// fresh hybrid in memory for this run) or the two files `hybrid create`
/// made (opened and recovered; writes land in them).
pub(crate) enum PairArg {
    Presets(String, String),
    Files(String, String),
}

impl PairArg {
    pub(crate) fn parse(pair: &str) -> Result<Self, CliError> {
        let Some((s, h)) = pair.split_once(',') else {
            return Err(usage(format!(
                "--hybrid takes SSD,HDD (two presets or the two files of `hybrid create`), got '{pair}'"
            )));
        };
        let (s, h) = (s.trim().to_string(), h.trim().to_string());
        match (is_preset(&s), is_preset(&h)) {
            (true, true) => Ok(PairArg::Presets(s, h)),
            (false, false) if Path::new(&s).exists() || Path::new(&h).exists() => {
                Ok(PairArg::Files(s, h))
            }
            (false, false) => Err(usage(format!(
                "--hybrid {pair}: neither presets (see `flashkv devices`) nor existing files"
            ))),
            _ => Err(usage(format!(
                "--hybrid {pair}: give two presets or two files (a preset lives in memory for one run)"
            ))),
        }
    }

    /// Whether the pair is two real files (paced by their hardware).
    pub(crate) fn is_files(&self) -> bool {
        matches!(self, PairArg::Files(..))
    }

    /// The hybrid: created over two presets, or opened (recovered) on the files.
    pub(crate) fn open(&self, opts: Options) -> Result<(HybridDevice, String), CliError> {
        self.open_sized(opts, None, None)
    }

    /// As [`PairArg::open`], two presets at the SSD's and the HDD's
    /// capacities where given (the files have theirs).
    pub(crate) fn open_sized(
        &self,
        opts: Options,
        ssd_capacity: Option<u64>,
        hdd_capacity: Option<u64>,
    ) -> Result<(HybridDevice, String), CliError> {
        match self {
            PairArg::Presets(s, h) => {
                let (ssd, hdd) = (sized(s, ssd_capacity)?, sized(h, hdd_capacity)?);
                let dev = HybridDevice::create(ssd, hdd, opts).map_err(hybrid_error)?;
                Ok((dev, format!("hybrid({s},{h})")))
            }
            PairArg::Files(s, h) => {
                if ssd_capacity.is_some() || hdd_capacity.is_some() {
                    return Err(usage(format!(
                        "--hybrid {s},{h}: --capacity and --ssd-capacity size a hybrid of presets; files have their own size"
                    )));
                }
                check_pair_files("--hybrid", s, h)?;
                let ssd = open_side("--hybrid", s, None, false, &mut Created::default())?;
                let hdd = open_side("--hybrid", h, None, false, &mut Created::default())?;
                let dev = HybridDevice::open(ssd, hdd, opts).map_err(hybrid_error)?;
                Ok((dev, format!("hybrid({s},{h})")))
            }
        }
    }
}

/// Layout, options and an unformatted SSD are the user's to fix; device
/// failures and damage found on the SSD are not.
pub(crate) fn hybrid_error(e: HybridError) -> CliError {
    match e {
        HybridError::Layout(_) | HybridError::Options(_) | HybridError::NotFormatted => {
            CliError::Usage(e.to_string())
        }
        other => CliError::Failed(other.to_string()),
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
        Action::Inspect(a) => ("inspect", a.into()),
    };
    let create = action == "create";
    if create {
        check_create(&p)?;
    } else {
        check_inspect(&p)?;
    }
    let mut created = Created::default();
    let ssd = open_side("--ssd", &p.ssd, p.ssd_size, create, &mut created)?;
    let hdd = open_side("--hdd", &p.hdd, p.hdd_size, create, &mut created)?;
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
    created.keep();
    Ok(ExitCode::SUCCESS)
}

fn usage(m: String) -> CliError {
    CliError::Usage(m)
}

/// `inspect` reads two files, the SSD one carrying a hybrid superblock.
fn check_inspect(p: &Pair) -> Result<(), CliError> {
    if is_preset(&p.ssd) || is_preset(&p.hdd) {
        return Err(usage(
            "inspect needs two files: a preset lives in memory for one run only".into(),
        ));
    }
    check_pair_files("", &p.ssd, &p.hdd)
}

/// Two existing files, the SSD one carrying a hybrid superblock. `flag`
/// names the argument in errors (empty: `--ssd` and `--hdd`).
fn check_pair_files(flag: &str, ssd: &str, hdd: &str) -> Result<(), CliError> {
    let (sf, hf) = match flag {
        "" => ("--ssd", "--hdd"),
        f => (f, f),
    };
    for (flag, arg) in [(sf, ssd), (hf, hdd)] {
        if files::inspect(flag, Path::new(arg))? == Found::Missing {
            return Err(usage(format!("{flag} {arg}: no such file")));
        }
    }
    if files::same_file(Path::new(ssd), Path::new(hdd)) {
        return Err(usage(format!(
            "{sf} {ssd}: the SSD and the HDD are the same file; the hybrid needs two devices"
        )));
    }
    if !has_hybrid_superblock(Path::new(ssd)) {
        return Err(usage(format!(
            "{sf} {ssd}: not a flashkv hybrid cache (no superblock at offset 0 or 4 KiB); make one with `flashkv hybrid create`"
        )));
    }
    Ok(())
}

/// `create` writes the SSD file and adopts the HDD file: both must be new,
/// or the pair flashkv made before with nothing left to write back, unless
/// --force. Sizes and free space are checked before anything is created.
fn check_create(p: &Pair) -> Result<(), CliError> {
    let (ssd_file, hdd_file) = (!is_preset(&p.ssd), !is_preset(&p.hdd));
    if ssd_file && hdd_file && files::same_file(Path::new(&p.ssd), Path::new(&p.hdd)) {
        return Err(usage(format!(
            "--ssd and --hdd are the same file ({}); the hybrid needs two devices",
            p.ssd
        )));
    }
    let mut existing = Vec::new();
    for (flag, arg, size, file) in [
        ("--ssd", &p.ssd, p.ssd_size, ssd_file),
        ("--hdd", &p.hdd, p.hdd_size, hdd_file),
    ] {
        if !file {
            if size.is_some() {
                return Err(usage(format!(
                    "{flag}-size applies to a file, not preset {arg}"
                )));
            }
            continue;
        }
        let path = Path::new(arg);
        match (files::inspect(flag, path)?, size) {
            (Found::Missing, None) => {
                return Err(usage(format!(
                    "{flag} {arg}: does not exist; give {flag}-size to create it"
                )))
            }
            (Found::Missing, Some(n)) => files::ensure_room(flag, path, n)?,
            (found, Some(_)) if found != Found::File(0) => {
                return Err(usage(format!(
                    "{flag} {arg}: exists; {flag}-size applies only to a file create makes"
                )))
            }
            (found, _) => existing.push((flag, arg, found)),
        }
    }
    if existing.is_empty() || p.force {
        return Ok(());
    }
    let pair_ok = existing_pair_is_clean(p)?;
    for (flag, arg, found) in existing {
        if pair_ok {
            continue;
        }
        let what = match found {
            Found::File(n) => format!("a {} file", units::human(n)),
            _ => "a block device".into(),
        };
        return Err(usage(if flag == "--ssd" {
            format!(
                "--ssd {arg}: {what} that is not a flashkv hybrid cache; create would overwrite it \
                 (superblocks, mapping and cache regions); pass --force to destroy its contents"
            )
        } else {
            format!(
                "--hdd {arg}: {what} that is not the disk of a flashkv hybrid on --ssd {}; \
                 create would make its contents the hybrid's data, later overwritten; pass --force",
                p.ssd
            )
        }));
    }
    Ok(())
}

/// Whether the existing SSD file is a hybrid cache whose pair opens with this
/// HDD (or a HDD create makes) and holds no data not yet on the HDD.
fn existing_pair_is_clean(p: &Pair) -> Result<bool, CliError> {
    let ssd = Path::new(&p.ssd);
    if is_preset(&p.ssd) || !has_hybrid_superblock(ssd) {
        return Ok(false);
    }
    if is_preset(&p.hdd) || !Path::new(&p.hdd).exists() {
        return Ok(true);
    }
    let Ok(ssd_dev) = open_device(&p.ssd, None, false) else {
        return Ok(false);
    };
    let Ok(hdd_dev) = open_device(&p.hdd, None, false) else {
        return Ok(false);
    };
    let Ok(dev) = HybridDevice::open(ssd_dev, hdd_dev, Options::default()) else {
        return Ok(false);
    };
    let dirty = dev.hybrid_stats().dirty_bytes;
    if dirty > 0 {
        return Err(usage(format!(
            "--ssd {}: holds {} of writes not yet on --hdd {}; create would discard them; \
             pass --force to do so",
            p.ssd,
            units::human(dirty),
            p.hdd
        )));
    }
    Ok(true)
}

/// Whether the file starts with a valid hybrid superblock.
fn has_hybrid_superblock(path: &Path) -> bool {
    let mut head = vec![0u8; SUPERBLOCK_BYTES as usize];
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    f.read_exact(&mut head).is_ok() && is_hybrid_ssd(&head)
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
