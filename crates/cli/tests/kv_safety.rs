//! `flashkv kv` never harms a file that is not a store, creates a store
//! only with `--create`, and serialises processes sharing a store.

use std::path::Path;
use std::process::{Command, Output};

use rand::{RngCore, SeedableRng};

fn flashkv(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(args)
        .output()
        .unwrap()
}

fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0u8; n];
    rand::rngs::SmallRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// An ext4 image made by `mkfs.ext4`, or `None` (with a message) where the tool is missing.
fn ext4_image(dir: &Path) -> Option<Vec<u8>> {
    let p = dir.join("ext4.img");
    std::fs::write(&p, vec![0u8; 8 << 20]).unwrap();
    let ok = Command::new("mkfs.ext4")
        .args(["-q", "-F", p.to_str().unwrap()])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("mkfs.ext4 not available: the ext4 case is skipped (apt-get install e2fsprogs)");
        return None;
    }
    Some(std::fs::read(&p).unwrap())
}

#[test]
fn foreign_files_are_left_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = vec![
        ("text", b"meeting notes\n".to_vec()),
        ("1k", random_bytes(1 << 10, 1)),
        ("1m", random_bytes(1 << 20, 2)),
        ("64m", random_bytes(64 << 20, 3)),
    ];
    if let Some(img) = ext4_image(dir.path()) {
        cases.push(("ext4", img));
    }
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let p = path.to_str().unwrap();
        for device in [None, Some("nvme")] {
            for cmd in [&["get", "k"][..], &["put", "k", "v"], &["stats"], &["scan"]] {
                let mut args = vec!["kv", "--db", p, "--create"];
                if let Some(d) = device {
                    args.extend(["--device", d]);
                }
                args.extend(cmd);
                let o = flashkv(&args);
                let err = String::from_utf8_lossy(&o.stderr);
                assert_eq!(o.status.code(), Some(2), "{name} {args:?}: {err}");
                assert_eq!(err.lines().count(), 1, "{name}: {err}");
                assert!(err.contains("not a flashkv store"), "{name}: {err}");
                assert!(
                    std::fs::read(&path).unwrap() == bytes,
                    "{name} {args:?}: file modified"
                );
            }
        }
    }
}

#[test]
fn a_missing_store_needs_create() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.db");
    let p = path.to_str().unwrap();
    let o = flashkv(&["kv", "--db", p, "get", "k"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--create"));
    assert!(!path.exists(), "get created a store");
    let o = flashkv(&["kv", "--db", p, "--create", "put", "k", "v"]);
    assert!(o.status.success(), "{o:?}");
    let o = flashkv(&["kv", "--db", p, "get", "k"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "v\n");
}

#[test]
fn parallel_writers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let p = path.to_str().unwrap().to_string();
    let o = flashkv(&["kv", "--db", &p, "--create", "stats"]);
    assert!(o.status.success(), "{o:?}");
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let p = p.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let k = format!("k{w}-{i}");
                    let o = flashkv(&["kv", "--db", &p, "put", &k, "v"]);
                    assert!(
                        o.status.success(),
                        "{k}: {}",
                        String::from_utf8_lossy(&o.stderr)
                    );
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let o = flashkv(&["kv", "--db", &p, "scan"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 100);
}

#[test]
fn reading_commands_open_the_store_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    assert!(flashkv(&["kv", "--db", db, "--create", "put", "k", "v"])
        .status
        .success());
    let before = std::fs::read(db).unwrap();
    for cmd in [
        &["get", "k"][..],
        &["scan"],
        &["count"],
        &["export"],
        &["stats"],
    ] {
        let mut args = vec!["kv", "--db", db];
        args.extend_from_slice(cmd);
        let out = flashkv(&args);
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A reader writes nothing: no checkpoint on open or close.
        assert!(
            std::fs::read(db).unwrap() == before,
            "{cmd:?} wrote the store"
        );
    }
    let out = flashkv(&["kv", "--db", db, "get", "k"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "v");
}
