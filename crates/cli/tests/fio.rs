//! `flashkv profile --path` against fio on the same file, pattern, block size
//! and queue depth: IOPS must agree within 15 %. Skipped (with a message)
//! where fio is not installed or the file system refuses O_DIRECT.
//!
//! Other work on the machine moves both tools' figures, so the two are run
//! in alternation, several short rounds, and the median of the per-round
//! ratios is compared: a burst of load spoils one round, not the verdict.
//! A case outside the tolerance after [`ROUNDS`] gets [`MORE_ROUNDS`] more and
//! is judged on all of them (on this shared VM single rounds swing by ±25 %).

use std::path::Path;
use std::process::Command;

const ROUNDS: usize = 3;
const MORE_ROUNDS: usize = 4;
/// Measured and warm-up time of each run, in milliseconds.
const RUN_MS: u64 = 400;
const WARMUP_MS: u64 = 100;
const TOLERANCE: f64 = 0.15;

/// (fio rw, flashkv pattern, block size, queue depth)
const CASES: [(&str, &str, &str, usize); 5] = [
    ("randread", "rr", "4k", 1),
    ("randread", "rr", "1m", 1),
    ("write", "sw", "4k", 1),
    ("write", "sw", "1m", 1),
    ("randread", "rr", "4k", 4),
];

fn flashkv(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(args)
        .output()
        .unwrap()
}

fn flashkv_iops(file: &Path, pattern: &str, bs: &str, qd: usize) -> f64 {
    let qd = qd.to_string();
    let secs = |ms: u64| format!("{}", ms as f64 / 1000.0);
    let o = flashkv(&[
        "profile",
        "--path",
        file.to_str().unwrap(),
        "--patterns",
        pattern,
        "--block-sizes",
        bs,
        "--iodepth",
        &qd,
        "--duration",
        &secs(RUN_MS),
        "--warmup",
        &secs(WARMUP_MS),
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    rows[0]["iops"].as_f64().unwrap()
}

/// fio with one synchronous job per queue slot, as flashkv runs one thread
/// per slot; `--offset` skips the header flashkv keeps at the file's start.
fn fio_iops(file: &Path, rw: &str, bs: &str, qd: usize) -> f64 {
    let o = Command::new("fio")
        .args([
            "--name=cmp",
            &format!("--filename={}", file.display()),
            "--offset=4096",
            "--size=256M",
            &format!("--rw={rw}"),
            &format!("--bs={bs}"),
            "--ioengine=psync",
            "--iodepth=1",
            &format!("--numjobs={qd}"),
            "--group_reporting",
            "--direct=1",
            "--time_based",
            // fio reads a bare "0.5" as 0 (no limit): give it milliseconds.
            &format!("--runtime={RUN_MS}ms"),
            &format!("--ramp_time={WARMUP_MS}ms"),
            "--output-format=json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let job = &j["jobs"][0];
    job["read"]["iops"].as_f64().unwrap() + job["write"]["iops"].as_f64().unwrap()
}

// A wall-clock comparison: it measures this machine's storage, so it is not
// part of the default suite (timing claims are not asserted in tests that
// must pass on a loaded CI machine). Run it with --ignored; see README.
#[test]
#[ignore = "wall-clock comparison with fio: cargo test --release -p flashkv --test fio -- --ignored --nocapture"]
fn iops_agree_with_fio_within_15_percent() {
    if Command::new("fio").arg("--version").output().is_err() {
        println!("skipped: fio is not installed (apt-get install fio)");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("fio-compare.bin");
    let o = flashkv(&[
        "profile",
        "--path",
        file.to_str().unwrap(),
        "--span",
        "256m",
        "--patterns",
        "sr",
        "--block-sizes",
        "1m",
        "--ops",
        "1",
        "--warmup",
        "0",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    if String::from_utf8_lossy(&o.stderr).contains("O_DIRECT is not supported") {
        println!(
            "skipped: {} does not support O_DIRECT",
            dir.path().display()
        );
        return;
    }

    let mut report = String::new();
    let mut failed = false;
    for (rw, pattern, bs, qd) in CASES {
        let mut rounds: Vec<(f64, f64)> = Vec::new();
        let mut err = 0.0;
        for n in [ROUNDS, MORE_ROUNDS] {
            for _ in 0..n {
                let f = fio_iops(&file, rw, bs, qd);
                rounds.push((f, flashkv_iops(&file, pattern, bs, qd)));
            }
            let mut ratios: Vec<f64> = rounds.iter().map(|(f, k)| k / f).collect();
            ratios.sort_by(f64::total_cmp);
            err = ratios[ratios.len() / 2] - 1.0;
            if err.abs() <= TOLERANCE {
                break;
            }
        }
        failed |= err.abs() > TOLERANCE;
        let n = rounds.len() as f64;
        let fio = rounds.iter().map(|r| r.0).sum::<f64>() / n;
        let ours = rounds.iter().map(|r| r.1).sum::<f64>() / n;
        report += &format!(
            "{pattern} {bs} qd{qd}: fio {fio:.0} IOPS, flashkv {ours:.0} IOPS (means of {n} rounds); median ratio {:+.1} %\n",
            err * 100.0
        );
    }
    println!("{report}");
    assert!(!failed, "IOPS differ by more than 15 %:\n{report}");
}
