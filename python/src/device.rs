//! `flashkv.Device`: a preset, a spec file or a hybrid of two presets, its
//! I/O and counters, and the profiler on fresh copies of its model.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use flashkv_device::{
    presets, BlockDevice, Completion, DeviceSpec, DeviceStats, Geometry, Nanos, QueuedIo, SimDevice,
};
use flashkv_hybrid::HybridDevice;
use flashkv_lab::profile::{self, Pattern, ProfileSpec};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{json, Value};

use crate::convert::{bytes, names, nonzero_size, to_py};
use crate::errors::{self, invalid};
use crate::interrupt::{Interruptible, Stop};

/// What a device is made from: fresh copies are made from it.
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // one per Device, never in a collection
pub enum Model {
    Spec(DeviceSpec),
    /// SSD and HDD, the hybrid with its default policy.
    Hybrid(DeviceSpec, DeviceSpec),
}

impl Model {
    /// A new device of this model, as a fresh run needs it.
    pub fn build(&self) -> PyResult<Inner> {
        match self {
            Model::Spec(s) => Ok(Inner::Sim(Box::new(
                SimDevice::new(s).map_err(errors::device)?,
            ))),
            Model::Hybrid(s, h) => {
                let ssd = SimDevice::new(s).map_err(errors::device)?;
                let hdd = SimDevice::new(h).map_err(errors::device)?;
                let d = HybridDevice::create(Box::new(ssd), Box::new(hdd), Default::default())
                    .map_err(errors::hybrid)?;
                Ok(Inner::Hybrid(Box::new(d)))
            }
        }
    }

    pub fn name(&self) -> String {
        match self {
            Model::Spec(s) => s.name.clone(),
            Model::Hybrid(s, h) => format!("hybrid({},{})", s.name, h.name),
        }
    }
}

/// The device itself.
pub enum Inner {
    Sim(Box<SimDevice>),
    Hybrid(Box<HybridDevice>),
}

impl Inner {
    fn dev(&self) -> &dyn BlockDevice {
        match self {
            Inner::Sim(d) => &**d,
            Inner::Hybrid(d) => &**d,
        }
    }
    fn dev_mut(&mut self) -> &mut dyn BlockDevice {
        match self {
            Inner::Sim(d) => &mut **d,
            Inner::Hybrid(d) => &mut **d,
        }
    }
}

/// A handle on a device shared by its `Device` and a `Db` open on it.
#[derive(Clone)]
pub struct Handle(Arc<Mutex<Inner>>);

impl Handle {
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Forwards every `BlockDevice` method to the device `$get` / `$get_mut` give.
macro_rules! forward {
    ($t:ty, $s:ident, $get:expr, $get_mut:expr) => {
        impl BlockDevice for $t {
            fn geometry(&$s) -> Geometry {
                $get.geometry()
            }
            fn read_at(&mut $s, at: Nanos, offset: u64, buf: &mut [u8]) -> flashkv_device::Result<Completion> {
                $get_mut.read_at(at, offset, buf)
            }
            fn write_at(&mut $s, at: Nanos, offset: u64, buf: &[u8]) -> flashkv_device::Result<Completion> {
                $get_mut.write_at(at, offset, buf)
            }
            fn flush_at(&mut $s, at: Nanos) -> flashkv_device::Result<Completion> {
                $get_mut.flush_at(at)
            }
            fn trim_at(&mut $s, at: Nanos, offset: u64, len: u64) -> flashkv_device::Result<Completion> {
                $get_mut.trim_at(at, offset, len)
            }
            fn erase_at(&mut $s, at: Nanos, unit: u64) -> flashkv_device::Result<Completion> {
                $get_mut.erase_at(at, unit)
            }
            fn is_programmed(&$s, offset: u64, len: u64) -> bool {
                $get.is_programmed(offset, len)
            }
            fn clock(&$s) -> Nanos {
                $get.clock()
            }
            fn stats(&$s) -> DeviceStats {
                $get.stats()
            }
            fn reorders_queue(&$s) -> bool {
                $get.reorders_queue()
            }
            fn pick_next(&$s, at: Nanos, queued: &[QueuedIo]) -> usize {
                $get.pick_next(at, queued)
            }
            fn busy_until(&$s) -> Nanos {
                $get.busy_until()
            }
            fn fill_sequential(&mut $s, len: u64) -> flashkv_device::Result<bool> {
                $get_mut.fill_sequential(len)
            }
        }
    };
}

forward!(Inner, self, self.dev(), self.dev_mut());
forward!(Handle, self, self.lock().dev(), self.lock().dev_mut());

/// A simulated device: a preset, a spec file, or a hybrid of two presets.
#[pyclass(module = "flashkv._native")]
pub struct Device {
    pub model: Model,
    pub handle: Handle,
    /// A `Db` is open on the device: writes from here would corrupt it.
    pub busy: Arc<AtomicBool>,
}

fn completion(c: Completion) -> Value {
    json!({"start_ns": c.start, "end_ns": c.end, "energy_nj": c.energy_nj})
}

const DEFAULT_PATTERNS: &str = "sr,rr,sw,rw";
const DEFAULT_BLOCKS: [&str; 5] = ["4k", "16k", "64k", "256k", "1m"];

impl Device {
    fn from_model(model: Model) -> PyResult<Device> {
        let inner = model.build()?;
        Ok(Device {
            model,
            handle: Handle(Arc::new(Mutex::new(inner))),
            busy: Arc::default(),
        })
    }

