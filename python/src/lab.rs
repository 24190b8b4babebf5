//! The lab's experiments as data: their points, and one point run, for
//! `flashkv.sweep` (locally or on Dask workers).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use flashkv_lab::lab::{Experiment, LabOptions};
use flashkv_lab::points::Params;
use pyo3::prelude::*;

use crate::convert::{dumps, loads, to_py};
use crate::errors::{self, invalid};

fn experiment(name: &str) -> PyResult<Experiment> {
    Experiment::parse(name).ok_or_else(|| {
        let known: Vec<&str> = Experiment::ALL.iter().map(|e| e.name()).collect();
        invalid(format!(
            "unknown experiment '{name}' (known: {})",
            known.join(", ")
        ))
    })
}

/// The lab's experiments, in the order `flashkv lab` runs them.
#[pyfunction]
pub fn experiments() -> Vec<&'static str> {
    Experiment::ALL.iter().map(|e| e.name()).collect()
}

/// The experiment's grid: `{"index", "id", "params"}` per point.
#[pyfunction]
#[pyo3(signature = (experiment, quick=false))]
pub fn points<'py>(py: Python<'py>, experiment: &str, quick: bool) -> PyResult<Bound<'py, PyAny>> {
    to_py(py, &self::experiment(experiment)?.points(quick))
}

/// A scratch folder for one point (the hybrid's SSD file), removed after.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> PyResult<Scratch> {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("flashkv-point-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| errors::raise("LabError", format!("{}: {e}", dir.display())))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one point of `experiment` with `params` (a dict as `points` gives
/// them) and returns its rows, as `flashkv lab EXP --json` prints them.
#[pyfunction]
#[pyo3(signature = (experiment, params, quick=false, seed=1))]
pub fn run_point<'py>(
    py: Python<'py>,
    experiment: &str,
    params: Bound<'py, PyAny>,
    quick: bool,
    seed: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let e = self::experiment(experiment)?;
    let params: Params = serde_json::from_str(&dumps(&params)?)
        .map_err(|err| invalid(format!("params must be a dict of JSON values: {err}")))?;
    let scratch = Scratch::new()?;
    let out = scratch.0.clone();
    let output = py
        .detach(move || {
            let opts = LabOptions {
                quick,
                out,
                seed,
                on_progress: Box::new(|_| {}),
                on_point: Box::new(|| {}),
            };
            e.run_point(&params, &opts)
        })
        .map_err(errors::lab)?;
    // The rows' own text, so each dict keeps its row's field order.
    let rows: Vec<&str> = output.rows.iter().map(|r| r.get()).collect();
    loads(py, &format!("[{}]", rows.join(",")))
}
