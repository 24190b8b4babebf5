//! The device `serve` exports: a preset, a spec file, a hybrid of two
//! presets, or a real file. A file serve creates carries the flashkv marker
//! in a 4 KiB header (the format `profile --path` makes, so each recognises
//! the other's files) and exports what follows it; any other file or block
//! device is served whole, and only with --force.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use flashkv_device::{presets, BlockDevice, DeviceSpec, FileDevice, FileOptions, SimDevice};
use flashkv_hybrid::Options;

use super::served::Served;
use flashkv_lab::real::{HEADER, MARKER};

use crate::error::CliError;
use crate::files::{self, Created, Found};
use crate::hybrid::PairArg;
use crate::units::human;

/// An opened device and the window of it to export.
pub struct Target {
    pub dev: Served,
    pub base: u64,
    pub size: u64,
    pub name: String,
    /// A disk holds the data (an HDD preset or spec, or the hybrid, whose
    /// capacity is its HDD's).
    pub rotational: bool,
}

fn usage(m: String) -> CliError {
    CliError::Usage(m)
}

/// A simulated device, exported whole.
fn whole(dev: Served, name: String, rotational: bool) -> Target {
    let size = dev.get().geometry().capacity;
    Target {
        dev,
        base: 0,
        size,
        name,
        rotational,
    }
}

fn simulated(spec: &DeviceSpec) -> Result<Target, CliError> {
    let dev = SimDevice::new(spec).map_err(|e| usage(e.to_string()))?;
    let rotational = spec.model.kind() == "hdd";
    Ok(whole(
        Served::Plain(Box::new(dev)),
        spec.name.clone(),
        rotational,
    ))
}

pub fn preset(name: &str) -> Result<Target, CliError> {
    let spec = presets::get(name.trim()).map_err(|e| usage(e.to_string()))?;
    simulated(&spec)
}

pub fn spec(path: &Path) -> Result<Target, CliError> {
    if files::inspect("--spec", path)? == Found::Missing {
        return Err(usage(format!("--spec {}: no such file", path.display())));
    }
    let spec = DeviceSpec::from_file(path)
        .map_err(|e| usage(format!("--spec {}: {e}", path.display())))?;
    simulated(&spec)
}

/// `SSD,HDD`: two presets, the cache first, as `replay --hybrid` takes
/// them, or the two files `hybrid create` made; run with `policy`.
pub fn hybrid(pair: &PairArg, policy: Options) -> Result<Target, CliError> {
    let (dev, name) = pair.open(policy)?;
    Ok(whole(Served::Hybrid(Box::new(dev)), name, true))
}

/// A real file: made at `size` when missing, else one flashkv made, else
/// (with `force`) anything that is a file or an unmounted block device.
pub fn file(
    path: &Path,
    size: Option<u64>,
    force: bool,
    created: &mut Created,
) -> Result<Target, CliError> {
    let shown = path.display();
    let found = files::inspect("--file", path)?;
    let ours = matches!(found, Found::File(_)) && has_marker(path);
    if found != Found::Missing && size.is_some() {
        return Err(usage(format!(
            "--file {shown}: exists; --size applies only to a file serve creates"
        )));
    }
    let base = match found {
        Found::Missing => {
            let Some(n) = size else {
                return Err(usage(format!(
                    "--file {shown}: does not exist; give --size to create it"
                )));
            };
            if n % HEADER != 0 {
                return Err(usage(format!("--size {n}: not a multiple of 4 KiB")));
            }
            files::ensure_room("--file", path, HEADER + n)?;
            create_marked(path, HEADER + n, created)?;
            HEADER
        }
        _ if ours => HEADER,
        _ if force => 0,
        Found::File(n) => {
            return Err(usage(format!(
                "--file {shown}: a {} file flashkv did not create; clients could overwrite it; pass --force to serve it anyway",
                human(n)
            )))
        }
        Found::BlockDevice => {
            return Err(usage(format!(
                "--file {shown}: a block device; clients could overwrite it; pass --force to serve it anyway"
            )))
        }
    };
    let opts = FileOptions {
        create: false,
        ..FileOptions::default()
    };
    let dev = FileDevice::open(path, &opts).map_err(|e| usage(e.to_string()))?;
    if let Some(w) = dev.warning() {
        eprintln!("warning: {w}");
    }
    let capacity = dev.geometry().capacity;
    if capacity <= base {
        return Err(usage(format!(
            "--file {shown}: holds no data after its header"
        )));
    }
    Ok(Target {
        dev: Served::Plain(Box::new(dev)),
        base,
        size: capacity - base,
        name: shown.to_string(),
        rotational: false,
    })
}

/// Creates `path` (never over an existing file) with the marker header.
fn create_marked(path: &Path, len: u64, created: &mut Created) -> Result<(), CliError> {
    let fail = |e: std::io::Error| usage(format!("--file {}: {e}", path.display()));
    let mut f = File::create_new(path).map_err(fail)?;
    created.add(path);
    let mut header = vec![0u8; HEADER as usize];
    header[..MARKER.len()].copy_from_slice(MARKER);
    f.write_all(&header).map_err(fail)?;
    f.set_len(len).map_err(fail)?;
    f.sync_all().map_err(fail)?;
    flashkv_device::sync_parent(path).map_err(fail)
}

fn has_marker(path: &Path) -> bool {
    let mut head = vec![0u8; MARKER.len()];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == MARKER
}
