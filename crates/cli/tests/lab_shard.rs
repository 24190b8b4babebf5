//! `flashkv lab buffer --quick --shard I/3` three times, then `lab merge`:
//! the same results/ as one run, byte for byte (the summary dated by
//! SOURCE_DATE_EPOCH); shards that do not make one run are refused.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const EPOCH: &str = "1800000000";

fn flashkv(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(args)
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .output()
        .unwrap()
}

fn ok(args: &[&str], dir: &Path) -> Vec<u8> {
    let o = flashkv(args, dir);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o.stdout
}

/// Exit 2 with one line on stderr containing `want`.
fn refused(args: &[&str], dir: &Path, want: &str) {
    let o = flashkv(args, dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
}

/// Every file under `a` and `b`, compared byte for byte.
fn same_tree(a: &Path, b: &Path) {
    let mut names: Vec<_> = fs::read_dir(a)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    let mut other: Vec<_> = fs::read_dir(b)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    other.sort();
    assert_eq!(names, other, "{} vs {}", a.display(), b.display());
    for n in names {
        let (x, y) = (a.join(&n), b.join(&n));
        if x.is_dir() {
            same_tree(&x, &y);
        } else {
            assert!(
                fs::read(&x).unwrap() == fs::read(&y).unwrap(),
                "{} differs",
                x.display()
            );
        }
    }
}

#[test]
fn three_shards_merged_are_the_single_run_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let single = ok(
        &["lab", "buffer", "--quick", "--json", "--out", "single"],
        d,
    );
    for i in 1..=3 {
        let s = format!("{i}/3");
        let out = ok(
            &["lab", "buffer", "--quick", "--shard", &s, "--out", "shards"],
            d,
        );
        let line = String::from_utf8(out).unwrap();
        assert!(line.starts_with(&format!("shard {i}/3: ")), "{line}");
    }
    let merged = ok(&["lab", "merge", "shards", "--out", "merged", "--json"], d);
    assert!(single == merged, "--json output differs");
    let rows: serde_json::Value = serde_json::from_slice(&single).unwrap();
    assert_eq!(rows["buffer"].as_array().unwrap().len(), 448);
    same_tree(&d.join("single"), &d.join("merged"));
    // The point count adds up, each shard holding a third.
    let counts: Vec<usize> = (1..=3)
        .map(|i| {
            let f = d.join(format!("shards/shard-{i}-of-3.json"));
            let v: serde_json::Value = serde_json::from_slice(&fs::read(f).unwrap()).unwrap();
            assert_eq!(v["points"], 448);
            v["done"].as_array().unwrap().len()
        })
        .collect();
    assert_eq!(counts, [150, 149, 149]);
    refusals(d);
}

/// Shards that are not one whole run, and a damaged one.
fn refusals(d: &Path) {
    let shard = |i: u32| d.join(format!("shards/shard-{i}-of-3.json"));
    fs::create_dir(d.join("two")).unwrap();
    for i in [1, 2] {
        fs::copy(shard(i), d.join(format!("two/shard-{i}-of-3.json"))).unwrap();
    }
    refused(
        &["lab", "merge", "two", "--out", "m"],
        d,
        "shard 3/3 is missing",
    );
    refused(
        &["lab", "merge", "two", "shards", "--out", "m"],
        d,
        "given twice",
    );
    fs::create_dir(d.join("bad")).unwrap();
    let text = fs::read_to_string(shard(3)).unwrap();
    let damaged = text.replacen("\"policy\":\"lru\"", "\"policy\":\"arc\"", 1);
    assert_ne!(damaged, text);
    fs::write(d.join("bad/shard-3-of-3.json"), damaged).unwrap();
    refused(
        &["lab", "merge", "two", "bad", "--out", "m"],
        d,
        "checksum mismatch",
    );
    let seeded = text.replacen("\"seed\": 1,", "\"seed\": 2,", 1);
    assert_ne!(seeded, text);
    fs::write(d.join("bad/shard-3-of-3.json"), seeded).unwrap();
    refused(
        &["lab", "merge", "two", "bad", "--out", "m"],
        d,
        "come from different runs",
    );
    fs::write(d.join("bad/shard-3-of-3.json"), "not json").unwrap();
    refused(
        &["lab", "merge", "two", "bad", "--out", "m"],
        d,
        "not a flashkv lab shard file",
    );
    fs::create_dir(d.join("empty")).unwrap();
    refused(
        &["lab", "merge", "empty", "--out", "m"],
        d,
        "no shard files",
    );
    assert!(!d.join("m").exists(), "a refused merge wrote results");
    for bad in ["0/3", "4/3", "3", "x/y"] {
        refused(
            &["lab", "buffer", "--shard", bad, "--out", "m"],
            d,
            "is not I/N",
        );
    }
}

#[test]
fn points_are_listed_as_text_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let text =
        String::from_utf8(ok(&["lab", "hybrid", "seed004", "--points"], tmp.path())).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // hybrid: 3 drives x 10 seeds, with and without the writer, 4
    // what-ifs, 8 flush policies x 3 seeds; seed004: 7.
    assert_eq!(lines.len(), 60 + 4 + 24 + 7, "{text}");
    assert!(
        lines[0].starts_with("hybrid\t0\thdd/seed+0\t{"),
        "{}",
        lines[0]
    );
    let v: serde_json::Value =
        serde_json::from_slice(&ok(&["lab", "buffer", "--points", "--json"], tmp.path())).unwrap();
    let pts = v.as_array().unwrap();
    assert_eq!(pts.len(), 448);
    assert_eq!(pts[447]["id"], "nvme/ipl/h3/25%/arc");
    assert_eq!(pts[447]["params"]["percent"], 25.0);
    assert_eq!(pts[447]["index"], 447);
    refused(
        &["lab", "--points", "--shard", "1/2"],
        tmp.path(),
        "cannot be used with",
    );
}
