//! Issue 28's lab claims, at `--quick` scale over several seeds
//! (deterministic: virtual time and simulated energy).

use flashkv_device::presets;
use flashkv_lab::placement::{break_even, measure, Config, Size, Timers, Workload, HDD, SSD};

const SEEDS: std::ops::Range<u64> = 1..4;

fn run(
    config: Config,
    workload: Workload,
    timers: Timers,
    seed: u64,
) -> flashkv_lab::placement::Measured {
    measure(config, workload, Size::of(true), None, timers, seed, None).unwrap()
}

fn both() -> Timers {
    Timers {
        hdd: break_even(&presets::get(HDD).unwrap()),
        ssd: break_even(&presets::get(SSD).unwrap()),
    }
}

/// Seed 002: "Clever data distribution needed (e.g. Index on SSD)": the
/// index on the SSD, leaves on the disk, beats the disk alone.
#[test]
fn index_on_fast_beats_the_hdd() {
    for seed in SEEDS {
        for w in Workload::ALL {
            let index = run(Config::IndexOnFast, w, both(), seed);
            let hdd = run(Config::Hdd, w, both(), seed);
            assert!(
                index.fast_read_share > 0.0,
                "{w:?} seed {seed}: the index is read"
            );
            assert!(
                index.tps > hdd.tps,
                "{w:?} seed {seed}: {} vs {} TPS",
                index.tps,
                hdd.tps
            );
        }
    }
}

/// Seed 002: SSDs spend less energy than disks, here per transaction at a
/// light load (the disk's idle power, between transactions, dominates).
#[test]
fn the_ssd_spends_less_energy() {
    for seed in SEEDS {
        for w in Workload::ALL {
            let ssd = run(Config::Ssd, w, both(), seed);
            let hdd = run(Config::Hdd, w, both(), seed);
            assert!(
                ssd.joules_per_txn * 10.0 < hdd.joules_per_txn,
                "{w:?} seed {seed}"
            );
        }
    }
}

/// Seed 002: "Exploit efficient Standby-Mode of SSDs": sleeping after its
/// break-even idle time saves the SSD energy, and a transaction waits at
/// most one wake-up for it.
#[test]
fn ssd_standby_saves_energy() {
    let wake_ms = presets::get(SSD).unwrap().power.wake_ms;
    for seed in SEEDS {
        let awake = run(Config::Ssd, Workload::ReadMostly, Timers::default(), seed);
        let asleep = Timers {
            hdd: None,
            ssd: break_even(&presets::get(SSD).unwrap()),
        };
        let sleeping = run(Config::Ssd, Workload::ReadMostly, asleep, seed);
        assert!(sleeping.ssd_wakeups > 0 && awake.ssd_wakeups == 0);
        assert!(
            sleeping.joules_per_txn < awake.joules_per_txn,
            "seed {seed}"
        );
        let added = sleeping.latency_mean_ms - awake.latency_mean_ms;
        assert!(
            added > 0.0 && added <= wake_ms * 1.000_001,
            "seed {seed}: {added} ms"
        );
    }
}

/// The hot/cold store keeps what the transactions touch on the SSD, so the
/// disk, untouched, sleeps through the arrival phase after its timeout and
/// costs standby power instead of idle power.
#[test]
fn hot_cold_lets_the_disk_sleep() {
    let size = Size::of(true);
    let span = size.arrivals as f64 / size.rate;
    for seed in SEEDS {
        let m = run(Config::HotCold, Workload::ReadMostly, both(), seed);
        let hdd = run(Config::Hdd, Workload::ReadMostly, both(), seed);
        assert!(
            m.fast_read_share > 0.99,
            "seed {seed}: {}",
            m.fast_read_share
        );
        assert!(
            m.hdd_standby_s > 0.5 * span,
            "seed {seed}: {} of {span} s",
            m.hdd_standby_s
        );
        assert!(m.joules_per_txn < 0.5 * hdd.joules_per_txn, "seed {seed}");
    }
}

/// The capacity sweep gives every design the same SSD: the designs that
/// place pages use no more of it than they are given.
#[test]
fn no_design_uses_more_ssd_than_it_is_given() {
    let size = Size::of(true);
    for config in [Config::Hybrid, Config::IndexOnFast, Config::HotCold] {
        let given = flashkv_lab::placement::OVERHEAD + (1 << 20);
        let m = measure(config, Workload::Oltp, size, Some(given), both(), 1, None).unwrap();
        assert!(
            m.ssd_bytes <= given,
            "{config:?}: {} of {given}",
            m.ssd_bytes
        );
        assert!(m.tps > 0.0);
    }
}
