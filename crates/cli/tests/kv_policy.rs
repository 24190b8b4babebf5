//! `flashkv kv --policy`: every policy name opens a working store; an
//! unknown one is a usage error.

use std::process::{Command, Output};

fn flashkv(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn every_policy_serves_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.img");
    let db = db.to_str().unwrap();
    for (i, p) in flashkv_engine::POLICY_NAMES.iter().enumerate() {
        let base = [
            "kv", "--db", db, "--create", "--device", "nand-ipl", "--policy", p, "--buffer", "2",
        ];
        let key = format!("k{i}");
        let put = flashkv(&[&base[..], &["put", &key, p]].concat());
        assert!(put.status.success(), "{p}: {put:?}");
        let stats = flashkv(&[&base[..], &["stats"]].concat());
        let out = String::from_utf8_lossy(&stats.stdout);
        assert!(out.contains(&format!("policy\t{p}\n")), "{out}");
        let get = flashkv(&[&base[..], &["get", &key]].concat());
        assert_eq!(String::from_utf8_lossy(&get.stdout).trim(), *p);
    }
}

#[test]
fn unknown_policy_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let o = flashkv(&[
        "kv",
        "--db",
        db.to_str().unwrap(),
        "--policy",
        "mru",
        "stats",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("mru"));
}
