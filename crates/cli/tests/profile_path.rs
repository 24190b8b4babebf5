//! `flashkv profile --path` as a user meets it: rows for a real file, the
//! marker that makes a file the profiler's own, refusals and their exit codes.

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

#[track_caller]
fn assert_refused(o: &Output, needle: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.trim_end().lines().count(), 1, "not one line: {e}");
    assert!(e.starts_with("error: ") && e.contains(needle), "{e}");
    assert!(o.stdout.is_empty());
}

#[test]
fn a_new_file_is_created_marked_and_profiled_into_json_rows() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = dir.path().join("prof.bin");
    let path = p.to_str().unwrap();
    let o = flashkv(&[
        "profile",
        "--path",
        path,
        "--span",
        "8m",
        "--patterns",
        "sr,rr,sw,rw,mix",
        "--block-sizes",
        "4k,64k",
        "--ops",
        "50",
        "--iodepth",
        "2",
        "--warmup",
        "0",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 10);
    for r in rows {
        assert_eq!(r["device"], path);
        assert_eq!(
            (r["ops"].as_u64(), r["iodepth"].as_u64()),
            (Some(50), Some(2))
        );
        assert!(r["iops"].as_f64().unwrap() > 0.0 && r["mb_per_s"].as_f64().unwrap() > 0.0);
    }
    let bytes = std::fs::read(&p).unwrap();
    assert_eq!(bytes.len(), 4096 + (8 << 20));
    assert!(bytes.starts_with(b"flashkv profile file v1\n"));

    // Its own file is written again without --force, with a time budget and a table.
    let o = flashkv(&[
        "profile",
        "--path",
        path,
        "--patterns",
        "rw",
        "--block-sizes",
        "4k",
        "--duration",
        "0.05",
        "--warmup",
        "0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("0.05 s per point") && out.contains("rw "),
        "{out}"
    );
}

#[test]
fn a_foreign_file_is_only_read_unless_forced() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = dir.path().join("precious.db");
    std::fs::write(&p, vec![0x5au8; 1 << 20]).unwrap();
    let path = p.to_str().unwrap();
    let args = |patterns: &'static str| {
        vec![
            "profile",
            "--path",
            path,
            "--patterns",
            patterns,
            "--block-sizes",
            "4k",
            "--ops",
            "20",
            "--warmup",
            "0",
        ]
    };
    assert_refused(&flashkv(&args("sr,sw")), "not created by flashkv profile");
    assert_eq!(std::fs::read(&p).unwrap(), vec![0x5au8; 1 << 20]);
    let o = flashkv(&args("sr,rr"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(&p).unwrap(), vec![0x5au8; 1 << 20]);
    let mut forced = args("rw");
    forced.push("--force");
    let o = flashkv(&forced);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(std::fs::read(&p).unwrap(), vec![0x5au8; 1 << 20]);
}

#[test]
fn bad_path_options_are_usage_errors() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("x.bin");
    let path = path.to_str().unwrap();
    let missing_dir = dir.path().join("no/such/dir.bin");
    assert_refused(
        &flashkv(&[
            "profile",
            "--path",
            missing_dir.to_str().unwrap(),
            "--ops",
            "5",
        ]),
        "no/such does not exist",
    );
    assert_refused(
        &flashkv(&["profile", "--path", path, "--span", "1000", "--ops", "5"]),
        "--span 1000B is not a positive multiple of 4 KiB",
    );
    assert!(
        !std::path::Path::new(path).exists(),
        "a refused span creates nothing"
    );
    assert_refused(
        &flashkv(&["profile", "--device", "nvme", "--duration", "1"]),
        "apply to --path only",
    );
    assert_refused(
        &flashkv(&["profile", "--path", path, "--ops", "5", "--duration", "1"]),
        "cannot be used with",
    );
    assert_refused(
        &flashkv(&["profile", "--path", path, "--duration=-1"]),
        "not a number of seconds",
    );
    assert_refused(
        &flashkv(&[
            "profile",
            "--path",
            dir.path().to_str().unwrap(),
            "--ops",
            "5",
        ]),
        "is a directory",
    );
    assert_refused(
        &flashkv(&[
            "profile",
            "--path",
            path,
            "--span",
            "1m",
            "--block-sizes",
            "2m",
            "--ops",
            "5",
            "--warmup",
            "0",
        ]),
        "--block-sizes 2M: larger than the span of 1M",
    );
}

#[test]
fn a_mounted_block_device_is_never_written() {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let Some(dev) = mounts
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .find(|s| s.starts_with("/dev/") && std::path::Path::new(s).exists())
    else {
        println!("skipped: no mounted block device visible");
        return;
    };
    let o = flashkv(&[
        "profile",
        "--path",
        dev,
        "--patterns",
        "sw",
        "--ops",
        "1",
        "--force",
    ]);
    assert_refused(&o, "is mounted");
}
