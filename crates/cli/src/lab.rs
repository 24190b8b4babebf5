//! `flashkv lab`: the main job.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use flashkv_lab::lab::{self, Experiment, LabOptions, Section};
use flashkv_lab::shard::{self, Shard};
use serde_json::{json, Map, Value};

use crate::error::{print_json, CliError};
use crate::progress::LabProgress;

/// Where, what and how (the command's help is on `Command::Lab`).
#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LabArgs {
    #[command(subcommand)]
    merge: Option<LabCommand>,
    /// Experiments to run [default: all but pgbench].
    #[arg(value_enum)]
    experiments: Vec<Name>,
    /// Fewer operations per point: a smoke run of about a minute on two cores (the README's "What it costs").
    #[arg(long)]
    quick: bool,
    /// Print the rows of every experiment as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Where to write results.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Seed for every random choice: same seed, same numbers.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// List the experiments' points (id and parameters) instead of running them.
    #[arg(long, conflicts_with = "shard")]
    points: bool,
    /// Run only the I-th of N slices of the points (round robin over every
    /// experiment's grid) and write --out/shard-I-of-N.json for `lab merge`.
    #[arg(long, value_name = "I/N", value_parser = parse_shard)]
    shard: Option<Shard>,
}

#[derive(Subcommand)]
enum LabCommand {
    /// Write the results/ of a sharded run from its shard files (every
    /// shard-I-of-N.json in each DIR, or the files given), as one run of
    /// the same experiments, --quick and --seed would.
    Merge(MergeArgs),
}

#[derive(Args)]
struct MergeArgs {
    /// Directories holding shard files, or shard files.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Where to write results.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// Print the rows of every experiment as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

fn parse_shard(s: &str) -> Result<Shard, String> {
    s.parse()
}

/// The experiments by name.
#[derive(Clone, Copy, ValueEnum)]
enum Name {
    /// Seed 000: its five drives (IDE disk through 41 MB, USB stick, microSD, Memory Stick, SSD) beside its Tables 3.2 and 3.3 and best block sizes; Experiment 2 (best block by file size); seed 002's cold and hot caches.
    Seed000,
    /// Seed 004: random read / write / 50-50 IOPS by block size for hdd-15k, flash-ssd-2005, dram-ssd.
    Seed004,
    /// Seed 001: in-page logging vs in-place on raw NAND (hypotheses 1.1–3, buffer sweep), shared layout, more log sectors, nvme.
    Ipl,
    /// Buffer replacement policies (LRU, CLOCK, CFLRU, CFDC, LRU-WSR, FAB, ARC) on nand-ipl and nvme.
    Buffer,
    /// The advisor on every preset: best block size per pattern beside seed 000's Algorithm 1, scan breakeven, five-minute rule.
    Advisor,
    /// Seed 003: TPC-C-like OLTP on hdd-7200, ssd-lowend and HeteroDrive (the SSD in front of the HDD).
    Hybrid,
    /// Simulator scale: simulated requests per wall second, time to the first request and peak RSS for 64 GiB, 512 GiB and 4 TiB nvme models (random 4 KB 50/50, QD1 and QD32).
    SimScale,
    /// The page FTL's data cache, mapping cache (DFTL) and planes, each against its closed form.
    SsdInternals,
    /// Seed 002's conclusions: OLTP and read-mostly work on hdd-7200, ssd-x25m, the hybrid and the two-device store (index on the SSD, hot/cold placement): throughput, energy per transaction with drives that sleep, SSD capacity against throughput, standby timeouts swept.
    Placement,
    /// Seed 003 with a real database: unmodified PostgreSQL's pgbench on hdd-7200, ssd-lowend, the hybrid and nvme served over NBD (needs root, FUSE, PostgreSQL; only when named).
    Pgbench,
}

impl Name {
    fn experiment(self) -> Experiment {
        match self {
            Name::Seed000 => Experiment::Seed000,
            Name::Seed004 => Experiment::Seed004,
            Name::Advisor => Experiment::Advisor,
            Name::Ipl => Experiment::Ipl,
            Name::Buffer => Experiment::Buffer,
            Name::Hybrid => Experiment::Hybrid,
            Name::SimScale => Experiment::SimScale,
            Name::SsdInternals => Experiment::SsdInternals,
            Name::Placement => Experiment::Placement,
            Name::Pgbench => Experiment::Pgbench,
        }
    }
}

pub fn run(a: LabArgs) -> Result<ExitCode, CliError> {
    if let Some(LabCommand::Merge(m)) = a.merge {
        return merge(m);
    }
    let experiments: Vec<Experiment> = if a.experiments.is_empty() {
        Experiment::ALL.to_vec()
    } else {
        a.experiments.iter().map(|n| n.experiment()).collect()
    };
    if a.points {
        return list_points(&experiments, a.quick, a.json);
    }
    crate::files::check_out_dir("--out", &a.out)?;
    let points = match a.shard {
        Some(s) => (0..shard::plan(&experiments, a.quick).len())
            .filter(|&k| s.holds(k))
            .count(),
        None => experiments.iter().map(|e| e.points(a.quick).len()).sum(),
    };
    let progress = LabProgress::new(Some(points as u64));
    let opts = LabOptions {
        quick: a.quick,
        out: a.out.clone(),
        seed: a.seed,
        on_progress: progress.callback(),
        on_point: progress.point_callback(),
    };
    if let Some(s) = a.shard {
        let (file, path) = shard::run(&experiments, s, &opts)?;
        progress.finish();
        if a.json {
            print_json(&file)?;
        } else {
            println!(
                "shard {s}: {} of {} points written to {}",
                file.done.len(),
                file.points,
                path.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let sections = lab::run(&experiments, &opts)?;
    progress.finish();
    print_sections(sections, a.json, &a.out)
}

/// Every experiment's rows as one JSON object, or its tables.
fn print_sections(
    sections: Vec<Section>,
    json: bool,
    out: &std::path::Path,
) -> Result<ExitCode, CliError> {
    if json {
        let obj: Map<String, Value> = sections
            .into_iter()
            .map(|s| (s.name.to_string(), s.json))
            .collect();
        print_json(&obj)?;
    } else {
        for s in &sections {
            println!("{}", s.text);
        }
        println!(
            "Results written to {}/ (summary.md, one folder per experiment).",
            out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--points`: the grid, one line per point (or a JSON array).
fn list_points(experiments: &[Experiment], quick: bool, json: bool) -> Result<ExitCode, CliError> {
    let plan = shard::plan(experiments, quick);
    if json {
        let v: Vec<Value> = plan
            .iter()
            .map(|(e, p)| json!({"experiment": e.name(), "index": p.index, "id": p.id, "params": p.params}))
            .collect();
        print_json(&v)?;
    } else {
        for (e, p) in &plan {
            println!(
                "{}\t{}\t{}\t{}",
                e.name(),
                p.index,
                p.id,
                Value::Object(p.params.clone())
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn merge(m: MergeArgs) -> Result<ExitCode, CliError> {
    crate::files::check_out_dir("--out", &m.out)?;
    // A merge runs no points: the bar counts the experiments it reports.
    let progress = LabProgress::new(None);
    let sections = shard::merge(&m.dirs, &m.out, progress.callback()).map_err(|e| match e {
        flashkv_lab::lab::LabError::Shard(msg) => CliError::Usage(msg),
        other => other.into(),
    })?;
    progress.finish();
    print_sections(sections, m.json, &m.out)
}
