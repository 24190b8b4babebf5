//! Devices for the hybrid's tests, and the machine the crash tests run on:
//! an SSD and an HDD, each behind the device crate's `FaultDevice`.
#![allow(dead_code)] // each test binary uses its own part

use flashkv_device::{BlockDevice, DeviceSpec, FaultDevice, FaultPlan, SimDevice};
use flashkv_hybrid::{HybridDevice, Options, Result};
use flashkv_testing::Shared;

/// A DRAM-model device: fast, deterministic, real data.
pub fn dram(capacity: &str, mb_per_s: f64) -> Box<dyn BlockDevice> {
    Box::new(timed(capacity, 20.0, mb_per_s))
}

/// A DRAM-model device costing `overhead_us` per command plus the transfer
/// at `mb_per_s`, one command at a time.
pub fn timed(capacity: &str, overhead_us: f64, mb_per_s: f64) -> SimDevice {
    let toml = format!(
        "capacity = \"{capacity}\"\n[model]\nkind = \"dram\"\nread_overhead_us = {overhead_us}\nwrite_overhead_us = {overhead_us}\nread_mb_per_s = {mb_per_s}\nwrite_mb_per_s = {mb_per_s}\n"
    );
    SimDevice::new(&DeviceSpec::from_toml(&toml, "test").unwrap()).unwrap()
}

/// Small thresholds and rounds for a 2 MiB SSD: large and sequential
/// writes bypass it, flush rounds are short, and with eight resident
/// tablets the maps are swapped out and read back.
pub fn small_options() -> Options {
    Options {
        size_threshold: 16 << 10,
        seq_threshold: 24 << 10,
        memory_limit: 8 * 4096,
        round_bytes: 32 << 10,
        max_flush_write: 8 << 10,
        promote_after: 1,
        idle_threshold_ns: 50_000,
        ..Options::default()
    }
}

/// A device the test keeps a handle on while the hybrid owns it.
pub type Dev = Shared<FaultDevice<SimDevice>>;

/// The SSD and the HDD under a hybrid, each behind a fault device.
pub struct Machine {
    pub ssd: Dev,
    pub hdd: Dev,
}

impl Machine {
    /// Wraps both devices, with a fault plan each.
    pub fn new(ssd: SimDevice, hdd: SimDevice, ssd_plan: FaultPlan, hdd_plan: FaultPlan) -> Self {
        Machine {
            ssd: Shared::new(FaultDevice::new(ssd, ssd_plan)),
            hdd: Shared::new(FaultDevice::new(hdd, hdd_plan)),
        }
    }

    /// Creates a hybrid on the machine.
    pub fn create(&self, opts: Options) -> Result<HybridDevice> {
        HybridDevice::create(Box::new(self.ssd.clone()), Box::new(self.hdd.clone()), opts)
    }

    /// Opens (recovers) the hybrid on the machine.
    pub fn open(&self, opts: Options) -> Result<HybridDevice> {
        HybridDevice::open(Box::new(self.ssd.clone()), Box::new(self.hdd.clone()), opts)
    }

    /// Both devices lose power at once (the hybrid on them must be gone),
    /// each keeping what its plan's seed decides of its unflushed writes,
    /// and power up again under new plans.
    pub fn power_cut(self, ssd_plan: FaultPlan, hdd_plan: FaultPlan) -> Self {
        Machine {
            ssd: Shared::new(self.ssd.take().restart(ssd_plan).unwrap()),
            hdd: Shared::new(self.hdd.take().restart(hdd_plan).unwrap()),
        }
    }

    /// New plans for both devices, from their next operation on.
    pub fn arm(&self, ssd_plan: FaultPlan, hdd_plan: FaultPlan) {
        self.ssd.with(|d| d.arm(ssd_plan));
        self.hdd.with(|d| d.arm(hdd_plan));
    }

    /// Both devices as they are, every write so far kept (as if flushed),
    /// under new plans: the hybrid on them must be gone.
    pub fn power_on(self, ssd_plan: FaultPlan, hdd_plan: FaultPlan) -> Self {
        Machine::new(
            self.ssd.take().into_inner(),
            self.hdd.take().into_inner(),
            ssd_plan,
            hdd_plan,
        )
    }
}
