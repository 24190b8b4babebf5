//! Issues 7, 13 and 24's OLTP must-hold, in the seed's configuration (the
//! log on a disk of its own, the engine's defaults but for LRU, the hybrid
//! with the crate's flush policy and without promotion, its write-back
//! charged), at a small scale over ten seeds.

use flashkv_lab::hybrid::{measure, measure_on, seed_policy, Config, Run, Setup, Size, Spread};
use flashkv_lab::oltp::Scale;

fn small() -> Size {
    Size {
        scale: Scale {
            warehouses: 1,
            customers: 1000,
            items: 30_000,
        },
        buffer_fraction: 0.05,
        warmup: 300,
        transactions: 600,
    }
}

/// The hybrid with read promotion (beyond the seed), otherwise as `measure`.
fn promoting(config: Config, seed: u64) -> Run {
    let ssd = flashkv_device::presets::get("ssd-lowend").unwrap();
    let policy = flashkv_hybrid::Options {
        promote: true,
        ..seed_policy()
    };
    let setup = Setup {
        ssd: &ssd,
        policy: &policy,
        log_disk: true,
        scratch: None,
        writer: true,
    };
    measure_on(config, small(), seed, setup).unwrap()
}

/// Seed 003's Table 1 ratios over ten seeds at this scale (deterministic,
/// virtual time; `--nocapture` prints them). What must hold holds for the
/// mean and for every seed: the hybrid within ±30 % of the seed's 3.0x the
/// HDD. The SSD's ratio to the HDD (seed 2.29x) and the hybrid's to the SSD
/// (1.31x) miss the band at this scale; they are printed, not asserted (the
/// lab's scorecard says by how much and why).
#[test]
fn the_seeds_configuration_over_ten_seeds() {
    let mut ratios = [vec![], vec![], vec![]];
    for seed in 1..=10 {
        let tps = |c| measure(c, small(), seed).unwrap().row.tps;
        let (hdd, ssd, hybrid) = (tps(Config::Hdd), tps(Config::Ssd), tps(Config::Hybrid));
        for (v, r) in ratios
            .iter_mut()
            .zip([hybrid / hdd, hybrid / ssd, ssd / hdd])
        {
            v.push(r);
        }
        eprintln!(
            "seed {seed}: hybrid {:.3}x the HDD, {:.3}x the SSD; SSD {:.3}x the HDD",
            hybrid / hdd,
            hybrid / ssd,
            ssd / hdd
        );
    }
    let [hybrid_hdd, hybrid_ssd, ssd_hdd] = ratios.map(|v| Spread::of(&v));
    eprintln!("hybrid/HDD {hybrid_hdd:?}\nhybrid/SSD {hybrid_ssd:?}\nSSD/HDD {ssd_hdd:?}");
    assert_eq!(hybrid_hdd.n, 10);
    assert!(
        hybrid_hdd.all_within(3.0, 0.3),
        "hybrid / HDD {hybrid_hdd:?}"
    );
}

/// Promotion (beyond the seed) adds to the hybrid's lead.
#[test]
fn promotion_adds_to_the_hybrids_lead() {
    let hybrid = measure(Config::Hybrid, small(), 7).unwrap().row.tps;
    let promoted = promoting(Config::Hybrid, 7).row.tps;
    assert!(
        promoted >= 1.4 * hybrid,
        "promoting {promoted:.2} vs hybrid {hybrid:.2} TPS"
    );
}

/// The hybrid's TPS counts the write-back owed at the end.
#[test]
fn the_write_back_is_charged() {
    let r = measure(Config::Hybrid, small(), 3).unwrap();
    let wb = r.write_back.unwrap();
    assert!(wb.bytes > 0 && wb.seconds > 0.0);
    let ios = r.devices.iter().flat_map(|(_, v)| v);
    let first = ios.map(|io| io.start).min().unwrap();
    let window = (r.end - first) as f64 / 1e9;
    assert!(
        r.seconds >= window + wb.seconds - 0.1,
        "{} s for a {window:.1} s run",
        r.seconds
    );
    assert!((r.row.tps - r.row.transactions as f64 / r.seconds).abs() < 1e-9);
}

#[test]
fn rows_count_what_the_devices_served() {
    let r = measure(Config::Hybrid, small(), 3).unwrap();
    assert_eq!(r.row.transactions, small().transactions);
    // The charged write-back's requests included.
    let served: usize = r.devices.iter().map(|(_, ios)| ios.len()).sum();
    assert_eq!(served as u64, r.row.reads + r.row.writes);
    assert!(r.row.ssd_read_hit_ratio > 0.0 && r.row.ssd_read_hit_ratio <= 1.0);
    // Whatever was dirty was written back to the HDD after the run.
    let wb = r.write_back.unwrap();
    let hdd = &r.devices.iter().find(|(n, _)| *n == "hdd").unwrap().1;
    assert!(wb.bytes == 0 || hdd.iter().any(|io| io.write && io.start >= r.end));
}

#[test]
fn json_rows_have_exactly_the_issues_fields() {
    let r = measure(Config::Hdd, small(), 1).unwrap();
    let v = serde_json::to_value(&r.row).unwrap();
    let mut keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "config",
            "idle_threshold_ns",
            "log_disk",
            "promote",
            "reads",
            "round_bytes",
            "seed",
            "ssd_read_hit_ratio",
            "tps",
            "transactions",
            "writer",
            "writes"
        ]
    );
    assert_eq!(v["config"], "hdd");
    // `measure` is the seed's set-up: the log on its own disk, no promotion,
    // the engine's writer on, the crate's default flush policy.
    assert_eq!(
        (&v["log_disk"], &v["promote"], &v["writer"]),
        (&true.into(), &false.into(), &true.into())
    );
    let d = flashkv_hybrid::Options::default();
    assert_eq!(v["idle_threshold_ns"], d.idle_threshold_ns);
    assert_eq!(v["round_bytes"], d.round_bytes);
    assert_eq!(v["seed"], 1);
}

/// The seed's set-up puts the database's log on a disk of its own: it
/// serves the commits, a log write for every read-write transaction (92 %
/// of the mix; order status and stock level only read).
#[test]
fn the_log_disk_serves_the_commits() {
    let r = measure(Config::Hdd, small(), 2).unwrap();
    let log = &r
        .devices
        .iter()
        .find(|(n, _)| *n == "log")
        .expect("log trace")
        .1;
    let log_writes = log.iter().filter(|io| io.write).count() as u64;
    assert!(
        log_writes * 10 >= r.row.transactions * 8,
        "{log_writes} log writes for {} transactions",
        r.row.transactions
    );
}
