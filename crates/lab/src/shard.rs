//! Sweeps past one machine: `flashkv lab EXP --shard i/n` runs every n-th
//! point of the run's grid (points counted over the experiments in order,
//! the i-th first) and writes them to `shard-i-of-n.json` in `--out`;
//! `flashkv lab merge DIR...` reads the n shard files and writes the same
//! `results/` a single run writes, from the same rows.
//!
//! A shard file says what made it (flashkv version, commit, date, quick,
//! seed, the experiments and how many points they have) and carries a
//! CRC-32C of its results, so shards of different runs, a shard given
//! twice or missing, or a damaged file are refused with one line.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::lab::{self, Experiment, LabError, LabOptions, Section};
use crate::points::{Output, Point};
use crate::summary::RunInfo;

/// What the file is, and the version of its layout.
pub const FORMAT: &str = "flashkv-lab-shard";
pub const VERSION: u32 = 1;

/// The i-th of n slices of a run's points (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("'{s}' is not I/N with 1 <= I <= N (e.g. 2/3)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (i, n): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if i == 0 || i > n {
            return Err(bad());
        }
        Ok(Shard { index: i, count: n })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether the k-th point of the run (0-based, over every experiment)
    /// is this shard's: round robin, so each shard gets some of every
    /// experiment and of every device.
    pub fn holds(self, k: usize) -> bool {
        k % self.count as usize == (self.index - 1) as usize
    }

    pub fn file_name(self) -> String {
        format!("shard-{}-of-{}.json", self.index, self.count)
    }
}

/// One point's result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Done {
    pub experiment: String,
    pub point: Point,
    pub output: Output,
}

/// A shard file.
#[derive(Debug, Serialize, Deserialize)]
pub struct ShardFile {
    pub format: String,
    pub version: u32,
    /// `i/n`.
    pub shard: String,
    pub flashkv: String,
    pub commit: String,
    pub date: String,
    pub quick: bool,
    pub seed: u64,
    /// The experiments of the run, in order.
    pub experiments: Vec<String>,
    /// Points of the whole run (every shard).
    pub points: usize,
    /// CRC-32C of `done` as compact JSON.
    pub crc32c: u32,
    pub done: Vec<Done>,
}

fn checksum(done: &[Done]) -> Result<u32, LabError> {
    let text = serde_json::to_string(done).map_err(|e| LabError::Data(e.to_string()))?;
    Ok(crc32c::crc32c(text.as_bytes()))
}

/// Every point of a run over `experiments`, in order.
pub fn plan(experiments: &[Experiment], quick: bool) -> Vec<(Experiment, Point)> {
    experiments
        .iter()
        .flat_map(|&e| e.points(quick).into_iter().map(move |p| (e, p)))
        .collect()
}

/// Runs the shard's points and writes its file to `opts.out`; returns it
/// and where it went. Nothing is written if a point fails.
pub fn run(
    experiments: &[Experiment],
    shard: Shard,
    opts: &LabOptions,
) -> Result<(ShardFile, PathBuf), LabError> {
    let all = plan(experiments, opts.quick);
    let held: Vec<Experiment> = experiments
        .iter()
        .copied()
        .filter(|&e| {
            all.iter()
                .enumerate()
                .any(|(k, (x, _))| *x == e && shard.holds(k))
        })
        .collect();
    lab::check_room(&held, &opts.out)?;
    fs::create_dir_all(&opts.out).map_err(|e| LabError::Output(opts.out.clone(), e))?;
    let info = RunInfo::now(opts.quick, opts.seed);
    let mut done = Vec::new();
    for (k, (e, p)) in all.iter().enumerate().filter(|(k, _)| shard.holds(*k)) {
        debug_assert!(shard.holds(k));
        let output = e.run_point(&p.params, opts);
        (opts.on_point)();
        lab::release_free_memory();
        done.push(Done {
            experiment: e.name().to_string(),
            point: p.clone(),
            output: output?,
        });
    }
    let file = ShardFile {
        format: FORMAT.into(),
        version: VERSION,
        shard: shard.to_string(),
        flashkv: info.version.into(),
        commit: info.commit,
        date: info.date,
        quick: opts.quick,
        seed: opts.seed,
        experiments: experiments.iter().map(|e| e.name().to_string()).collect(),
        points: all.len(),
        crc32c: checksum(&done)?,
        done,
    };
    let path = opts.out.join(shard.file_name());
    let text = serde_json::to_string_pretty(&file).map_err(|e| LabError::Data(e.to_string()))?;
    // Written whole or not at all: a merge never reads half a shard.
    let tmp = opts.out.join(format!(".{}.tmp", shard.file_name()));
    fs::write(&tmp, text + "\n").map_err(|e| LabError::Output(tmp.clone(), e))?;
    fs::rename(&tmp, &path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        LabError::Output(path.clone(), e)
    })?;
    Ok((file, path))
}