    /// A fresh device of preset `name`.
    pub fn from_preset(name: &str) -> PyResult<Device> {
        Device::from_model(Model::Spec(
            presets::get(name.trim()).map_err(errors::device)?,
        ))
    }

    /// The device for writing: refused while a `Db` has it.
    fn writable(&self) -> PyResult<MutexGuard<'_, Inner>> {
        if self.busy.load(Ordering::Acquire) {
            return Err(errors::raise(
                "StoreError",
                "the device is in use by an open Db; close the Db first",
            ));
        }
        Ok(self.handle.lock())
    }

    /// The profile's runs, each checked against the device.
    fn specs(
        &self,
        patterns: Option<&Bound<'_, PyAny>>,
        block_sizes: Option<&Bound<'_, PyAny>>,
        ops: u64,
        iodepth: usize,
        span: Option<&Bound<'_, PyAny>>,
        seed: u64,
    ) -> PyResult<Vec<ProfileSpec>> {
        let patterns: Vec<Pattern> = match patterns {
            Some(p) => names(p)?,
            None => DEFAULT_PATTERNS.split(',').map(String::from).collect(),
        }
        .iter()
        .map(|p| {
            Pattern::parse(p)
                .ok_or_else(|| invalid(format!("unknown pattern '{p}' (sr, rr, sw, rw, mix)")))
        })
        .collect::<PyResult<_>>()?;
        let blocks: Vec<u64> = match block_sizes {
            Some(b) => b
                .try_iter()?
                .map(|x| nonzero_size("block size", &x?))
                .collect::<PyResult<_>>()?,
            None => DEFAULT_BLOCKS
                .iter()
                .map(|b| flashkv_device::parse_size(b).expect("a valid default"))
                .collect(),
        };
        let probe = self.model.build()?;
        let span = match span {
            Some(s) => nonzero_size("span", s)?,
            None => probe.dev().geometry().capacity,
        };
        let specs: Vec<ProfileSpec> = patterns
            .iter()
            .flat_map(|&pattern| {
                blocks.iter().map(move |&block_size| ProfileSpec {
                    pattern,
                    block_size,
                    ops,
                    span,
                    iodepth,
                    seed,
                })
            })
            .collect();
        for s in &specs {
            profile::validate(probe.dev(), s).map_err(errors::profile)?;
        }
        Ok(specs)
    }
}

#[pymethods]
impl Device {
    #[new]
    #[pyo3(signature = (preset=None, *, spec=None, hybrid=None, capacity=None))]
    fn new(
        preset: Option<String>,
        spec: Option<PathBuf>,
        hybrid: Option<(String, String)>,
        capacity: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut model = match (preset, spec, hybrid) {
            (Some(p), None, None) => Model::Spec(presets::get(&p).map_err(errors::device)?),
            (None, Some(path), None) => {
                Model::Spec(DeviceSpec::from_file(&path).map_err(errors::device)?)
            }
            (None, None, Some((s, h))) => Model::Hybrid(
                presets::get(s.trim()).map_err(errors::device)?,
                presets::get(h.trim()).map_err(errors::device)?,
            ),
            _ => {
                return Err(invalid(
                    "give one of: a preset name, spec=PATH or hybrid=(SSD, HDD)",
                ))
            }
        };
        if let Some(c) = capacity {
            match &mut model {
                Model::Spec(s) => s.capacity = nonzero_size("capacity", &c)?,
                Model::Hybrid(..) => {
                    return Err(invalid(
                        "capacity applies to a preset or spec, not a hybrid",
                    ))
                }
            }
        }
        Device::from_model(model)
    }

