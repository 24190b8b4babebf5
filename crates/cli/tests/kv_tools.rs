//! `flashkv kv` for real use: import/export/count/scan --prefix, key
//! encodings, --json on every subcommand, exit codes and the shell.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use rand::{Rng, SeedableRng};

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

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    ok(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn import_batches_then_count_scan_and_export_by_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let tsv: String = (0..1000).map(|i| format!("k{i:04}\tv{i}\n")).collect();
    let o = kv(
        &db,
        &["--create", "import", "--batch", "7", "-"],
        tsv.as_bytes(),
    );
    ok(&o);
    assert!(String::from_utf8_lossy(&o.stderr).contains("imported 1000 pairs"));
    assert_eq!(ok(&kv(&db, &["count"], b"")), "1000\n");
    assert_eq!(ok(&kv(&db, &["count", "--prefix", "k00"], b"")), "100\n");
    let scan = ok(&kv(&db, &["scan", "--prefix", "k099"], b""));
    let want: String = (990..1000).map(|i| format!("k{i:04}\tv{i}\n")).collect();
    assert_eq!(scan, want);
    assert_eq!(ok(&kv(&db, &["export"], b"")), tsv);
    let rev = ok(&kv(
        &db,
        &["scan", "--prefix", "k", "--reverse", "--limit", "2"],
        b"",
    ));
    assert_eq!(rev, "k0999\tv999\nk0998\tv998\n");
}

#[test]
fn binary_keys_round_trip_through_tsv_and_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("c"),
    );
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut pairs = std::collections::BTreeMap::new();
    for i in 0..200u32 {
        let mut k: Vec<u8> = (0..rng.gen_range(1..12)).map(|_| rng.gen()).collect();
        k.extend(i.to_be_bytes()); // distinct keys
        let mut v: Vec<u8> = (0..rng.gen_range(0..20)).map(|_| rng.gen()).collect();
        v.extend(b"\t\n\\\r\xff");
        pairs.insert(k, v);
    }
    let input: String = pairs
        .iter()
        .map(|(k, v)| format!("{}\t{}\n", hex(k), hex(v)))
        .collect();
    let hexfmt = ["--key-format", "hex", "--value-format", "hex"];
    ok(&kv(
        &a,
        &[&hexfmt[..], &["--create", "import"]].concat(),
        input.as_bytes(),
    ));
    // Escaped TSV (the default utf8 format) back into a second store.
    let tsv = kv(&a, &["export"], b"").stdout;
    assert_eq!(tsv.iter().filter(|&&c| c == b'\n').count(), pairs.len());
    assert!(!tsv.contains(&b'\r'));
    ok(&kv(&b, &["--create", "import"], &tsv));
    assert_eq!(
        ok(&kv(&b, &[&hexfmt[..], &["export"]].concat(), b"")),
        input
    );
    // JSON Lines in base64 into a third.
    let b64 = ["--key-format", "base64", "--value-format", "base64"];
    let jsonl = kv(
        &b,
        &[&b64[..], &["export", "--output-format", "jsonl"]].concat(),
        b"",
    );
    let args = [&b64[..], &["--create", "import", "--input-format", "jsonl"]].concat();
    ok(&kv(&c, &args, &jsonl.stdout));
    assert_eq!(
        ok(&kv(&c, &[&hexfmt[..], &["export"]].concat(), b"")),
        input
    );
    // A single binary key by argument.
    ok(&kv(
        &c,
        &["--key-format", "hex", "put", "00ff0a", "x\ty"],
        b"",
    ));
    let got = ok(&kv(&c, &["--key-format", "hex", "get", "00ff0a"], b""));
    assert_eq!(got, "x\\ty\n");
}

#[test]
fn a_malformed_line_names_its_number_and_keeps_what_came_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let o = kv(
        &db,
        &["--create", "import", "--batch", "2"],
        b"a\t1\nb\t2\nc\t3\nno tab\nd\t4\n",
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("stdin:4:") && err.contains("no tab"), "{err}");
    assert_eq!(ok(&kv(&db, &["export"], b"")), "a\t1\nb\t2\nc\t3\n");
    let jsonl = b"{\"key\":\"x\",\"value\":\"1\"}\n{\"key\":\"y\"}\n";
    let o = kv(&db, &["import", "--input-format", "jsonl"], jsonl);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("stdin:2: no string \"value\""));
    assert_eq!(ok(&kv(&db, &["get", "x"], b"")), "1\n");
    for bad in [&b"a\\q\tv\n"[..], b"a\tb\tc\n", b"a\\x4\tv\n"] {
        assert_eq!(kv(&db, &["import"], bad).status.code(), Some(2));
    }
}