/// The shard files `paths` name: a file as is, a directory's
/// `shard-*-of-*.json` in name order.
fn shard_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, LabError> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_file() {
            files.push(p.clone());
            continue;
        }
        let entries =
            fs::read_dir(p).map_err(|e| LabError::Shard(format!("{}: {e}", p.display())))?;
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|f| {
                let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.starts_with("shard-") && name.ends_with(".json") && name.contains("-of-")
            })
            .collect();
        if found.is_empty() {
            return Err(LabError::Shard(format!(
                "{}: no shard files (shard-I-of-N.json) in it",
                p.display()
            )));
        }
        found.sort();
        files.extend(found);
    }
    Ok(files)
}

/// Reads and checks one shard file.
fn read(path: &Path) -> Result<(ShardFile, Shard), LabError> {
    let bad = |why: String| LabError::Shard(format!("{}: {why}", path.display()));
    let text = fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let f: ShardFile = serde_json::from_str(&text)
        .map_err(|e| bad(format!("not a flashkv lab shard file ({e})")))?;
    if f.format != FORMAT || f.version != VERSION {
        return Err(bad(format!(
            "{} version {}, not {FORMAT} version {VERSION}",
            f.format, f.version
        )));
    }
    if checksum(&f.done)? != f.crc32c {
        return Err(bad(
            "checksum mismatch: the file was changed or damaged".into()
        ));
    }
    let shard: Shard = f.shard.parse().map_err(bad)?;
    Ok((f, shard))
}

/// What every shard of one run agrees on.
#[derive(Debug, PartialEq)]
struct RunKey<'a> {
    flashkv: &'a str,
    commit: &'a str,
    quick: bool,
    seed: u64,
    experiments: &'a [String],
    points: usize,
    count: u32,
}

fn key(f: &ShardFile, s: Shard) -> RunKey<'_> {
    RunKey {
        flashkv: &f.flashkv,
        commit: &f.commit,
        quick: f.quick,
        seed: f.seed,
        experiments: &f.experiments,
        points: f.points,
        count: s.count,
    }
}

