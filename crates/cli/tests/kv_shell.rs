//! `kv shell` as people use sqlite3 or redis-cli: quoting, scan ranges,
//! count by prefix, help and quit, the one-shot commands' JSON shape; on a
//! terminal a prompt and history. And the one-shot multi-get and range delete.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn kv(db: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .arg("kv")
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn json(s: &str) -> Vec<serde_json::Value> {
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A store holding k00..k09 and "my key".
fn store(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("s.db");
    let tsv: String = (0..10).map(|i| format!("k{i:02}\tv{i}\n")).collect();
    ok(&kv(&db, &["--create", "import", "-"], tsv.as_bytes()));
    ok(&kv(&db, &["put", "my key", "spaced value"], b""));
    db
}

#[test]
fn the_shell_quotes_scans_ranges_counts_prefixes_and_quits() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let script = "get \"my key\"\nget 'my key'\nget my\\ key\nput \"a b\" one two\nget \"a b\"\n\
                  scan --from k03 --to k06\nscan k0 --reverse --limit 2\ncount k0\ncount\n\
                  get k01 nope k02\ndelete --prefix k0\ncount\nquit\nget k05\n";
    let out = ok(&kv(&db, &["shell"], script.as_bytes()));
    let want = "spaced value\nspaced value\nspaced value\nok\none two\n\
                k03\tv3\nk04\tv4\nk05\tv5\nend 3\nk09\tv9\nk08\tv8\nend 2\n10\n12\n\
                k01\tv1\nnot found: nope\nk02\tv2\ndeleted 10\n2\n";
    assert_eq!(out, want, "nothing after quit is run");
    let help = ok(&kv(&db, &["shell"], b"help\nhelp scan\n"));
    for word in [
        "put",
        "scan",
        "count",
        "stats",
        "quit",
        "--limit",
        "--reverse",
    ] {
        assert!(help.contains(word), "{word} in {help}");
    }
    let stats = ok(&kv(&db, &["shell"], b"stats\nexit\n"));
    assert!(stats.contains("\nkeys\t2\n"), "{stats}");
    // Pairs still in the memtable count as keys, as `count` counts them.
    let stats = ok(&kv(&db, &["shell"], b"put zz 1\nstats\ncount\nexit\n"));
    assert!(
        stats.contains("\nkeys\t3\n") && stats.ends_with("3\n"),
        "{stats}"
    );
    assert!(stats.contains("\nmemtable_keys\t1\n"), "{stats}");
}

#[test]
fn shell_json_answers_have_the_one_shot_shape() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let one_shot = |args: &[&str]| json(&ok(&kv(&db, args, b"")));
    let shell = |line: &str| json(&ok(&kv(&db, &["--json", "shell"], line.as_bytes())));
    assert_eq!(shell("get k01\n"), one_shot(&["--json", "get", "k01"]));
    assert_eq!(shell("get \"my key\"\n")[0]["key"], "my key");
    assert_eq!(shell("count k0\n"), one_shot(&["--json", "count", "k0"]));
    let mut scan = shell("scan --limit 2\n");
    assert_eq!(scan.pop().unwrap()["end"], 2);
    assert_eq!(scan, one_shot(&["--json", "scan", "--limit", "2"]));
    assert_eq!(shell("put x y\n"), one_shot(&["--json", "put", "x", "y"]));
    assert!(shell("stats\n")[0]["keys"].is_u64());
    assert!(shell("bogus\n")[0]["error"]
        .as_str()
        .unwrap()
        .contains("unknown command"));
    assert!(shell("get \"open\n")[0]["error"]
        .as_str()
        .unwrap()
        .contains("unclosed"));
}

#[test]
fn multi_get_and_range_delete_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let o = kv(&db, &["get", "k01", "nope", "k02"], b"");
    assert_eq!(o.status.code(), Some(1), "a key is absent");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "k01\tv1\nk02\tv2\n");
    assert!(String::from_utf8_lossy(&o.stderr).contains("not found: nope"));
    let o = kv(&db, &["delete", "--from", "k02", "--to", "k05"], b"");
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("deleted 3 pairs"));
    let o = kv(&db, &["delete", "--from", "k05", "--to", "k06"], b"");
    ok(&o);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("deleted 1 pair\n"),
        "one pair, singular"
    );
    assert_eq!(ok(&kv(&db, &["count", "k0"], b"")), "6\n");
    let v = json(&ok(&kv(&db, &["--json", "delete", "--prefix", "k0"], b"")));
    assert_eq!(v[0]["deleted"], 6);
    assert_eq!(ok(&kv(&db, &["scan"], b"")), "my key\tspaced value\n");
    assert_eq!(
        kv(&db, &["delete"], b"").status.code(),
        Some(2),
        "nothing named"
    );
    assert_eq!(
        kv(&db, &["delete", "k1", "--prefix", "k"], b"")
            .status
            .code(),
        Some(2)
    );
}

/// A range delete larger than one batch, and than the buffer pool.
#[test]
fn a_large_range_delete_goes_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let tsv: String = (0..5000).map(|i| format!("a{i:05}\t{i}\n")).collect();
    ok(&kv(&db, &["--create", "import", "-"], tsv.as_bytes()));
    ok(&kv(&db, &["put", "b", "1"], b""));
    let o = kv(&db, &["--buffer", "8", "delete", "--prefix", "a"], b"");
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("deleted 5000 pairs"));
    assert_eq!(ok(&kv(&db, &["count"], b"")), "1\n");
}

/// On a terminal: a prompt, and the lines typed kept in ~/.flashkv_history.
#[test]
fn on_a_terminal_the_shell_prompts_and_keeps_history() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let (mut master, slave) = pty();
    let mut child = Command::new(env!("CARGO_BIN_EXE_flashkv"))
        .args(["kv", "--db"])
        .arg(&db)
        .arg("shell")
        .env("HOME", dir.path())
        .env("TERM", "dumb")
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave)
        .spawn()
        .unwrap();
    master.write_all(b"get k03\rquit\r").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    let mut seen = Vec::new();
    let _ = read_available(&mut master, &mut seen);
    let seen = String::from_utf8_lossy(&seen);
    assert!(seen.contains("flashkv> "), "{seen}");
    assert!(seen.contains("v3"), "{seen}");
    assert!(seen.contains("`help` lists the commands"), "{seen}");
    let history = std::fs::read_to_string(dir.path().join(".flashkv_history")).unwrap();
    assert!(history.contains("get k03"), "{history}");
}

/// A pseudo-terminal: the master to type into, the slave for the child.
fn pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut m, mut s) = (0, 0);
    // SAFETY: openpty writes two descriptors into the integers given.
    let r = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned here alone.
    unsafe { (std::fs::File::from_raw_fd(m), std::fs::File::from_raw_fd(s)) }
}

/// Reads what the terminal holds until the child's side is closed.
fn read_available(master: &mut std::fs::File, into: &mut Vec<u8>) -> std::io::Result<()> {
    let mut buf = [0u8; 4096];
    loop {
        match master.read(&mut buf) {
            Ok(0) | Err(_) => return Ok(()), // EIO once the slave is closed
            Ok(n) => into.extend_from_slice(&buf[..n]),
        }
    }
}
