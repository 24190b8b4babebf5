//! Values between Rust and Python: rows go through JSON text (Python's
//! `json` keeps their field order), sizes are ints or strings ("4k").

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};
use serde::Serialize;

use crate::errors::invalid;

/// A Python object from JSON text.
pub fn loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

/// `v` as the Python object its JSON makes.
pub fn to_py<'py>(py: Python<'py>, v: &impl Serialize) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| invalid(e.to_string()))?;
    loads(py, &text)
}

/// A JSON-compatible Python object as JSON text.
pub fn dumps(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    let json = obj.py().import("json")?;
    json.call_method1("dumps", (obj,))?.extract()
}

/// A size: a non-negative int, or a string such as "4k", "64 MiB".
pub fn size(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(s) = obj.cast::<PyString>() {
        let s = s.to_cow()?;
        return flashkv_device::parse_size(&s).map_err(|_| {
            invalid(format!(
                "{what} '{s}' is not a size (use bytes or e.g. 4k, 64m, 1g)"
            ))
        });
    }
    obj.extract::<u64>().map_err(|_| {
        invalid(format!(
            "{what} {obj} is not a size (a non-negative int or e.g. '4k')"
        ))
    })
}

/// Like [`size`], greater than zero.
pub fn nonzero_size(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<u64> {
    match size(what, obj)? {
        0 => Err(invalid(format!("{what} must be greater than zero"))),
        n => Ok(n),
    }
}

/// A key or value: bytes, bytearray or str (as UTF-8).
pub fn bytes(what: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "{what} must be bytes, bytearray or str, not {}",
        obj.get_type().name()?
    )))
}

/// A list of names given as a list or one comma-separated string.
pub fn names(obj: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s
            .to_cow()?
            .split(',')
            .map(|p| p.trim().to_string())
            .collect());
    }
    obj.extract()
}
