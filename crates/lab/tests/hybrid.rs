//! Issue 7's OLTP must-hold: on the TPC-C-like workload the hybrid runs at
//! least 3.0x the HDD's transactions per second and 1.3x the SSD's (the
//! seed's ratios), at a small scale.

use flashkv_lab::hybrid::{measure, Config, Size};
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

#[test]
fn hybrid_beats_the_seeds_ratios() {
    let tps = |c| measure(c, small(), 7).unwrap().row.tps;
    let (hdd, ssd, hybrid) = (tps(Config::Hdd), tps(Config::Ssd), tps(Config::Hybrid));
    assert!(
        hybrid >= 3.0 * hdd,
        "hybrid {hybrid:.2} vs hdd {hdd:.2} TPS"
    );
    assert!(
        hybrid >= 1.3 * ssd,
        "hybrid {hybrid:.2} vs ssd {ssd:.2} TPS"
    );
}

#[test]
fn rows_count_what_the_devices_served() {
    let r = measure(Config::Hybrid, small(), 3).unwrap();
    assert_eq!(r.row.transactions, small().transactions);
    let served: usize = r
        .devices
        .iter()
        .map(|(_, ios)| ios.iter().filter(|io| io.start < r.end).count())
        .sum();
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
            "reads",
            "ssd_read_hit_ratio",
            "tps",
            "transactions",
            "writes"
        ]
    );
    assert_eq!(v["config"], "hdd");
}
