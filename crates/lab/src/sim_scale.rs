//! `flashkv lab sim-scale`: how fast the simulator runs and how much memory
//! it takes on real-size devices. The `nvme` preset's model at 64 GiB,
//! 512 GiB and 4 TiB is filled sequentially (fast preconditioning: the
//! mapping is set, not simulated), then serves random 4 KB requests, half
//! reads and half writes, over the whole device at queue depth 1 and 32.
//!
//! Wall-clock figures (requests per second, time to the first request) and
//! peak RSS vary from machine to machine and run to run; the simulated
//! IOPS are deterministic.

use std::time::Instant;

use flashkv_device::{presets, BlockDevice, DeviceSpec, SimDevice};
use serde::{Deserialize, Serialize};

use crate::lab::{LabError, LabOptions, Section};
use crate::points::{self, Output, Params, Point};
use crate::profile::{self, Pattern, ProfileSpec};
use crate::report::{f, size_label, write_csv, write_json, Table};

/// Capacities measured, in the order run (smallest first, so the peak after
/// each is its own as far as the kernel lets the peak be reset).
pub const CAPACITIES: [u64; 3] = [64 << 30, 512 << 30, 4 << 40];

/// One device size at one queue depth.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub capacity: u64,
    pub iodepth: usize,
    pub requests: u64,
    /// Building the device and filling it, seconds of wall time.
    pub setup_s: f64,
    /// From the start of setup until the first request completed, seconds.
    pub first_request_s: f64,
    /// Wall time of the measured requests, seconds.
    pub wall_s: f64,
    /// Simulated requests per second of wall time.
    pub requests_per_wall_s: f64,
    /// Requests per second of simulated time (deterministic).
    pub simulated_iops: f64,
    /// Peak resident memory of the process during this size's runs, bytes
    /// (None where /proc is not available).
    pub peak_rss_bytes: Option<u64>,
}

/// The `nvme` preset's model at `capacity`.
pub fn spec(capacity: u64) -> Result<DeviceSpec, LabError> {
    let mut s = presets::get("nvme")?;
    s.capacity = capacity;
    s.name = format!("nvme {}", size_label(capacity));
    Ok(s)
}

/// Builds and fills a device of `capacity`, measuring the time to its first
/// request; returns it with (setup s, first request s).
fn prepare(capacity: u64) -> Result<(SimDevice, f64, f64), LabError> {
    let t0 = Instant::now();
    let mut dev = SimDevice::new(&spec(capacity)?)?;
    if !dev.fill_sequential(capacity)? {
        return Err(LabError::Data("nvme model did not take a fast fill".into()));
    }
    let setup = t0.elapsed().as_secs_f64();
    let mut buf = vec![0u8; 4096];
    dev.read(capacity / 2, &mut buf)?;
    Ok((dev, setup, t0.elapsed().as_secs_f64()))
}

/// Measures one size at queue depths 1 and 32.
pub fn measure(
    capacity: u64,
    requests: u64,
    seed: u64,
    on: &dyn Fn(&str),
) -> Result<Vec<Row>, LabError> {
    on(&format!("sim-scale {}", size_label(capacity)));
    rss::reset_peak();
    let (mut dev, setup_s, first_request_s) = prepare(capacity)?;
    let mut rows = Vec::new();
    for iodepth in [1, 32] {
        let spec = ProfileSpec {
            pattern: Pattern::Mix,
            block_size: 4096,
            ops: requests,
            span: capacity,
            iodepth,
            seed: seed ^ iodepth as u64,
        };
        let t = Instant::now();
        let r = profile::run_prepared(&mut dev, "nvme", &spec)?;
        let wall_s = t.elapsed().as_secs_f64().max(1e-9);
        rows.push(Row {
            capacity,
            iodepth,
            requests,
            setup_s,
            first_request_s,
            wall_s,
            requests_per_wall_s: requests as f64 / wall_s,
            simulated_iops: r.iops,
            peak_rss_bytes: None,
        });
    }
    let peak = rss::peak();
    for r in &mut rows {
        r.peak_rss_bytes = peak;
    }
    Ok(rows)
}

