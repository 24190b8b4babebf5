//! Rust errors as Python exceptions, with the one-line messages the command
//! line prints. The classes live in `flashkv/errors.py`, so they can also
//! derive from Python's own (`InvalidInput` is a `ValueError`); bad input,
//! what the CLI exits 2 for, is an `InvalidInput`.

use flashkv_device::DeviceError;
use flashkv_engine::Error as EngineError;
use flashkv_hybrid::HybridError;
use flashkv_lab::advisor::AdviceError;
use flashkv_lab::lab::LabError;
use flashkv_lab::profile::ProfileError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// An instance of `flashkv.errors.<class>` with `msg`.
pub fn raise(class: &str, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::attach(|py| {
        let cls = py
            .import("flashkv.errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
        match cls {
            Ok(cls) => PyErr::from_type(cls, msg),
            Err(e) => e,
        }
    })
}

pub fn invalid(msg: impl Into<String>) -> PyErr {
    raise("InvalidInput", msg)
}

/// The class a device error belongs to.
fn device_class(e: &DeviceError) -> &'static str {
    match e {
        DeviceError::UnknownPreset { .. } => "UnknownPreset",
        DeviceError::Spec(_) => "SpecError",
        DeviceError::Misaligned { .. } => "MisalignedIO",
        DeviceError::OutOfRange { .. } => "OutOfRange",
        DeviceError::BadInput(_) => "InvalidInput",
        _ => "DeviceError",
    }
}

pub fn device(e: DeviceError) -> PyErr {
    raise(device_class(&e), e.to_string())
}

pub fn engine(e: EngineError) -> PyErr {
    let class = match &e {
        EngineError::Device(d) => device_class(d),
        EngineError::Corrupt { .. } | EngineError::Version { .. } => "Corrupt",
        EngineError::NotAStore
        | EngineError::NotAStoreFile { .. }
        | EngineError::NoStore { .. } => "NotAStore",
        EngineError::Locked { .. } => "StoreLocked",
        EngineError::KeyTooLarge { .. }
        | EngineError::ValueTooLarge { .. }
        | EngineError::InvalidOption { .. }
        | EngineError::StoreMismatch { .. } => "InvalidInput",
        _ => "StoreError",
    };
    raise(class, e.to_string())
}

pub fn profile(e: ProfileError) -> PyErr {
    match e {
        ProfileError::Device(d) => device(d),
        other => invalid(other.to_string()),
    }
}

pub fn advice(e: AdviceError) -> PyErr {
    match e {
        AdviceError::Profile(p) => profile(p),
        other => invalid(other.to_string()),
    }
}

pub fn hybrid(e: HybridError) -> PyErr {
    match e {
        HybridError::Device(d) => device(d),
        other => invalid(other.to_string()),
    }
}

pub fn lab(e: LabError) -> PyErr {
    match e {
        LabError::Device(d) => device(d),
        LabError::Engine(d) => engine(d),
        LabError::Profile(p) => profile(p),
        LabError::Params(_) => invalid(e.to_string()),
        other => raise("LabError", other.to_string()),
    }
}
