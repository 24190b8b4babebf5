//! Devices for the hybrid's tests.
#![allow(dead_code)] // each test binary uses its own part

pub mod crash;

use flashkv_device::{BlockDevice, DeviceSpec, SimDevice};

/// A DRAM-model device: fast, deterministic, real data.
pub fn dram(capacity: &str, mb_per_s: f64) -> Box<dyn BlockDevice> {
    let toml = format!(
        "capacity = \"{capacity}\"\n[model]\nkind = \"dram\"\nread_overhead_us = 20.0\nwrite_overhead_us = 20.0\nread_mb_per_s = {mb_per_s}\nwrite_mb_per_s = {mb_per_s}\n"
    );
    Box::new(SimDevice::new(&DeviceSpec::from_toml(&toml, "test").unwrap()).unwrap())
}
