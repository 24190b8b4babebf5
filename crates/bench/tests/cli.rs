//! The benchmark binary end to end on a small store (flashkv only: the
//! peers are behind the `peers` feature).

use std::process::Command;

use serde_json::Value;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv-bench"))
        .args(args)
        .output()
        .expect("runs")
}

const PHASES: [&str; 8] = [
    "bulk-load",
    "put-durable",
    "batch-durable",
    "put-durable-4-threads",
    "read",
    "range",
    "delete-half",
    "read-2-threads",
];
const READS: [&str; 3] = ["read", "range", "read-2-threads"];

#[test]
fn json_rows_for_every_phase_and_the_size_and_nothing_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = bench(&[
        "--keys",
        "2000",
        "--engines",
        "flashkv-inplace",
        "--json",
        "--dir",
        d,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let rows: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect();
    assert_eq!(rows.len(), PHASES.len() + 1, "{rows:?}");
    for (row, phase) in rows.iter().zip(PHASES) {
        assert_eq!(row["engine"], "flashkv-inplace");
        assert_eq!(row["phase"], phase, "{row}");
        assert!(
            row.get("error").is_none() && row.get("skipped").is_none(),
            "{row}"
        );
        assert!(row["ops_per_s"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["seconds"].as_f64().unwrap() > 0.0, "{row}");
        match READS.contains(&phase) {
            true => assert!(row["wa"].is_null(), "{row}"),
            false => assert!(row["wa"].as_f64().unwrap() >= 0.0, "{row}"),
        }
    }
    let ops: Vec<u64> = rows[..PHASES.len()]
        .iter()
        .map(|r| r["ops"].as_u64().unwrap())
        .collect();
    assert_eq!(ops, [2000, 500, 50_000, 1000, 2000, 200, 1000, 2000]);
    let size = &rows[PHASES.len()];
    assert_eq!(size["phase"], "size");
    assert!(
        size["allocated_bytes"].as_u64().unwrap() > 2000 * 174,
        "{size}"
    );
    assert!(size["apparent_bytes"].as_u64().unwrap() > 0, "{size}");
    // Peers not asked for: no row about them. The work directory is gone.
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn bad_arguments_are_one_line_and_exit_2() {
    for args in [
        &["--keys", "ten"][..],
        &["--engines", "flashkv-inplace,rocksdb"],
        &["--engines", "redb,redb"],
        &["--repeat", "0"],
        &["--dir", "/nonexistent/flashkv-bench"],
        &["--frobnicate"],
    ] {
        let out = bench(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn help_names_the_options() {
    let out = bench(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for opt in [
        "--keys",
        "--engines",
        "--repeat",
        "--dir",
        "--seed",
        "--json",
    ] {
        assert!(help.contains(opt), "{opt} missing from help");
    }
}
