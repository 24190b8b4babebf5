//! The benchmark binary end to end on small stores (flashkv only: the
//! peers are behind their features).

use std::process::Command;

use serde_json::Value;

fn bench(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv-bench"))
        .args(args)
        .output()
        .expect("runs")
}

fn json_rows(out: &std::process::Output) -> Vec<Value> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect()
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

fn ok(row: &Value) -> bool {
    row.get("error").is_none() && row.get("skipped").is_none()
}

#[test]
fn phases_give_a_row_each_with_latency_wa_through_close_size_and_rss() {
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
    let rows = json_rows(&out);
    assert_eq!(rows.len(), PHASES.len() + 2, "{rows:?}");
    for (row, phase) in rows.iter().zip(PHASES) {
        assert_eq!(row["engine"], "flashkv-inplace");
        assert_eq!(
            (row["suite"].as_str(), row["op"].as_str()),
            (Some("phases"), Some("all"))
        );
        assert_eq!(row["phase"], phase, "{row}");
        assert!(ok(row), "{row}");
        assert!(row["ops_per_s"].as_f64().unwrap() > 0.0, "{row}");
        let (p50, p99, p999, max) = (
            row["p50_us"].as_f64().unwrap(),
            row["p99_us"].as_f64().unwrap(),
            row["p999_us"].as_f64().unwrap(),
            row["max_us"].as_f64().unwrap(),
        );
        assert!(
            0.0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max * 1.001,
            "{row}"
        );
        if READS.contains(&phase) {
            assert!(
                row["wa"].is_null() && row.get("wa_close").is_none(),
                "{row}"
            );
        } else {
            let (wa, through) = (
                row["wa"].as_f64().unwrap(),
                row["wa_close"].as_f64().unwrap(),
            );
            assert!(wa >= 0.0 && through >= wa, "{row}");
            assert!(row["close_seconds"].as_f64().unwrap() > 0.0, "{row}");
        }
    }
    let ops: Vec<u64> = rows[..PHASES.len()]
        .iter()
        .map(|r| r["ops"].as_u64().unwrap())
        .collect();
    assert_eq!(ops, [2000, 500, 50_000, 1000, 2000, 200, 1000, 2000]);
    let threads: Vec<u64> = rows[..PHASES.len()]
        .iter()
        .map(|r| r["threads"].as_u64().unwrap())
        .collect();
    assert_eq!(threads, [1, 1, 1, 4, 1, 1, 1, 2]);
    let size = &rows[PHASES.len()];
    assert_eq!(size["phase"], "size");
    assert!(
        size["allocated_bytes"].as_u64().unwrap() > 2000 * 174,
        "{size}"
    );
    let process = &rows[PHASES.len() + 1];
    assert_eq!(process["phase"], "process");
    let (peak, harness) = (
        process["peak_rss_bytes"].as_u64().unwrap(),
        process["harness_rss_bytes"].as_u64().unwrap(),
    );
    assert!(peak > harness && harness > 0, "{process}");
    // Peers not asked for: no row about them. The work directory is gone.
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn ycsb_runs_every_workload_with_each_op_type_and_writes_its_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let d = dir.path().to_str().unwrap();
    let args = [
        "--ycsb",
        "--engines",
        "flashkv-inplace",
        "--records",
        "300",
        "--ops",
        "200",
        "--large-records",
        "600",
        "--cache-mib",
        "1",
        "--threads",
        "1,2",
        "--json",
        "--dir",
        d,
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let rows = json_rows(&bench(&args));
    let find = |scale: &str, phase: &str, threads: u64, op: &str| {
        rows.iter()
            .find(|r| {
                r["scale"] == scale
                    && r["phase"] == phase
                    && r["threads"] == threads
                    && r["op"] == op
            })
            .unwrap_or_else(|| panic!("no row {scale} {phase} {threads} {op}: {rows:?}"))
    };
    let mixes: [(&str, &[&str]); 6] = [
        ("A", &["read", "update"]),
        ("B", &["read", "update"]),
        ("C", &[]),
        ("D", &["read", "insert"]),
        ("E", &["insert", "scan"]),
        ("F", &["read", "rmw"]),
    ];
    for scale in ["memory", "larger"] {
        let load = find(scale, "load", 1, "all");
        assert_eq!(load["ops"], 600 / if scale == "memory" { 2 } else { 1 });
        assert!(load["wa_close"].as_f64().unwrap() >= load["wa"].as_f64().unwrap());
        for threads in [1, 2] {
            for (w, ops) in mixes {
                let all = find(scale, w, threads, "all");
                assert!(ok(all), "{all}");
                assert_eq!(all["ops"], 200, "{all}");
                assert!(all["p99_us"].as_f64().unwrap() > 0.0, "{all}");
                assert_eq!(all["wa"].is_null(), w == "C", "{all}");
                let mut sum = 0;
                for op in ops {
                    let r = find(scale, w, threads, op);
                    assert!(r["p50_us"].as_f64().unwrap() > 0.0, "{r}");
                    sum += r["ops"].as_u64().unwrap();
                }
                assert_eq!(sum, if ops.is_empty() { 0 } else { 200 }, "{w}");
            }
        }
    }
    let process: Vec<&Value> = rows.iter().filter(|r| r["phase"] == "process").collect();
    assert_eq!(process.len(), 2);
    assert!(process
        .iter()
        .all(|p| p["peak_rss_bytes"].as_u64().unwrap() > 0));
    for stem in [
        "ycsb-memory-1t",
        "ycsb-memory-2t",
        "ycsb-larger-1t",
        "ycsb-larger-2t",
    ] {
        for what in ["throughput", "p99"] {
            let svg = std::fs::read_to_string(out_dir.join(format!("{stem}-{what}.svg"))).unwrap();
            assert!(
                svg.contains("<svg") && svg.contains("flashkv-inplace"),
                "{stem}-{what}"
            );
        }
    }
    let md = std::fs::read_to_string(out_dir.join("bench.md")).unwrap();
    assert!(
        md.contains("| A: 50/50 read/update, zipfian · 2 threads |"),
        "{md}"
    );
    let jsonl = std::fs::read_to_string(out_dir.join("bench.jsonl")).unwrap();
    assert_eq!(jsonl.lines().count(), rows.len());
}

#[test]
fn the_same_seed_gives_every_engine_the_same_operations() {
    // Two runs of the same seed write the same bytes and read the same
    // records: the load's and the 1-thread workloads' user bytes, op
    // counts and op-type counts agree exactly.
    let run = || {
        let dir = tempfile::tempdir().unwrap();
        let args = [
            "--ycsb",
            "--engines",
            "flashkv-inplace",
            "--records",
            "200",
            "--ops",
            "300",
            "--large-records",
            "0",
            "--threads",
            "1",
            "--json",
            "--dir",
            dir.path().to_str().unwrap(),
        ];
        json_rows(&bench(&args))
            .into_iter()
            .filter(|r| r["op"] != "all" || r["phase"] == "load")
            .map(|r| (r["phase"].clone(), r["op"].clone(), r["ops"].clone()))
            .collect::<Vec<_>>()
    };
    let (a, b) = (run(), run());
    assert!(a.len() > 8, "{a:?}");
    assert_eq!(a, b);
}

#[test]
fn bad_arguments_are_one_line_and_exit_2() {
    for args in [
        &["--keys", "ten"][..],
        &["--engines", "flashkv-inplace,mongodb"],
        &["--engines", "redb,redb"],
        &["--repeat", "0"],
        &["--dir", "/nonexistent/flashkv-bench"],
        &["--ycsb", "--workloads", "a,g"],
        &["--ycsb", "--threads", "0"],
        &["--ycsb", "--value-size", "0"],
        &["--out", "/nonexistent/dir/out"],
        &["--child", "{not json"],
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
        "--ycsb",
        "--quick",
        "--records",
        "--large-records",
        "--ops",
        "--value-size",
        "--cache-mib",
        "--memory-limit-mib",
        "--threads",
        "--workloads",
        "--out",
    ] {
        assert!(help.contains(opt), "{opt} missing from help");
    }
    assert!(!help.contains("--child"), "the internal argument is hidden");
}