/// The shards of one run, checked to be all of it: same run, every
/// `i/n` once, every point of this flashkv's grid once.
fn gather(paths: &[PathBuf]) -> Result<(Vec<ShardFile>, Vec<Experiment>), LabError> {
    let files = shard_files(paths)?;
    let mut shards: Vec<(ShardFile, Shard, &PathBuf)> = Vec::new();
    for path in &files {
        let (f, s) = read(path)?;
        if let Some((first, s0, p0)) = shards.first() {
            if key(first, *s0) != key(&f, s) {
                return Err(LabError::Shard(format!(
                    "{} and {} come from different runs (flashkv, commit, --quick, --seed, experiments or N differ)",
                    p0.display(),
                    path.display()
                )));
            }
        }
        if let Some((_, _, p)) = shards.iter().find(|(_, t, _)| *t == s) {
            return Err(LabError::Shard(format!(
                "shard {s} given twice: {} and {}",
                p.display(),
                path.display()
            )));
        }
        shards.push((f, s, path));
    }
    let Some((first, s0, _)) = shards.first() else {
        return Err(LabError::Shard("no shard files given".into()));
    };
    if let Some(i) = (1..=s0.count).find(|&i| !shards.iter().any(|(_, s, _)| s.index == i)) {
        return Err(LabError::Shard(format!(
            "shard {i}/{} is missing",
            s0.count
        )));
    }
    if first.flashkv != env!("CARGO_PKG_VERSION") {
        return Err(LabError::Shard(format!(
            "the shards were made by flashkv {}, this is {}",
            first.flashkv,
            env!("CARGO_PKG_VERSION")
        )));
    }
    let experiments = first
        .experiments
        .iter()
        .map(|n| {
            Experiment::parse(n)
                .ok_or_else(|| LabError::Shard(format!("unknown experiment '{n}' in the shards")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((shards.into_iter().map(|s| s.0).collect(), experiments))
}

/// Each experiment's outputs in grid order, checked against the grid.
fn assemble(
    shards: Vec<ShardFile>,
    experiments: &[Experiment],
    quick: bool,
) -> Result<Vec<(Experiment, Vec<Output>)>, LabError> {
    let plan = plan(experiments, quick);
    let mut slots: Vec<Option<Output>> = vec![None; plan.len()];
    for d in shards.into_iter().flat_map(|f| f.done) {
        let k = plan
            .iter()
            .position(|(e, p)| e.name() == d.experiment && p.index == d.point.index)
            .filter(|&k| plan[k].1 == d.point)
            .ok_or_else(|| {
                LabError::Shard(format!(
                    "{} point {} ({}) is not in this flashkv's grid",
                    d.experiment, d.point.index, d.point.id
                ))
            })?;
        if slots[k].replace(d.output).is_some() {
            return Err(LabError::Shard(format!(
                "{} point {} ({}) is in two shards",
                d.experiment, d.point.index, d.point.id
            )));
        }
    }
    if let Some(k) = slots.iter().position(Option::is_none) {
        return Err(LabError::Shard(format!(
            "{} point {} ({}) is in no shard",
            plan[k].0.name(),
            plan[k].1.index,
            plan[k].1.id
        )));
    }
    let mut out: Vec<(Experiment, Vec<Output>)> =
        experiments.iter().map(|&e| (e, Vec::new())).collect();
    for ((e, _), o) in plan.iter().zip(slots.into_iter().flatten()) {
        let slot = out
            .iter_mut()
            .find(|(x, _)| x == e)
            .expect("planned experiment");
        slot.1.push(o);
    }
    Ok(out)
}

/// `flashkv lab merge`: the results of the run the shards under `paths`
/// came from, written to `out` as that run would have written them (the
/// summary dated by the latest shard). Returns the sections.
pub fn merge(
    paths: &[PathBuf],
    out: &Path,
    on_progress: Box<dyn Fn(&str)>,
) -> Result<Vec<Section>, LabError> {
    let (shards, experiments) = gather(paths)?;
    let first = &shards[0];
    let (quick, seed) = (first.quick, first.seed);
    let mut info = RunInfo::now(quick, seed);
    info.commit = first.commit.clone();
    info.date = shards
        .iter()
        .map(|f| f.date.clone())
        .max()
        .unwrap_or(info.date);
    let parts = assemble(shards, &experiments, quick)?;
    let opts = LabOptions {
        quick,
        out: out.to_path_buf(),
        seed,
        on_progress,
        on_point: Box::new(|| {}),
    };
    lab::write_results(&opts, &info, &experiments, |e| {
        let outputs = &parts.iter().find(|(x, _)| *x == e).expect("assembled").1;
        opts.progress(&format!("merge {}", e.name()));
        e.report(&opts, outputs)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_split_round_robin() {
        let s: Shard = "2/3".parse().unwrap();
        assert_eq!(s, Shard { index: 2, count: 3 });
        assert_eq!(s.to_string(), "2/3");
        assert_eq!(s.file_name(), "shard-2-of-3.json");
        let held: Vec<usize> = (0..8).filter(|&k| s.holds(k)).collect();
        assert_eq!(held, [1, 4, 7]);
        for bad in ["0/3", "4/3", "1", "a/b", "1/0", "-1/2", "", "1/2/3"] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("is not I/N") && !e.contains('\n'), "{bad}: {e}");
        }
        // Every point in exactly one of n shards.
        for n in 1..6u32 {
            for k in 0..20 {
                let owners = (1..=n).filter(|&i| Shard { index: i, count: n }.holds(k));
                assert_eq!(owners.count(), 1);
            }
        }
    }

    #[test]
    fn every_experiment_has_a_grid_of_unique_points() {
        for e in Experiment::ALL {
            for quick in [false, true] {
                let pts = e.points(quick);
                assert!(!pts.is_empty(), "{}", e.name());
                for (i, p) in pts.iter().enumerate() {
                    assert_eq!(p.index, i);
                }
                let mut ids: Vec<&str> = pts.iter().map(|p| p.id.as_str()).collect();
                ids.sort_unstable();
                ids.dedup();
                assert_eq!(ids.len(), pts.len(), "{}", e.name());
            }
        }
        assert_eq!(Experiment::Buffer.points(true).len(), 2 * 2 * 4 * 4 * 7);
        assert_eq!(Experiment::Ipl.points(true).len(), 6 * 2 + 2 * 4 + 2);
        assert_eq!(Experiment::Ipl.points(false).len(), 6 * 2 + 2 * 12 + 2);
    }
}
