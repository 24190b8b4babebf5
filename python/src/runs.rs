//! `flashkv.replay` and `flashkv.advise`: the `replay` and `advise`
//! commands as functions returning what their `--json` prints.

use std::path::{Path, PathBuf};

use flashkv_device::{BlockDevice, DeviceSpec};
use flashkv_hybrid::replay::{replay_mapped, DeviceMap, ReplayReport, Timing};
use flashkv_hybrid::trace::{open_file, Format, TimeUnit, TraceError};
use flashkv_lab::advisor::{self, AdviceOptions, DeviceClass};
use flashkv_lab::profile::ProfileRow;
use pyo3::prelude::*;
use serde_json::{json, Value};

use crate::convert::{dumps, nonzero_size, to_py};
use crate::device::{Device, Inner, Model};
use crate::errors::{self, invalid};
use crate::interrupt::{Interruptible, Stop};

/// A `Device`, or a preset name for a fresh one.
fn device(obj: &Bound<'_, PyAny>) -> PyResult<Py<Device>> {
    if let Ok(d) = obj.cast::<Device>() {
        return Ok(d.clone().unbind());
    }
    let name: String = obj
        .extract()
        .map_err(|_| invalid("device must be a Device or a preset name"))?;
    let d = Bound::new(obj.py(), Device::from_preset(&name)?)?;
    Ok(d.unbind())
}

fn trace_error(path: &Path, e: TraceError) -> PyErr {
    errors::raise("TraceError", format!("{}: {e}", path.display()))
}

/// Replays a block trace on `device` (a `Device`, whose state it changes,
/// or a preset name) and returns the report `flashkv replay --json` prints.
#[pyfunction]
#[pyo3(signature = (trace, format, device, *, time_unit=None, device_map=None, back_to_back=false, limit=None))]
#[allow(clippy::too_many_arguments)]
pub fn replay<'py>(
    py: Python<'py>,
    trace: PathBuf,
    format: &str,
    device: Bound<'py, PyAny>,
    time_unit: Option<&str>,
    device_map: Option<&str>,
    back_to_back: bool,
    limit: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let format: Format = format
        .parse()
        .map_err(|e: TraceError| invalid(e.to_string()))?;
    let unit: Option<TimeUnit> = time_unit.map(str::parse).transpose().map_err(invalid)?;
    let map: DeviceMap = device_map
        .map(str::parse)
        .transpose()
        .map_err(|e: String| invalid(format!("device_map: {e}")))?
        .unwrap_or_default();
    let limit = limit.unwrap_or(usize::MAX);
    // A first pass finds a malformed line before anything is replayed.
    let records = || open_file(format, unit, &trace).map(|r| r.take(limit));
    let n = py.detach(|| -> Result<usize, TraceError> {
        let mut n = 0;
        for r in records()? {
            r?;
            n += 1;
        }
        Ok(n)
    });
    if n.map_err(|e| trace_error(&trace, e))? == 0 {
        return Err(errors::raise(
            "TraceError",
            format!("{}: no records", trace.display()),
        ));
    }
    let dev = self::device(&device)?;
    let dev = dev.borrow(py);
    let timing = if back_to_back {
        Timing::BackToBack
    } else {
        Timing::AsTraced
    };
    let stop = Stop::default();
    let mut target = Interruptible::new(dev.handle.clone(), stop.clone());
    let capacity = target.geometry().capacity;
    let report = py.detach(|| -> PyResult<ReplayReport> {
        let stream = records().map_err(|e| trace_error(&trace, e))?;
        let mut failure = None;
        let ok = stream.map_while(|r| r.map_err(|e| failure = Some(e)).ok());
        let report = replay_mapped(&mut target, ok, timing, &map).map_err(errors::device)?;
        match failure {
            Some(e) => Err(trace_error(&trace, e)),
            None => Ok(report),
        }
    });
    let report = stop.result(report)?;
    let mut out = json!({
        "trace": trace,
        "target": dev.model.name(),
        "capacity": capacity,
        "timing": if back_to_back { "back-to-back" } else { "as-traced" },
    });
    let extra = serde_json::to_value(&report).map_err(|e| invalid(e.to_string()))?;
    if let (Value::Object(o), Value::Object(e)) = (&mut out, extra) {
        o.extend(e);
        if let Inner::Hybrid(h) = &*dev.handle.lock() {
            let (ssd, hdd) = h.devices();
            o.insert("hybrid".into(), json!(h.hybrid_stats()));
            o.insert("ssd".into(), json!(ssd.stats()));
            o.insert("hdd".into(), json!(hdd.stats()));
        }
    }
    to_py(py, &out)
}

