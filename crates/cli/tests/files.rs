//! The one rule for files, tried the way a careless user would: every
//! command that takes a path is pointed at files that are not flashkv's (a
//! text file, random bytes of 1 KB / 1 MiB / 64 MiB, an ext4 image, a SQLite
//! header), at a directory and at a path whose directory is missing. Each
//! must exit 2 with one line on stderr and leave the file byte-identical.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rand::{RngCore, SeedableRng};

fn flashkv(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(args)
        .output()
        .unwrap()
}

fn random_file(path: &Path, len: usize) {
    let mut b = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(len as u64).fill_bytes(&mut b);
    std::fs::write(path, b).unwrap();
}

/// The foreign files, by name; the ext4 image only where mkfs.ext4 runs.
fn foreign_files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    let text = dir.join("notes.txt");
    std::fs::write(&text, "shopping list\nmilk\teggs\n").unwrap();
    v.push(text);
    for (name, len) in [("r1k", 1000), ("r1m", 1 << 20), ("r64m", 64 << 20)] {
        let p = dir.join(name);
        random_file(&p, len);
        v.push(p);
    }
    let sqlite = dir.join("app.sqlite");
    let mut b = b"SQLite format 3\0".to_vec();
    b.resize(64 << 10, 0x11);
    std::fs::write(&sqlite, b).unwrap();
    v.push(sqlite);
    let ext4 = dir.join("fs.ext4");
    std::fs::File::create(&ext4)
        .unwrap()
        .set_len(16 << 20)
        .unwrap();
    match Command::new("mkfs.ext4")
        .args(["-q", "-F"])
        .arg(&ext4)
        .output()
    {
        Ok(o) if o.status.success() => v.push(ext4),
        _ => eprintln!("mkfs.ext4 is missing or failed: skipping the ext4 image case"),
    }
    v
}

/// Every command that takes a path, with `P` for the path under test and
/// `N` for a fresh path beside it.
const COMMANDS: &[&[&str]] = &[
    &["profile", "--path", "P", "--ops", "5", "--warmup", "0"],
    &["profile", "--spec", "P"],
    &["advise", "--spec", "P"],
    &["advise", "--profile", "P"],
    &[
        "hybrid",
        "create",
        "--ssd",
        "P",
        "--hdd",
        "N",
        "--hdd-size",
        "64m",
    ],
    &[
        "hybrid",
        "create",
        "--ssd",
        "N",
        "--ssd-size",
        "64m",
        "--hdd",
        "P",
    ],
    &["hybrid", "inspect", "--ssd", "P", "--hdd", "P"],
    &[
        "replay", "--trace", "P", "--format", "msr", "--device", "nvme",
    ],
    &["lab", "advisor", "--quick", "--out", "P"],
    &["serve", "--file", "P", "--socket", "N"],
    &["serve", "--spec", "P", "--socket", "N"],
    &["serve", "--device", "nvme", "--socket", "P"],
];

fn args_for<'a>(cmd: &[&'a str], p: &'a str, n: &'a str) -> Vec<&'a str> {
    cmd.iter()
        .map(|&a| match a {
            "P" => p,
            "N" => n,
            a => a,
        })
        .collect()
}

#[track_caller]
fn assert_refused(args: &[&str], o: &Output) {
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
    assert_eq!(
        e.trim_end().lines().count(),
        1,
        "{args:?}: not one line: {e}"
    );
    assert!(e.starts_with("error: "), "{args:?}: {e}");
    assert!(!e.contains("panicked"), "{args:?}: {e}");
}

#[test]
fn foreign_files_are_refused_and_left_byte_identical() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let files = foreign_files(dir.path());
    let fresh = dir.path().join("fresh.img");
    let n = fresh.to_str().unwrap();
    for f in &files {
        let before = std::fs::read(f).unwrap();
        for cmd in COMMANDS {
            let args = args_for(cmd, f.to_str().unwrap(), n);
            assert_refused(&args, &flashkv(&args));
            assert!(
                std::fs::read(f).unwrap() == before,
                "{args:?} changed the file"
            );
            assert!(!fresh.exists(), "{args:?} left {n} behind");
        }
    }
}

#[test]
fn a_directory_or_a_missing_parent_is_refused() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path().to_str().unwrap();
    let missing = dir.path().join("no/such/file");
    let m = missing.to_str().unwrap();
    let fresh = dir.path().join("fresh.img");
    let n = fresh.to_str().unwrap();
    for cmd in COMMANDS {
        // A directory is a fine place for lab results.
        if cmd[0] != "lab" {
            let args = args_for(cmd, d, n);
            assert_refused(&args, &flashkv(&args));
        }
        let args = args_for(cmd, m, n);
        assert_refused(&args, &flashkv(&args));
        assert!(!dir.path().join("no").exists(), "{args:?} made a directory");
        assert!(!fresh.exists(), "{args:?} left {n} behind");
    }
}

