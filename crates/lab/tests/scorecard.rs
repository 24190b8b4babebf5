//! The scorecard's rows come from the experiments' own figures: seed 004's
//! tables here, every experiment's in `reports.rs`.

use flashkv_lab::lab::{Experiment, LabOptions};
use flashkv_lab::scorecard;

/// The DRAM SSD's random read and write tables (seed 004) reproduce within
/// 15 % at 4 KB, 8 KB and 128 KB; the scorecard says so, from the rows.
#[test]
fn seed_004s_dram_ssd_tables_reproduce() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LabOptions {
        quick: true,
        out: dir.path().to_path_buf(),
        seed: 1,
        on_progress: Box::new(|_| {}),
        on_point: Box::new(|| {}),
    };
    let s = Experiment::Seed004.run(&opts).unwrap();
    let dram: Vec<_> = s
        .claims
        .iter()
        .filter(|c| c.claim.contains("`dram-ssd`"))
        .collect();
    assert_eq!(dram.len(), 2, "{:?}", s.claims);
    for c in &dram {
        assert!(c.reproduced, "{c:?}");
        assert_eq!(c.published.split(" / ").count(), 3, "{c:?}");
    }
    // One claim per published table, each verdict the rows' own.
    let rows: Vec<serde_json::Value> = serde_json::from_value(s.json.clone()).unwrap();
    assert_eq!(s.claims.len(), 7);
    for c in &s.claims {
        let preset = c.claim.split('`').nth(1).unwrap();
        let gated_ok = rows
            .iter()
            .filter(|r| r["device"] == preset && r["gated"] == true)
            .filter(|r| {
                c.source.ends_with(&format!(
                    "{} table",
                    r["table"].as_str().unwrap().replace('_', " ")
                ))
            })
            .all(|r| r["within_tolerance"] == true);
        assert_eq!(c.reproduced, gated_ok, "{c:?}");
    }
    // Written beside the section, for the summary to gather.
    flashkv_lab::summary::write_section(
        dir.path(),
        &s,
        &flashkv_lab::summary::RunInfo::now(true, 1),
    )
    .unwrap();
    assert_eq!(scorecard::read(&dir.path().join("seed004")), s.claims);
}
