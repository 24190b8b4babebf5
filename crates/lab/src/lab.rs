//! The lab: runs experiments, writes `results/`, and returns a summary.

use std::path::{Path, PathBuf};

use flashkv_device::DeviceError;

use crate::points::{Output, Params, Point};
use crate::profile::ProfileError;
use crate::summary::{self, RunInfo};

/// How the lab runs.
pub struct LabOptions {
    /// Fewer operations per run: a smoke run of about a minute on two cores.
    pub quick: bool,
    /// Where results are written (one folder per experiment).
    pub out: PathBuf,
    /// Seed for every random choice: same seed, same numbers.
    pub seed: u64,
    /// Called with a short description before each run (progress display).
    pub on_progress: Box<dyn Fn(&str)>,
    /// Called when a point of an experiment's grid is done (progress
    /// display: a run's work is counted in points).
    pub on_point: Box<dyn Fn()>,
}

impl LabOptions {
    pub(crate) fn progress(&self, what: &str) {
        (self.on_progress)(what)
    }

    /// The experiment's output folder, created.
    pub(crate) fn dir(&self, experiment: &str) -> Result<PathBuf, LabError> {
        let d = self.out.join(experiment);
        std::fs::create_dir_all(&d).map_err(|e| LabError::Output(d.clone(), e))?;
        Ok(d)
    }
}

/// What one experiment produced.
pub struct Section {
    pub name: &'static str,
    /// Tables for a terminal.
    pub text: String,
    /// The same for `summary.md`.
    pub markdown: String,
    /// Its rows, for `--json`.
    pub json: serde_json::Value,
    /// The seed's claims it checks, with their verdicts (the scorecard).
    pub claims: Vec<crate::scorecard::Claim>,
}

/// The experiments `flashkv lab` knows, in the order it runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// Seed 000's drives: Experiment 1 beside Tables 3.2 and 3.3,
    /// Experiment 2 (file size), seed 002's cold and hot caches.
    Seed000,
    /// Seed 004's random-I/O tables on the device presets.
    Seed004,
    /// Seed 001's in-page logging evaluation, and beyond it.
    Ipl,
    /// Buffer replacement policies on flash.
    Buffer,
    /// The block-size advisor's answers for every preset.
    Advisor,
    /// Seed 003's TPC-C run on an HDD, an SSD and the hybrid of the two.
    Hybrid,
    /// Simulator speed and memory on 64 GiB to 4 TiB devices.
    SimScale,
    /// The page FTL's data cache, mapping cache and planes against their
    /// closed forms.
    SsdInternals,
    /// Seed 002's conclusions: pages placed across an SSD and an HDD, and
    /// drives that sleep.
    Placement,
    /// Unmodified PostgreSQL (pgbench) on drives served over NBD: run only
    /// when named, it needs root, FUSE and PostgreSQL.
    Pgbench,
}

impl Experiment {
    pub const ALL: [Experiment; 9] = [
        Experiment::Seed000,
        Experiment::Seed004,
        Experiment::Ipl,
        Experiment::Buffer,
        Experiment::Advisor,
        Experiment::Hybrid,
        Experiment::SimScale,
        Experiment::SsdInternals,
        Experiment::Placement,
    ];