#[test]
fn hybrid_create_refuses_one_file_for_both_sides_and_cleans_up_after_failure() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let s = dir.path().join("s.img");
    let h = dir.path().join("h.img");
    let (s, h) = (s.to_str().unwrap(), h.to_str().unwrap());
    let same = format!("{}/./s.img", dir.path().display());
    let args = [
        "hybrid",
        "create",
        "--ssd",
        s,
        "--hdd",
        &same,
        "--ssd-size",
        "64m",
        "--hdd-size",
        "64m",
    ];
    let o = flashkv(&args);
    assert_refused(&args, &o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("the same file"));
    // An SSD too small for a cache: the layout fails after both files exist.
    let args = [
        "hybrid",
        "create",
        "--ssd",
        s,
        "--hdd",
        h,
        "--ssd-size",
        "64k",
        "--hdd-size",
        "64m",
    ];
    assert_refused(&args, &flashkv(&args));
    assert!(
        !Path::new(s).exists() && !Path::new(h).exists(),
        "files left behind"
    );
    // Absurd sizes are refused before anything is made, in human units.
    let args = [
        "hybrid",
        "create",
        "--ssd",
        s,
        "--hdd",
        h,
        "--ssd-size",
        "64m",
        "--hdd-size",
        "1p",
    ];
    let o = flashkv(&args);
    assert_refused(&args, &o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("needs 1 PiB"));
    assert!(!Path::new(s).exists() && !Path::new(h).exists());
}

#[test]
fn hybrid_create_again_on_its_own_clean_pair_is_allowed() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let s = dir.path().join("s.img");
    let h = dir.path().join("h.img");
    let (s, h) = (s.to_str().unwrap(), h.to_str().unwrap());
    let first = [
        "hybrid",
        "create",
        "--ssd",
        s,
        "--hdd",
        h,
        "--ssd-size",
        "64m",
        "--hdd-size",
        "256m",
    ];
    assert!(flashkv(&first).status.success());
    let again = ["hybrid", "create", "--ssd", s, "--hdd", h];
    let o = flashkv(&again);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Another HDD behind the same cache is not the pair flashkv made.
    let other = dir.path().join("other.img");
    random_file(&other, 1 << 20);
    let o = flashkv(&[
        "hybrid",
        "create",
        "--ssd",
        s,
        "--hdd",
        other.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
}

#[test]
fn profile_refuses_to_fill_more_than_the_free_space() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = dir.path().join("big.bin");
    let args = ["profile", "--path", p.to_str().unwrap(), "--span", "1p"];
    let o = flashkv(&args);
    assert_refused(&args, &o);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("needs 1.0 PiB") && e.contains("free"), "{e}");
    assert!(!p.exists());
}

#[test]
fn progress_goes_to_stderr_as_lines_when_piped() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = dir.path().join("t.bin");
    let o = flashkv(&[
        "profile",
        "--path",
        p.to_str().unwrap(),
        "--span",
        "8m",
        "--patterns",
        "sr",
        "--block-sizes",
        "4k,64k",
        "--ops",
        "20",
        "--warmup",
        "0",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let e = String::from_utf8_lossy(&o.stderr);
    let lines: Vec<&str> = e.lines().filter(|l| !l.starts_with("warning:")).collect();
    let fill: Vec<&&str> = lines.iter().filter(|l| l.starts_with("filling")).collect();
    assert_eq!(
        fill.len(),
        8,
        "one line per 1 MiB chunk past each tenth, then one at the end: {e}"
    );
    assert!(fill[0].contains("1 MiB of 8 MiB, 12 %"), "{e}");
    assert!(fill[7].ends_with("8 MiB of 8 MiB, 100 %"), "{e}");
    let steps: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with("profile: ["))
        .collect();
    assert_eq!(steps.len(), 2, "{e}");
    assert!(steps[0].starts_with("profile: [1/2] sr 4K done in "), "{e}");
    assert!(
        steps[1].starts_with("profile: [2/2] sr 64K done in "),
        "{e}"
    );
    assert!(steps[1].ends_with("; 100 %"), "{e}");
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout is only JSON");
}

#[test]
fn the_lab_reports_each_finished_step_on_stderr_when_piped() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let out = dir.path().join("results");
    let o = flashkv(&[
        "lab",
        "advisor",
        "--quick",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout is only JSON");
    let e = String::from_utf8_lossy(&o.stderr);
    let steps: Vec<&str> = e.lines().filter(|l| l.starts_with("lab: [")).collect();
    // One step per device preset, numbered in order.
    let presets = flashkv_device::presets::names();
    assert_eq!(steps.len(), presets.len(), "{e}");
    // Each line counts the points done, with percent (and ETA while
    // there is some left): the advisor's grid is a point per preset.
    let n = presets.len();
    for (i, (line, name)) in steps.iter().zip(&presets).enumerate() {
        let head = format!("lab: [{}] advisor {name} done in ", i + 1);
        assert!(line.starts_with(&head), "{line}");
        let count = format!(" s; {}/{n} points, {} %", i + 1, (i + 1) * 100 / n);
        assert!(line.contains(&count), "{line} lacks {count}");
        assert_eq!(line.contains("ETA"), i + 1 < n, "{line}");
    }
}
