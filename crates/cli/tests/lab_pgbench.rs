//! `flashkv lab pgbench`: run only when named, one point per drive, and
//! skipped (not failed) with what is missing. The real run (root,
//! PostgreSQL, FUSE, libnbd) is `.ci/run`'s `lab pgbench --quick`, not a
//! test: its figures are wall-clock.

use std::path::Path;
use std::process::{Command, Output};

fn flashkv(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_flashkv"));
    c.args(args).current_dir(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn pgbench_is_not_in_the_default_run_and_has_a_point_per_drive() {
    let dir = tempfile::tempdir().unwrap();
    let all = flashkv(&["lab", "--points", "--quick"], dir.path(), &[]);
    assert!(all.status.success());
    let all = String::from_utf8(all.stdout).unwrap();
    assert!(
        all.contains("sim-scale\t") && !all.contains("pgbench"),
        "{all}"
    );
    let o = flashkv(&["lab", "pgbench", "--points"], dir.path(), &[]);
    let text = String::from_utf8(o.stdout).unwrap();
    let ids: Vec<&str> = text
        .lines()
        .map(|l| l.split('\t').nth(2).unwrap())
        .collect();
    assert_eq!(ids, ["hdd-7200", "ssd-lowend", "hybrid", "nvme"]);
    let help = flashkv(&["lab", "--help"], dir.path(), &[]);
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(help.contains("runs only when named"), "{help}");
}

#[test]
fn missing_postgresql_skips_with_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let o = flashkv(
        &[
            "lab",
            "pgbench",
            "--quick",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
        &[("FLASHKV_PG_BIN", "/no/such/postgresql/bin")],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "a skip is not a failure: {err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let why = v["pgbench"]["skipped"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"));
    assert!(why.contains("PostgreSQL's server programs"), "{why}");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("Skipped: missing"), "{md}");
    // The scorecard keeps seed 003's two ratios, neither checked.
    assert!(
        md.contains("0 of 2 claims of the source documents reproduced in this run (2 not checked"),
        "{md}"
    );
    assert_eq!(
        md.matches("| **not checked**: not run here: missing")
            .count(),
        2,
        "{md}"
    );
    // No rows: nothing ran.
    assert!(out.join("pgbench").join("section.md").exists());
    assert!(!out.join("pgbench").join("rows.json").exists());
}