/// Advice for a device model (a `Device` of a preset or spec, or a preset
/// name: profiled in simulation) or a measured profile (rows as
/// `Device.profile` returns them, or the path of `flashkv profile --json`).
#[pyfunction]
#[pyo3(signature = (device=None, *, profile=None, file_size=None, page_size=None, iodepth=None, ops=None, device_usd=100.0, ram_usd_per_gb=3.0))]
#[allow(clippy::too_many_arguments)]
pub fn advise<'py>(
    py: Python<'py>,
    device: Option<Bound<'py, PyAny>>,
    profile: Option<Bound<'py, PyAny>>,
    file_size: Option<Bound<'py, PyAny>>,
    page_size: Option<Bound<'py, PyAny>>,
    iodepth: Option<usize>,
    ops: Option<u64>,
    device_usd: f64,
    ram_usd_per_gb: f64,
) -> PyResult<Bound<'py, PyAny>> {
    for (name, v) in [
        ("device_usd", device_usd),
        ("ram_usd_per_gb", ram_usd_per_gb),
    ] {
        if !(v.is_finite() && v > 0.0) {
            return Err(invalid(format!("{name} {v} is not a positive price")));
        }
    }
    let o = AdviceOptions {
        page_size: match &page_size {
            Some(p) => nonzero_size("page_size", p)?,
            None => 4096,
        },
        file_size: file_size
            .as_ref()
            .map(|f| nonzero_size("file_size", f))
            .transpose()?,
        iodepth: iodepth.unwrap_or(32),
        ops: ops.unwrap_or(300),
        device_usd,
        ram_usd_per_gb,
        seed: 1,
    };
    if o.iodepth == 0 || o.ops == 0 {
        return Err(invalid("ops and iodepth must be at least 1"));
    }
    let (rows, class) = match (device, profile) {
        (Some(d), None) => {
            let spec = model_spec(&d)?;
            let rows = py
                .detach(|| advisor::profile_model(&spec, &o))
                .map_err(errors::profile)?;
            (rows, DeviceClass::of_model(&spec.model))
        }
        (None, Some(p)) => {
            if o.file_size.is_some() || ops.is_some() || iodepth.is_some() {
                return Err(invalid(
                    "file_size, ops and iodepth apply to a model; a profile was measured with its own",
                ));
            }
            measured(&p)?
        }
        _ => return Err(invalid("give a device or profile=, not both")),
    };
    let advice = advisor::advise(&rows, class, &o).map_err(errors::advice)?;
    to_py(py, &advice)
}

/// The spec of a `Device` or preset name to profile.
fn model_spec(d: &Bound<'_, PyAny>) -> PyResult<DeviceSpec> {
    let dev = device(d)?;
    let dev = dev.borrow(d.py());
    match &dev.model {
        Model::Spec(s) => Ok(s.clone()),
        Model::Hybrid(..) => Err(invalid(
            "advise takes a preset or spec device, not a hybrid",
        )),
    }
}

/// Profile rows from a list of dicts or a JSON file.
fn measured(p: &Bound<'_, PyAny>) -> PyResult<(Vec<ProfileRow>, DeviceClass)> {
    let rows: Vec<ProfileRow> = match p.extract::<PathBuf>() {
        Ok(path) => {
            let bad = |e: String| invalid(format!("{}: {e}", path.display()));
            let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
            serde_json::from_str(&text)
                .map_err(|e| bad(format!("not the JSON of `flashkv profile --json`: {e}")))?
        }
        Err(_) => serde_json::from_str(&dumps(p)?)
            .map_err(|e| invalid(format!("profile rows are not those of Device.profile: {e}")))?,
    };
    let class = DeviceClass::of_rows(&rows)
        .ok_or_else(|| invalid("the profile has no random read (rr) rows"))?;
    Ok((rows, class))
}
