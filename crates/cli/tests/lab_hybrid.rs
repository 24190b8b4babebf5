//! `flashkv lab hybrid --quick --json`: the rows on stdout and the
//! files in the results folder.

use std::process::Command;

#[test]
fn lab_hybrid_writes_rows_files_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let o = Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(["lab", "hybrid", "--quick", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["hybrid"].as_array().unwrap();
    // The seed's configuration, then the what-ifs: promotion, the log on the device.
    let configs: Vec<_> = rows
        .iter()
        .map(|r| {
            let c = r["config"].as_str().unwrap();
            (
                c,
                r["promote"].as_bool().unwrap(),
                r["log_disk"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        configs,
        [
            ("hdd", false, true),
            ("ssd", false, true),
            ("hybrid", false, true),
            ("hybrid", true, true),
            ("hdd", false, false),
            ("ssd", false, false),
            ("hybrid", false, false),
        ]
    );
    for r in rows {
        assert!(r["tps"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r.as_object().unwrap().len(), 8, "{r}");
    }
    // The order the experiment shows at any size (seed 003): the low-end
    // SSD alone beats the HDD, and the hybrid of the two beats both.
    let tps: Vec<f64> = rows.iter().map(|r| r["tps"].as_f64().unwrap()).collect();
    assert!(
        tps[0] > 0.0 && tps[1] > tps[0] && tps[2] > tps[1],
        "hdd, ssd, hybrid TPS: {tps:?}"
    );
    for f in [
        "summary.md",
        "hybrid/rows.json",
        "hybrid/rows.csv",
        "hybrid/pattern_original.svg",
        "hybrid/pattern_hybrid_ssd.svg",
        "hybrid/pattern_hybrid_hdd.svg",
        "hybrid/pattern_original_log.svg",
        "hybrid/pattern_hybrid_log.svg",
    ] {
        assert!(out.join(f).is_file(), "{f} not written");
    }
    // Each device has its own plot: Fig. 4a is the HDD run's data disk,
    // not its log disk (they once shared a file name, the log's winning).
    let fig = |f: &str| std::fs::read_to_string(out.join("hybrid").join(f)).unwrap();
    assert!(fig("pattern_original.svg").contains("Fig. 4a"));
    assert!(fig("pattern_original_log.svg").contains("own HDD, original run"));
    assert!(!fig("pattern_hybrid_log.svg").contains("Fig. 4c"));
    assert_ne!(fig("pattern_original.svg"), fig("pattern_original_log.svg"));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("Hybrid / HDD"), "{summary}");
    documented_quick_figures_are_these(&tps);
}

/// docs/lab.md's `--quick` rows are this run's TPS (the run is
/// deterministic): when the model or the engine changes them, the page
/// must say what they are now.
fn documented_quick_figures_are_these(tps: &[f64]) {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/lab.md")).unwrap();
    let row = |label: &str| -> Vec<String> {
        let line = page
            .lines()
            .find(|l| l.starts_with(&format!("| {label} |")))
            .unwrap_or_else(|| panic!("docs/lab.md has no row {label}"));
        line.split('|')
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .skip(1)
            .collect()
    };
    let seed = row("seed's configuration, `--quick`");
    let want: Vec<String> = tps[..3].iter().map(|t| format!("{t:.2}")).collect();
    assert_eq!(
        seed[..3],
        want[..],
        "docs/lab.md's quick TPS (HDD, SSD, hybrid)"
    );
    let promoted = row("hybrid with promotion, `--quick`");
    assert_eq!(
        promoted[0],
        format!("{:.2}", tps[3]),
        "docs/lab.md's quick promotion TPS"
    );
}
