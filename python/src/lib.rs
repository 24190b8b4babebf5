//! `flashkv._native`: the Rust side of the `flashkv` Python package.
//! Devices, the key-value store, trace replay, the advisor and the lab's
//! points; `flashkv/__init__.py` adds sweeps, frames and the exceptions.

mod convert;
mod db;
mod device;
mod errors;
mod interrupt;
mod lab;
mod runs;

use pyo3::prelude::*;

/// Device presets by name, in `flashkv devices` order.
#[pyfunction]
fn presets() -> Vec<&'static str> {
    flashkv_device::presets::names()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<device::Device>()?;
    m.add_class::<db::Db>()?;
    m.add_class::<db::Batch>()?;
    m.add_class::<db::RangeIter>()?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(runs::replay, m)?)?;
    m.add_function(wrap_pyfunction!(runs::advise, m)?)?;
    m.add_function(wrap_pyfunction!(lab::experiments, m)?)?;
    m.add_function(wrap_pyfunction!(lab::points, m)?)?;
    m.add_function(wrap_pyfunction!(lab::run_point, m)?)?;
    Ok(())
}
