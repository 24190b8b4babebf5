//! `flashkv lab`: the main job.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use flashkv_lab::lab::{self, Experiment, LabOptions};
use serde_json::{Map, Value};

use crate::error::{print_json, CliError};
use crate::progress::LabProgress;

/// Run the lab on the built-in emulated devices: reproduce the seed
/// documents' experiments, print the comparison, and write results/ (one
/// folder per experiment with JSON, CSV and SVG plots, plus summary.md).
#[derive(Args)]
pub struct LabArgs {
    /// Experiments to run [default: all].
    #[arg(value_enum)]
    experiments: Vec<Name>,
    /// Fewer operations per point: a smoke run that finishes in well under a minute.
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
}

/// The experiments by name.
#[derive(Clone, Copy, ValueEnum)]
enum Name {
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
}

impl Name {
    fn experiment(self) -> Experiment {
        match self {
            Name::Seed004 => Experiment::Seed004,
            Name::Advisor => Experiment::Advisor,
            Name::Ipl => Experiment::Ipl,
            Name::Buffer => Experiment::Buffer,
            Name::Hybrid => Experiment::Hybrid,
            Name::SimScale => Experiment::SimScale,
        }
    }
}

pub fn run(a: LabArgs) -> Result<ExitCode, CliError> {
    let experiments: Vec<Experiment> = if a.experiments.is_empty() {
        Experiment::ALL.to_vec()
    } else {
        a.experiments.iter().map(|n| n.experiment()).collect()
    };
    crate::files::check_out_dir("--out", &a.out)?;
    let progress = LabProgress::new(experiments.iter().map(|e| e.name()).collect());
    let opts = LabOptions {
        quick: a.quick,
        out: a.out.clone(),
        seed: a.seed,
        on_progress: progress.callback(),
    };
    let sections = lab::run(&experiments, &opts)?;
    progress.finish();
    if a.json {
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
            a.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
