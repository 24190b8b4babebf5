//! `flashkv lab seed000`: the comparison with seed 000's Tables 3.2 and 3.3
//! and its stated best block sizes is counted cell by cell, consistently,
//! with a reason beside every disagreement; the cells a parameter was
//! fitted to are marked and hold; and the advisor's Algorithm 1 with the
//! file size is exactly what Experiment 2 finds on the seed's drives.

use flashkv_lab::advisor::{DeviceClass, FILE_SIZE_RULES, PATTERNS};
use flashkv_lab::lab::{Experiment, LabOptions};
use flashkv_lab::seed000::{exp2, Comparison, Row, DRIVES, WHOLE_DISK};

fn opts(quick: bool, out: &std::path::Path) -> LabOptions {
    LabOptions {
        quick,
        out: out.to_path_buf(),
        seed: 1,
        on_progress: Box::new(|_| {}),
    }
}

#[test]
fn the_comparison_is_counted_cell_by_cell_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let s = Experiment::Seed000.run(&opts(true, dir.path())).unwrap();
    let comparisons: Vec<Comparison> =
        serde_json::from_value(s.json["comparisons"].clone()).unwrap();
    let names: Vec<&str> = comparisons.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["table_3_2", "table_3_3", "best_block", "best_block_top"]
    );
    let (mut agree, mut total) = (0, 0);
    for c in &comparisons {
        // 5 block sizes x 4 patterns; 12 stated best blocks.
        let cells = if c.name.starts_with("table") { 20 } else { 12 };
        assert_eq!(c.total, cells, "{}", c.name);
        assert_eq!(c.cells.len(), cells, "{}", c.name);
        assert_eq!(c.agree, c.cells.iter().filter(|x| x.agrees).count());
        for x in &c.cells {
            assert_eq!(x.agrees, x.seed == x.model, "{} {:?}", c.name, x);
            assert_eq!(x.reason.is_some(), !x.agrees, "{} {:?}", c.name, x);
        }
        if c.name != "best_block_top" {
            agree += c.agree;
            total += c.total;
        }
    }
    let a = &s.json["agreement"];
    assert_eq!(a["agree"], agree);
    assert_eq!(a["total"], total);
    assert_eq!(total, 52);
    // The disk's media rate was fitted to Table 3.2's 16 KB and 64 KB
    // sequential reads: those cells are marked, and the fit holds.
    let t32 = &comparisons[0];
    let fitted: Vec<_> = t32.cells.iter().filter(|x| x.fitted).collect();
    assert_eq!(fitted.len(), 2);
    assert!(fitted.iter().all(|x| x.agrees && x.pattern == "sr"));
    // The summary carries the count.
    let line = format!("{agree} of {total} cells agree");
    assert!(s.markdown.contains(&line), "{line} not in the summary");
    for f in [
        "seed000.json",
        "exp1.csv",
        "exp2.csv",
        "cache.csv",
        "cache.svg",
        "exp2-reads.svg",
    ] {
        assert!(dir.path().join("seed000").join(f).is_file(), "{f}");
    }
}

/// Every Experiment 2 row of `devices` at the full set of file sizes.
fn exp2_best(devices: &[&str]) -> Vec<exp2::FileSizeBest> {
    let dir = tempfile::tempdir().unwrap();
    let o = opts(false, dir.path());
    let mut rows = Vec::new();
    for p in Experiment::Seed000.points(false) {
        let device = p.params["device"].as_str().unwrap();
        if p.params["part"] != "exp2" || !devices.contains(&device) {
            continue;
        }
        let out = Experiment::Seed000.run_point(&p.params, &o).unwrap();
        for v in out.values().unwrap() {
            if let Row::Exp2(r) = serde_json::from_value(v).unwrap() {
                rows.push(r);
            }
        }
    }
    exp2::best(&rows)
}

#[test]
fn algorithm_1_with_the_file_size_is_what_experiment_2_finds() {
    let flash = DRIVES[1].preset;
    let best = exp2_best(&[WHOLE_DISK, flash]);
    for (class, device) in [
        (DeviceClass::Hdd, WHOLE_DISK),
        (DeviceClass::FlashDrive, flash),
    ] {
        for p in PATTERNS {
            let found: Vec<(u64, u64)> = best
                .iter()
                .filter(|b| b.device == device && b.pattern == p.code())
                .map(|b| (b.file_size, b.best_block))
                .collect();
            assert_eq!(found.len(), exp2::FILE_SIZES.len(), "{device} {p}");
            let varies = exp2::distinct(&best, device, p.code()).len() > 1;
            let rule = FILE_SIZE_RULES.iter().any(|r| r.0 == class && r.1 == p);
            assert_eq!(
                varies,
                rule,
                "{device} {p}: Experiment 2 gives {found:?}; FILE_SIZE_RULES has {}a rule",
                if rule { "" } else { "no " }
            );
            for (size, block) in found {
                let (a, why) = class.algorithm1_for_file(p, size);
                if rule {
                    assert_eq!(a, block, "{device} {p} at {size}: {why}");
                } else {
                    assert_eq!(a, class.algorithm1(p), "{why}");
                }
            }
        }
    }
}