    /// Every experiment: the default run, then those run only when named.
    pub const KNOWN: [Experiment; 10] = [
        Experiment::Seed000,
        Experiment::Seed004,
        Experiment::Ipl,
        Experiment::Buffer,
        Experiment::Advisor,
        Experiment::Hybrid,
        Experiment::SimScale,
        Experiment::SsdInternals,
        Experiment::Placement,
        Experiment::Pgbench,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Experiment::Seed000 => "seed000",
            Experiment::Seed004 => "seed004",
            Experiment::Advisor => "advisor",
            Experiment::Ipl => "ipl",
            Experiment::Buffer => "buffer",
            Experiment::Hybrid => "hybrid",
            Experiment::SimScale => "sim-scale",
            Experiment::Pgbench => "pgbench",
            Experiment::SsdInternals => "ssd-internals",
            Experiment::Placement => "placement",
        }
    }

    /// The experiment named `name` (as [`Experiment::name`] gives it).
    pub fn parse(name: &str) -> Option<Experiment> {
        Experiment::KNOWN.into_iter().find(|e| e.name() == name)
    }

    /// Its grid: every point a run makes, in the order rows are reported.
    pub fn points(self, quick: bool) -> Vec<Point> {
        match self {
            Experiment::Seed000 => crate::seed000::points(quick),
            Experiment::Seed004 => crate::seed004::points(),
            Experiment::Advisor => crate::advisor_lab::points(),
            Experiment::Ipl => crate::ipl::points(quick),
            Experiment::Buffer => crate::buffer::points(),
            Experiment::Hybrid => crate::hybrid::points(quick),
            Experiment::SimScale => crate::sim_scale::points(),
            Experiment::Pgbench => crate::pgbench::points(),
            Experiment::SsdInternals => crate::internals::points(),
            Experiment::Placement => crate::placement::points(quick),
        }
    }

    /// Runs one point: a pure function of its parameters, `opts.seed` and
    /// `opts.quick` (sim-scale's wall-clock and memory figures aside).
    pub fn run_point(self, params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
        match self {
            Experiment::Seed000 => crate::seed000::run_point(params, opts),
            Experiment::Seed004 => crate::seed004::run_point(params, opts),
            Experiment::Advisor => crate::advisor_lab::run_point(params, opts),
            Experiment::Ipl => crate::ipl::run_point(params, opts),
            Experiment::Buffer => crate::buffer::run_point(params, opts),
            Experiment::Hybrid => crate::hybrid::run_point(params, opts),
            Experiment::SimScale => crate::sim_scale::run_point(params, opts),
            Experiment::Pgbench => crate::pgbench::run_point(params, opts),
            Experiment::SsdInternals => crate::internals::run_point(params, opts),
            Experiment::Placement => crate::placement::run_point(params, opts),
        }
    }

    /// Writes the experiment's folder from the outputs of all its points,
    /// in grid order, and returns its section.
    pub fn report(self, opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
        match self {
            Experiment::Seed000 => crate::seed000::report(opts, outputs),
            Experiment::Seed004 => crate::seed004::report(opts, outputs),
            Experiment::Advisor => crate::advisor_lab::report(opts, outputs),
            Experiment::Ipl => crate::ipl::report(opts, outputs),
            Experiment::Buffer => crate::buffer::report(opts, outputs),
            Experiment::Hybrid => crate::hybrid::report(opts, outputs),
            Experiment::SimScale => crate::sim_scale::report(opts, outputs),
            Experiment::Pgbench => crate::pgbench::report(opts, outputs),
            Experiment::SsdInternals => crate::internals::report(opts, outputs),
            Experiment::Placement => crate::placement::report(opts, outputs),
        }
    }

    /// Bytes its points may fill on disk at most, in scratch files in its
    /// folder (a simulated SSD's data, up to its capacity): its points run
    /// one at a time, so this much must be free when it starts.
    pub fn scratch_bytes(self) -> Result<u64, LabError> {
        Ok(match self {
            Experiment::Hybrid => crate::hybrid::scratch_bytes()?,
            Experiment::Placement => crate::placement::scratch_bytes()?,
            _ => 0,
        })
    }

    /// Every point, then the report: what `flashkv lab EXP` does.
    pub fn run(self, opts: &LabOptions) -> Result<Section, LabError> {
        let outputs = self
            .points(opts.quick)
            .iter()
            .map(|p| {
                let out = self.run_point(&p.params, opts);
                (opts.on_point)();
                out
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.report(opts, &outputs)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(transparent)]
    Device(#[from] DeviceError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Advice(#[from] crate::advisor::AdviceError),
    #[error(transparent)]
    Engine(#[from] flashkv_engine::Error),
    #[error("cannot write {0}: {1}")]
    Output(PathBuf, std::io::Error),
    #[error("writing results: {0}")]
    Io(#[from] std::io::Error),
    #[error("built-in data: {0}")]
    Data(String),
    /// A point's parameters that the experiment cannot run.
    #[error("bad point parameters: {0}")]
    Params(String),
    /// Shard files that cannot be merged, or a bad `--shard`.
    #[error("{0}")]
    Shard(String),
    /// A program the experiment runs failed.
    #[error("{0}")]
    Run(String),
    /// Too little free space for an experiment's scratch files: found
    /// before any point runs.
    #[error(
        "{}: {free} bytes free, but the {experiment} experiment may fill up to {need} bytes there \
         with a simulated drive's data: free some space, choose another --out, or leave {experiment} out",
        dir.display()
    )]
    NoRoom {
        dir: PathBuf,
        free: u64,
        need: u64,
        experiment: &'static str,
    },
    /// Ctrl-C or SIGTERM during a run that stops what it started.
    #[error("interrupted: everything the run started was stopped and removed")]
    Interrupted,
}

/// Checks, before anything runs, that the file system holding `out` has
/// room for the scratch files of each of `experiments` (they run one at a
/// time, each removing its own): a run that would run out of space fails
/// now, not after the experiments before it.
pub fn check_room(experiments: &[Experiment], out: &Path) -> Result<(), LabError> {
    // `out` may not exist yet: its nearest existing ancestor's file system.
    let dir = out
        .ancestors()
        .find(|d| d.exists())
        .unwrap_or(Path::new("."));
    let mut free = None;
    for &e in experiments {
        let need = e.scratch_bytes()?;
        if need == 0 {
            continue;
        }
        let free = match free {
            Some(f) => f,
            None => *free.insert(flashkv_device::free_space(dir)?),
        };
        room_for(e, need, free, out)?;
    }
    Ok(())
}

/// `experiment`'s scratch files, `need` bytes, against `free` bytes in `out`.
fn room_for(experiment: Experiment, need: u64, free: u64, out: &Path) -> Result<(), LabError> {
    match free >= need {
        true => Ok(()),
        false => Err(LabError::NoRoom {
            dir: out.to_path_buf(),
            free,
            need,
            experiment: experiment.name(),
        }),
    }
}

/// Runs `experiments`, each into its folder with its part of the summary,
/// then writes `summary.md` and `index.html` from every part present.
pub fn run(experiments: &[Experiment], opts: &LabOptions) -> Result<Vec<Section>, LabError> {
    check_room(experiments, &opts.out)?;
    let info = RunInfo::now(opts.quick, opts.seed);
    write_results(opts, &info, experiments, |e| e.run(opts))
}

/// Makes each experiment's section with `section` (which writes the
/// experiment's folder), after clearing what an earlier run left there,
/// then the summary: a run and a merge of shards write results alike.
pub(crate) fn write_results(
    opts: &LabOptions,
    info: &RunInfo,
    experiments: &[Experiment],
    mut section: impl FnMut(Experiment) -> Result<Section, LabError>,
) -> Result<Vec<Section>, LabError> {
    std::fs::create_dir_all(&opts.out).map_err(|e| LabError::Output(opts.out.clone(), e))?;
    let mut sections = Vec::new();
    for &e in experiments {
        summary::clear_stale(&opts.out, e.name())?;
        let s = section(e);
        release_free_memory();
        let s = s?;
        summary::write_section(&opts.out, &s, info)?;
        sections.push(s);
    }
    let ran: Vec<&str> = experiments.iter().map(|e| e.name()).collect();
    summary::write_summary(&opts.out, info, &ran)?;
    Ok(sections)
}

/// Hands memory an experiment freed back to the system, so the next one
/// does not start from the last one's peak (glibc keeps freed heap).
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary and shard merges find experiments through KNOWN: every
    /// one of the default run is there, each once, and parses by name.
    #[test]
    fn every_experiment_is_known_once_by_its_name() {
        for e in Experiment::ALL {
            assert!(Experiment::KNOWN.contains(&e), "{e:?}");
        }
        for e in Experiment::KNOWN {
            assert_eq!(Experiment::parse(e.name()), Some(e));
            assert_eq!(Experiment::KNOWN.iter().filter(|k| **k == e).count(), 1);
        }
        assert!(Experiment::KNOWN.contains(&Experiment::Pgbench));
        assert!(!Experiment::ALL.contains(&Experiment::Pgbench));
    }

    /// The experiments that keep a simulated SSD's data in a scratch file
    /// say how much it may fill (the SSD's capacity), the rest nothing; a
    /// run is refused up front, naming the experiment, where that much is
    /// not free.
    #[test]
    fn a_run_without_room_for_its_scratch_files_is_refused_up_front() {
        let ssd = flashkv_device::presets::get("ssd-lowend").unwrap().capacity;
        assert_eq!(Experiment::Hybrid.scratch_bytes().unwrap(), ssd);
        let x25m = flashkv_device::presets::get("ssd-x25m").unwrap().capacity;
        assert_eq!(Experiment::Placement.scratch_bytes().unwrap(), x25m);
        let with_scratch: Vec<_> = Experiment::KNOWN
            .into_iter()
            .filter(|e| e.scratch_bytes().unwrap() > 0)
            .collect();
        assert_eq!(with_scratch, [Experiment::Hybrid, Experiment::Placement]);

        let out = Path::new("results");
        assert!(room_for(Experiment::Hybrid, ssd, ssd, out).is_ok());
        let e = room_for(Experiment::Hybrid, ssd, ssd - 1, out).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, LabError::NoRoom { need, free, .. } if need == ssd && free == ssd - 1));
        for part in [
            "results:",
            &format!("{} bytes free", ssd - 1),
            &ssd.to_string(),
            "hybrid experiment",
            "--out",
        ] {
            assert!(msg.contains(part), "{part:?} in {msg:?}");
        }
        // Experiments without scratch files ask nothing of the file system,
        // not even that `out` exist.
        let missing = Path::new("/nonexistent/flashkv/results");
        check_room(&[Experiment::Advisor, Experiment::Buffer], missing).unwrap();
    }
}