fn requests(opts: &LabOptions) -> u64 {
    if opts.quick {
        20_000
    } else {
        1_000_000
    }
}

/// A point: one capacity.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointParams {
    capacity: u64,
}

/// Every capacity, smallest first.
pub fn points() -> Vec<Point> {
    points::grid(CAPACITIES.map(|capacity| (size_label(capacity), PointParams { capacity })))
}

/// Measures one capacity: a row per queue depth.
pub fn run_point(params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
    let p: PointParams = points::parse("sim-scale", params)?;
    if p.capacity < 1 << 20 || p.capacity % 4096 != 0 {
        return Err(LabError::Params(format!(
            "sim-scale: capacity {} is not a multiple of 4 KiB of at least 1 MiB",
            p.capacity
        )));
    }
    Output::of(&measure(p.capacity, requests(opts), opts.seed, &|w| {
        opts.progress(w)
    })?)
}

/// `results/sim-scale/` from every capacity's rows.
pub fn report(opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
    let requests = requests(opts);
    let rows: Vec<Row> = points::rows(outputs)?;
    let dir = opts.dir("sim-scale")?;
    write_json(&dir.join("rows.json"), &rows)?;
    write_csv(&dir.join("rows.csv"), &rows)?;
    let mut t = Table::new(
        format!(
            "Simulator scale: nvme model, full-span random 4 KB 50/50, {requests} requests per point after a fast sequential fill"
        ),
        &[
            "capacity",
            "QD",
            "setup s",
            "1st request s",
            "requests/wall s",
            "simulated IOPS",
            "peak RSS MB",
        ],
    );
    for r in &rows {
        t.push(vec![
            size_label(r.capacity),
            r.iodepth.to_string(),
            f(r.setup_s, 2),
            f(r.first_request_s, 2),
            f(r.requests_per_wall_s, 0),
            f(r.simulated_iops, 0),
            r.peak_rss_bytes
                .map_or("n/a".into(), |b| f(b as f64 / 1e6, 0)),
        ]);
    }
    let note = "Wall-clock figures and RSS depend on the machine; the peak is the process's \
                (reset before each size where the kernel allows), so it includes the lab's \
                baseline. Only pages a run writes cost memory: the fill is recorded, not stored.\n";
    Ok(Section {
        name: "sim-scale",
        text: format!("{}\n{note}", t.text()),
        markdown: format!("## Simulator scale\n\n{}\n{note}", t.markdown()),
        json: serde_json::to_value(&rows).map_err(|e| LabError::Data(e.to_string()))?,
        claims: Vec::new(),
    })
}

/// The process's peak resident memory, from /proc (Linux).
mod rss {
    /// Resets the peak to the current RSS (Linux 4.0+; ignored elsewhere).
    pub fn reset_peak() {
        let _ = std::fs::write("/proc/self/clear_refs", "5");
    }

    /// VmHWM in bytes.
    pub fn peak() -> Option<u64> {
        let s = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_four_terabyte_device_serves_deterministically() {
        let run = || {
            let (mut dev, _, _) = prepare(4 << 40).unwrap();
            let spec = ProfileSpec {
                pattern: Pattern::Mix,
                block_size: 4096,
                ops: 2000,
                span: 4 << 40,
                iodepth: 32,
                seed: 5,
            };
            let r = profile::run_prepared(&mut dev, "nvme", &spec).unwrap();
            (r.iops, dev.stats())
        };
        let (a, sa) = run();
        let (b, sb) = run();
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        // Half the requests write; none reaches garbage collection yet.
        assert!(sa.host_writes > 900 && sa.host_writes < 1100, "{sa:?}");
        assert_eq!(sa.nand_page_programs, sa.host_writes);
        assert_eq!(sa.block_erases, 0);
    }
}
