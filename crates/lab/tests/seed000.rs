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
        on_point: Box::new(|| {}),
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

/// The scorecard's rows: one per counted comparison, its count the
/// comparison's, reproduced only when every cell agrees, every differing
/// cell named with its reason; Table 3.2 (two cells fitted, eighteen not)
/// reproduces.
#[test]
fn the_scorecard_gives_each_table_its_count_and_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let s = Experiment::Seed000.run(&opts(true, dir.path())).unwrap();
    let comparisons: Vec<Comparison> =
        serde_json::from_value(s.json["comparisons"].clone()).unwrap();
    let sources: Vec<&str> = s.claims.iter().map(|c| c.source.as_str()).collect();
    assert_eq!(
        sources,
        [
            "seed 000, Table 3.2",
            "seed 000, Table 3.3",
            "seed 000, section 3.4.1"
        ]
    );
    for (c, cmp) in s.claims.iter().zip(&comparisons) {
        assert!(
            c.ours
                .starts_with(&format!("{} of {} agree", cmp.agree, cmp.total)),
            "{c:?}"
        );
        assert_eq!(
            c.published.split(' ').next(),
            Some(cmp.total.to_string().as_str())
        );
        assert_eq!(c.reproduced, cmp.agree == cmp.total, "{c:?}");
        assert!(c.checked);
        let differ: Vec<_> = cmp.cells.iter().filter(|x| !x.agrees).collect();
        if !differ.is_empty() {
            assert!(
                c.why.starts_with(&format!("{} differ", differ.len())),
                "{c:?}"
            );
        }
        for x in differ {
            // A table's cell by block size, a stated best block by the seed's size.
            let named = format!("{} {}", x.row, x.pattern);
            let stated = format!("{} (seed {}, model {})", x.pattern, x.seed, x.model);
            assert!(
                c.why.contains(&named) || c.why.contains(&stated),
                "{x:?} not in {c:?}"
            );
        }
    }
    let t32 = &s.claims[0];
    assert!(t32.reproduced, "{t32:?}");
    assert!(
        t32.ours.ends_with("(2 fitted)") && t32.why.contains("fitted to 2"),
        "{t32:?}"
    );
    // Written beside the section for the summary's scorecard.
    flashkv_lab::summary::write_section(
        dir.path(),
        &s,
        &flashkv_lab::summary::RunInfo::now(true, 1),
    )
    .unwrap();
    assert_eq!(
        flashkv_lab::scorecard::read(&dir.path().join("seed000")),
        s.claims
    );
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