#[test]
fn bad_input_exits_2_and_not_found_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    // A missing input file is refused before any store is created.
    let o = kv(&db, &["--create", "import", "/nonexistent/in.tsv"], b"");
    assert_eq!(o.status.code(), Some(2));
    assert!(!db.exists());
    // So is a bad key argument.
    let o = kv(
        &db,
        &["--create", "--key-format", "hex", "put", "0g", "v"],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!db.exists());
    let o = kv(
        &db,
        &["--create", "--key-format", "hex", "scan", "--from", "0"],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!db.exists());
    ok(&kv(&db, &["--create", "put", "k", "v"], b""));
    assert_eq!(kv(&db, &["get", "nope"], b"").status.code(), Some(1));
    assert_eq!(kv(&db, &["delete", "nope"], b"").status.code(), Some(1));
    for args in [
        &["--key-format", "hex", "get", "zz"][..],
        &["--key-format", "base64", "get", "a"],
        &["import", "--batch", "0"],
        &["import", "--input-format", "xml"],
        &["scan", "--prefix", "a", "--from", "b"],
    ] {
        let o = kv(&db, args, b"");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr).trim().lines().count(),
            1,
            "{args:?}"
        );
    }
}

#[test]
fn json_on_every_subcommand_prints_only_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let j = |args: &[&str], stdin: &[u8]| {
        json_lines(&kv(&db, &[&["--json"][..], args].concat(), stdin))
    };
    assert_eq!(
        j(&["--create", "import"], b"a\t1\nb\t2\n")[0]["imported"],
        2
    );
    assert_eq!(j(&["put", "c", "3"], b"")[0]["ok"], true);
    assert_eq!(j(&["get", "c"], b"")[0]["value"], "3");
    assert_eq!(j(&["delete", "c"], b"")[0]["deleted"], true);
    assert_eq!(j(&["count"], b"")[0]["count"], 2);
    let scan = j(&["scan"], b"");
    assert_eq!(scan.len(), 2);
    assert_eq!(
        (scan[1]["key"].as_str(), scan[1]["value"].as_str()),
        (Some("b"), Some("2"))
    );
    assert_eq!(j(&["export"], b""), scan);
    let stats = &j(&["stats"], b"")[0];
    assert_eq!(stats["keys"], 2);
    assert_eq!(stats["memtable_keys"], 0, "each command drains it at close");
    assert_eq!(stats["store"], "in-place");
    assert_eq!(stats["file_bytes"], std::fs::metadata(&db).unwrap().len());
    assert!(stats["pages_allocated"].as_u64().unwrap() >= 1);
    let missing = kv(&db, &["--json", "get", "zz"], b"");
    assert_eq!(missing.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&missing.stdout).unwrap();
    assert_eq!(v["found"], false);
}

#[test]
fn shell_answers_one_line_per_command_and_flushes_at_eof() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let script = "put a 1\nput b two words\nput c\\x20d e\\tf\nget c\\x20d\ndelete c\\x20d\nget a\nget zz\nbogus\nget\nscan\ncount\ndelete a\ndelete a\nflush\nscan b\n";
    let out = ok(&kv(&db, &["--create", "shell"], script.as_bytes()));
    let want = "ok\nok\nok\ne\\tf\nok\n1\nnot found\nerror: unknown command \"bogus\" (put, get, delete, scan, count, stats, flush, help, quit)\n\
                error: get: the following required arguments were not provided: <KEY>... (see help)\na\t1\nb\ttwo words\nend 2\n2\nok\nnot found\nok\nb\ttwo words\nend 1\n";
    assert_eq!(out, want);
    assert_eq!(ok(&kv(&db, &["count"], b"")), "1\n");
    let js = json_lines(&kv(&db, &["--json", "shell"], b"get b\nnope\n"));
    assert_eq!(js[0]["value"], "two words");
    assert!(js[1]["error"].as_str().unwrap().contains("unknown command"));
}

/// Issue #22's import: a million lines in random key order, with every
/// default (`--batch` 10,000). Before the log grew to hold what a batch
/// needs, this stopped at 390,000 pairs with "store is full".
#[test]
fn a_million_shuffled_lines_import_with_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("m.db");
    let input = dir.path().join("m.tsv");
    let mut order: Vec<u32> = (0..1_000_000).collect();
    rand::seq::SliceRandom::shuffle(&mut order[..], &mut rand::rngs::SmallRng::seed_from_u64(22));
    let lines: String = order
        .iter()
        .map(|n| format!("key{n:07}\tvalue {n:07} {}\n", "x".repeat(40)))
        .collect();
    std::fs::write(&input, lines).unwrap();
    let o = kv(&db, &["--create", "import", input.to_str().unwrap()], b"");
    ok(&o);
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("imported 1000000 pairs"), "{said}");
    assert_eq!(ok(&kv(&db, &["count"], b"")), "1000000\n");
    let got = ok(&kv(&db, &["get", "key0999999", "key0000000"], b""));
    let x = "x".repeat(40);
    assert_eq!(
        got,
        format!("key0999999\tvalue 0999999 {x}\nkey0000000\tvalue 0000000 {x}\n")
    );
}
