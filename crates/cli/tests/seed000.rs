//! Seed 000 and seed 002 from the command line: `flashkv lab seed000
//! --json` prints the comparison with its count and nothing else on stdout;
//! `flashkv profile --cache cold,hot` on a simulated drive and on a real
//! file, and its one-line errors.

use std::process::{Command, Output};

fn flashkv(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("stdout is only JSON")
}

#[test]
fn lab_seed000_json_has_the_counted_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let o = flashkv(&[
        "lab",
        "seed000",
        "--quick",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    let v = json(&o);
    let s = &v["seed000"];
    let (agree, total) = (&s["agreement"]["agree"], &s["agreement"]["total"]);
    assert_eq!(total, 52);
    assert!(agree.as_u64().unwrap() <= 52);
    let tables: Vec<&str> = s["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(tables.contains(&"table_3_2") && tables.contains(&"table_3_3"));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains(&format!("{agree} of {total} cells agree")));
}

#[track_caller]
fn usage(args: &[&str], needle: &str) {
    let o = flashkv(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert_eq!(e.trim_end().lines().count(), 1, "{args:?}: {e}");
    assert!(
        e.starts_with("error: ") && e.contains(needle),
        "{args:?}: {e}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn cache_runs_refuse_what_they_cannot_do() {
    let d = ["profile", "--device", "hdd-7200"];
    let with = |extra: &[&'static str]| [&d[..], extra].concat();
    usage(
        &with(&["--cache", "lukewarm"]),
        "unknown cache state 'lukewarm'",
    );
    usage(
        &with(&["--cache", "cold", "--patterns", "sw"]),
        "--cache measures reads",
    );
    usage(
        &with(&["--cache", "hot", "--warmup", "1"]),
        "--warmup does not apply",
    );
    usage(&with(&["--file-sizes", "32m"]), "--cache");
    usage(
        &with(&[
            "--cache",
            "cold",
            "--file-sizes",
            "1m",
            "--block-sizes",
            "4m",
        ]),
        "larger than the file size",
    );
    usage(
        &with(&["--cache", "cold", "--file-sizes", "1000"]),
        "multiple of 4 KiB",
    );
    // The plot never replaces a file without --force.
    let dir = tempfile::tempdir().unwrap();
    let mine = dir.path().join("notes.svg");
    std::fs::write(&mine, "keep me").unwrap();
    // Nor a file beside it: the lab's plots get a PNG, --plot only its SVG.
    let beside = dir.path().join("notes.png");
    std::fs::write(&beside, "mine too").unwrap();
    let p = mine.to_str().unwrap();
    let args = [
        "--cache",
        "cold",
        "--file-sizes",
        "8m",
        "--patterns",
        "rr",
        "--block-sizes",
        "4k",
        "--ops",
        "10",
    ];
    usage(
        &[&with(&args)[..], &["--plot", p]].concat(),
        "pass --force to overwrite it",
    );
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "keep me");
    let o = flashkv(&[&with(&args)[..], &["--plot", p, "--force"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&mine).unwrap().starts_with("<svg"));
    assert_eq!(std::fs::read_to_string(&beside).unwrap(), "mine too");
}

#[test]
fn a_simulated_disk_serves_a_hot_file_from_its_segments() {
    let o = flashkv(&[
        "profile",
        "--device",
        "hdd-7200",
        "--cache",
        "cold,hot",
        "--file-sizes",
        "8m,64m",
        "--patterns",
        "rr",
        "--block-sizes",
        "4k",
        "--ops",
        "300",
        "--json",
    ]);
    let rows = json(&o);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    let mean = |cache: &str, size: u64| {
        rows.iter()
            .find(|r| r["cache"] == cache && r["file_size"] == size)
            .unwrap()["mean_latency_us"]
            .as_f64()
            .unwrap()
    };
    // 8 MiB fit the disk's 8 read segments of 1 MiB after the pass: every
    // read is a buffer hit (overhead and interface transfer); 64 MiB do
    // not, and the first misses recycle the segments.
    assert!(mean("hot", 8 << 20) * 10.0 < mean("cold", 8 << 20));
    assert!(mean("hot", 64 << 20) > 0.9 * mean("cold", 64 << 20));
}

#[test]
fn a_real_file_cold_and_hot_with_a_plot() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let f = dir.path().join("f");
    let svg = dir.path().join("cache.svg");
    let o = flashkv(&[
        "profile",
        "--path",
        f.to_str().unwrap(),
        "--cache",
        "cold,hot",
        "--file-sizes",
        "4m,8m",
        "--patterns",
        "rr",
        "--block-sizes",
        "4k",
        "--ops",
        "200",
        "--json",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let rows = json(&o);
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 4);
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let cold = rows.iter().find(|r| r["cache"] == "cold").unwrap();
    if cold["direct"] != true || cold["device_read_bytes"].is_null() {
        eprintln!("skipped the device check: no O_DIRECT or no /proc/self/io here: {cold}");
        return;
    }
    assert!(cold["device_read_bytes"].as_u64().unwrap() >= 200 * 4096);
    let hot = rows.iter().find(|r| r["cache"] == "hot").unwrap();
    assert!(hot["device_read_bytes"].as_u64().unwrap() < 200 * 4096 / 10);
}
