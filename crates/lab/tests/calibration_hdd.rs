//! `hdd-15k` against seed 004's Seagate 15K random read / write tables, and
//! `hdd-7200` against seed 001's Table 3.1.
//!
//! Seed 004's IOPS × average service time is about 2 for this disk, so its
//! benchmark kept two requests outstanding: the rows are profiled at
//! iodepth 2 over the whole disk.

use flashkv_device::{presets, BlockDevice};
use flashkv_lab::profile::{run, Pattern, ProfileRow, ProfileSpec};

/// (block bytes, IOPS) from `seed-figures.toml` [seed004.hdd_15k].
const SEED_READ: [(u64, f64); 3] = [(4096, 175.0), (8192, 176.0), (131072, 132.0)];
const SEED_WRITE: [(u64, f64); 3] = [(4096, 280.0), (8192, 284.0), (131072, 183.0)];

fn profile(
    preset: &str,
    pattern: Pattern,
    block_size: u64,
    iodepth: usize,
    ops: u64,
) -> ProfileRow {
    let mut dev = presets::open(preset).unwrap();
    let span = dev.geometry().capacity / block_size * block_size;
    let spec = ProfileSpec {
        pattern,
        block_size,
        ops,
        span,
        iodepth,
        seed: 42,
    };
    run(&mut dev, preset, &spec).unwrap()
}

#[test]
fn hdd_15k_reproduces_seed_004_within_15_percent_at_iodepth_2() {
    let mut worst: f64 = 0.0;
    for (pattern, rows) in [
        (Pattern::RandRead, SEED_READ),
        (Pattern::RandWrite, SEED_WRITE),
    ] {
        for (bs, seed_iops) in rows {
            let row = profile("hdd-15k", pattern, bs, 2, 4000);
            let err = row.iops / seed_iops - 1.0;
            println!(
                "hdd-15k {pattern} {:>6} B qd2: model {:7.1} IOPS, seed {seed_iops:5.0}, error {:+5.1} %, mean latency {:.2} ms",
                bs,
                row.iops,
                err * 100.0,
                row.mean_latency_us / 1e3
            );
            worst = worst.max(err.abs());
        }
    }
    assert!(worst <= 0.15, "worst error {:.1} %", worst * 100.0);
}
