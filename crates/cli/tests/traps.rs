//! Traps a new user fell into (issue 27): each must now be a one-line error
//! with exit code 2, or work, and never leave a file where none belongs.

use std::path::Path;
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
fn usage_error(args: &[&str], needle: &str) {
    let o = flashkv(args);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert_eq!(
        e.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {e}"
    );
    assert!(
        e.starts_with("error: ") && e.contains(needle),
        "{args:?}: {e}"
    );
}

#[test]
fn a_missing_device_under_dev_is_refused_not_created() {
    let path = format!("/dev/flashkv-test-no-such-disk-{}", std::process::id());
    usage_error(
        &[
            "profile",
            "--path",
            &path,
            "--patterns",
            "rr",
            "--ops",
            "10",
        ],
        "no such device",
    );
    assert!(!Path::new(&path).exists(), "a file was made in /dev");
    let p2 = format!("{path}-kv");
    usage_error(
        &["kv", "--db", &p2, "--create", "put", "k", "v"],
        "no such device",
    );
    assert!(!Path::new(&p2).exists(), "a store was made in /dev");
}

#[test]
fn kv_create_in_a_missing_directory_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("no/such/dir/x.db");
    let db = db.to_str().unwrap();
    usage_error(
        &["kv", "--db", db, "--create", "put", "k", "v"],
        "does not exist",
    );
    usage_error(
        &[
            "kv", "--db", db, "--create", "--device", "nvme", "put", "k", "v",
        ],
        "does not exist",
    );
}

#[test]
fn seconds_that_are_not_numbers_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let db = db.to_str().unwrap();
    for bad in ["NaN", "inf", "-1", "1e300"] {
        let wait = format!("--wait={bad}");
        usage_error(
            &["kv", "--db", db, "--create", &wait, "put", "k", "v"],
            "seconds",
        );
        assert!(!Path::new(db).exists(), "--wait {bad} made a store");
    }
    for flag in ["--duration", "--warmup"] {
        usage_error(&["profile", "--path", db, flag, "NaN"], "seconds");
    }
    usage_error(
        &["advise", "--device", "nvme", "--device-usd", "NaN"],
        "price",
    );
    usage_error(
        &["advise", "--device", "nvme", "--ram-usd-per-gb", "inf"],
        "price",
    );
}

#[test]
fn blkparse_without_queue_events_says_what_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("d-only.txt");
    std::fs::write(
        &t,
        "8,0 0 1 0.000000000 42 D W 2048 + 8 [pg]\n8,0 0 2 0.000100000 42 C W 2048 + 8 [pg]\n",
    )
    .unwrap();
    usage_error(
        &[
            "replay",
            "--trace",
            t.to_str().unwrap(),
            "--format",
            "blkparse",
            "--device",
            "nvme",
        ],
        "Q (queued)",
    );
}

/// The pair `hybrid create` makes on files is a drive `serve` and `replay` use.
#[test]
fn a_hybrid_pair_of_files_replays_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let (ssd, hdd) = (dir.path().join("ssd.img"), dir.path().join("hdd.img"));
    let (ssd, hdd) = (ssd.to_str().unwrap(), hdd.to_str().unwrap());
    let o = flashkv(&[
        "hybrid",
        "create",
        "--ssd",
        ssd,
        "--hdd",
        hdd,
        "--ssd-size",
        "64m",
        "--hdd-size",
        "256m",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = dir.path().join("t.csv");
    // Two 4 KiB writes (small: cached on the SSD) and a read back.
    std::fs::write(
        &trace,
        "128166372003061629,h,0,Write,8192,4096,0\n128166372003071629,h,0,Write,65536,4096,0\n\
         128166372003081629,h,0,Read,8192,4096,0\n",
    )
    .unwrap();
    let pair = format!("{ssd},{hdd}");
    let t = trace.to_str().unwrap();
    let args = [
        "replay", "--trace", t, "--format", "msr", "--hybrid", &pair, "--json",
    ];
    usage_error(&args, "--force");
    let mut forced = args.to_vec();
    forced.push("--force");
    usage_error(&forced, "--back-to-back");
    forced.push("--back-to-back");
    let o = flashkv(&forced);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["writes"], 2, "{v}");
    assert_eq!(v["reads"], 1, "{v}");
    assert_eq!(v["target"], format!("hybrid({pair})"));
    // The writes are in the pair: inspect's recovery finds them dirty.
    let o = flashkv(&["hybrid", "inspect", "--ssd", ssd, "--hdd", hdd, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["stats"]["dirty_bytes"], 8192, "{v}");
    // A preset and a file do not make a pair.
    let mixed = format!("ssd-lowend,{hdd}");
    usage_error(
        &[
            "replay", "--trace", t, "--format", "msr", "--hybrid", &mixed,
        ],
        "two presets or two files",
    );
    usage_error(
        &[
            "serve",
            "--hybrid",
            &pair,
            "--pace",
            "real",
            "--socket",
            "/tmp/x.sock",
        ],
        "hardware's speed",
    );
}