    /// The preset's or spec's name; `hybrid(SSD,HDD)` for a hybrid.
    #[getter]
    fn name(&self) -> String {
        self.model.name()
    }

    #[getter]
    fn capacity(&self) -> u64 {
        self.handle.geometry().capacity
    }

    #[getter]
    fn sector_size(&self) -> u32 {
        self.handle.geometry().sector_size
    }

    /// The erase unit in bytes for raw NAND (the host erases), else None.
    #[getter]
    fn erase_unit(&self) -> Option<u64> {
        self.handle.geometry().erase_unit
    }

    /// The device's virtual clock, ns.
    #[getter]
    fn clock_ns(&self) -> u64 {
        self.handle.clock()
    }

    fn __repr__(&self) -> String {
        format!(
            "Device('{}', capacity={})",
            self.model.name(),
            self.capacity()
        )
    }

    /// Reads `length` bytes at `offset` (both multiples of the sector).
    fn read<'py>(
        &self,
        py: Python<'py>,
        offset: u64,
        length: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = vec![0u8; length];
        self.handle
            .lock()
            .dev_mut()
            .read(offset, &mut buf)
            .map_err(errors::device)?;
        Ok(PyBytes::new(py, &buf))
    }

    /// Writes `data` at `offset`; returns when it started and ended (virtual ns) and its energy.
    fn write<'py>(
        &self,
        py: Python<'py>,
        offset: u64,
        data: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let data = bytes("data", &data)?;
        let c = self
            .writable()?
            .dev_mut()
            .write(offset, &data)
            .map_err(errors::device)?;
        to_py(py, &completion(c))
    }

    /// Tells the device `[offset, offset + length)` holds no data.
    fn trim<'py>(&self, py: Python<'py>, offset: u64, length: u64) -> PyResult<Bound<'py, PyAny>> {
        let c = self
            .writable()?
            .dev_mut()
            .trim(offset, length)
            .map_err(errors::device)?;
        to_py(py, &completion(c))
    }

    /// Makes every completed write durable.
    fn flush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let c = self
            .handle
            .lock()
            .dev_mut()
            .flush()
            .map_err(errors::device)?;
        to_py(py, &completion(c))
    }

    /// Erases erase unit `unit` (raw NAND only).
    fn erase<'py>(&self, py: Python<'py>, unit: u64) -> PyResult<Bound<'py, PyAny>> {
        let c = self
            .writable()?
            .dev_mut()
            .erase(unit)
            .map_err(errors::device)?;
        to_py(py, &completion(c))
    }

    /// Counters since the device was made; a hybrid adds `hybrid` (its own
    /// counters), `ssd` and `hdd` (each device's).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.handle.lock();
        let mut v =
            serde_json::to_value(inner.dev().stats()).map_err(|e| invalid(e.to_string()))?;
        if let (Inner::Hybrid(h), Value::Object(m)) = (&*inner, &mut v) {
            let (ssd, hdd) = h.devices();
            let extra = json!({"hybrid": h.hybrid_stats(), "ssd": ssd.stats(), "hdd": hdd.stats()});
            if let Value::Object(e) = extra {
                m.extend(e);
            }
        }
        to_py(py, &v)
    }

    /// Runs each access pattern at each block size on a fresh copy of this
    /// device's model (as `flashkv profile` does; this device is untouched)
    /// and returns one row per run. Ctrl-C stops it.
    #[pyo3(signature = (patterns=None, block_sizes=None, ops=2000, iodepth=1, span=None, seed=1))]
    #[allow(clippy::too_many_arguments)]
    fn profile<'py>(
        &self,
        py: Python<'py>,
        patterns: Option<Bound<'py, PyAny>>,
        block_sizes: Option<Bound<'py, PyAny>>,
        ops: u64,
        iodepth: usize,
        span: Option<Bound<'py, PyAny>>,
        seed: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let specs = self.specs(
            patterns.as_ref(),
            block_sizes.as_ref(),
            ops,
            iodepth,
            span.as_ref(),
            seed,
        )?;
        let (model, name) = (self.model.clone(), self.model.name());
        let stop = Stop::default();
        let s = stop.clone();
        let rows = py.detach(move || {
            specs
                .iter()
                .map(|spec| {
                    let mut dev = Interruptible::new(model.build()?, s.clone());
                    profile::run(&mut dev, &name, spec).map_err(errors::profile)
                })
                .collect::<PyResult<Vec<_>>>()
        });
        to_py(py, &stop.result(rows)?)
    }
}
