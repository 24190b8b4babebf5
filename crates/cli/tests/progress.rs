//! Progress when stderr is not a terminal: a line per finished step and
//! per tenth of the work, with percent and ETA, for profile (even a single
//! long point), replay and import; stdout keeps only the JSON.

use std::process::{Command, Output};

fn flashkv(args: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout is only JSON");
    o
}

fn lines(o: &Output, prefix: &str) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

#[test]
fn one_long_profile_point_reports_its_progress() {
    let o = flashkv(&[
        "profile",
        "--device",
        "hdd-7200",
        "--patterns",
        "rw",
        "--block-sizes",
        "4k",
        "--span",
        "64m",
        "--ops",
        "20000",
        "--json",
    ]);
    let l = lines(&o, "profile:");
    // Tenths of the work (preconditioning MiB and requests) before the
    // point ends, each with percent and ETA, then the finished step.
    assert!(l.len() >= 8, "{l:?}");
    assert!(
        l[..l.len() - 1]
            .iter()
            .all(|x| x.contains(" %, ETA ") && x.contains("running")),
        "{l:?}"
    );
    let last = l.last().unwrap();
    assert!(
        last.starts_with("profile: [1/1] rw 4K done in ") && last.ends_with("; 100 %"),
        "{last}"
    );
}

#[test]
fn replay_and_import_report_as_they_go() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces/sample.msr.csv");
    let o = flashkv(&[
        "replay", "--trace", root, "--format", "msr", "--device", "nvme", "--json",
    ]);
    let l = lines(&o, "replay:");
    assert!(
        l.last().unwrap().ends_with("1000/1000 records, 100 %"),
        "{l:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("in.tsv");
    let text: String = (0..50_000).map(|i| format!("k{i:06}\tv{i}\n")).collect();
    std::fs::write(&tsv, text).unwrap();
    let db = dir.path().join("s.db");
    let o = flashkv(&[
        "kv",
        "--db",
        db.to_str().unwrap(),
        "--create",
        "--json",
        "import",
        tsv.to_str().unwrap(),
    ]);
    let l = lines(&o, "import:");
    assert!(l.len() >= 5, "a line per tenth of the file: {l:?}");
    assert!(
        l.iter().all(|x| x.contains(" of ") && x.contains(" %")),
        "{l:?}"
    );
}
