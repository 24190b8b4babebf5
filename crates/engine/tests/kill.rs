//! `kill -9` of a process writing durable batches: a child process (this
//! test binary, running [`kill_child`]) opens a store in a real file, memtable
//! on as shipped, and commits batches with per-commit durability,
//! reporting each acknowledgement on a pipe; the parent kills it with
//! SIGKILL at a random point, reopens the store and requires exactly the
//! batches before some point, whole, and every acknowledged one among
//! them. The same store lives on across its kills, so a kill may also land
//! in a recovery or a memtable drain.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use flashkv_engine::{Db, Options, WriteBatch};
use flashkv_testing::{cases, Tally};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The child's store path (set only in the child).
const STORE: &str = "FLASHKV_KILL_STORE";
/// The child's workload seed.
const SEED: &str = "FLASHKV_KILL_SEED";
/// Batches a child writes at most before it stops on its own.
const BATCHES: u64 = 400;

/// The store's options: the defaults plus per-commit durability, with a
/// memtable small enough to drain into the tree now and then.
fn options() -> Options {
    Options::builder()
        .sync(true)
        .memtable(256 << 10)
        .build()
        .expect("valid options")
}

/// Batch `i` of workload `seed`: 1 to 300 pairs over 2,000 keys (so
/// batches overwrite each other's pairs), a delete now and then, and the
/// key `last` naming the batch.
fn batch(seed: u64, i: u64) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    let mut rng = SmallRng::seed_from_u64(seed.wrapping_mul(1_000_003) ^ i);
    let n = [1, 10, 300][rng.gen_range(0..3)];
    let mut pairs: Vec<_> = (0..n)
        .map(|_| {
            let k = format!("key{:05}", rng.gen_range(0..2000)).into_bytes();
            let v = rng
                .gen_bool(0.9)
                .then(|| vec![rng.gen::<u8>(); rng.gen_range(1..200)]);
            (k, v)
        })
        .collect();
    pairs.push((b"last".to_vec(), Some(i.to_le_bytes().to_vec())));
    pairs
}

/// The store's pairs after batches `0..k` of workload `seed`.
fn model(seed: u64, k: u64) -> std::collections::BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = std::collections::BTreeMap::new();
    for i in 0..k {
        for (key, v) in batch(seed, i) {
            match v {
                Some(v) => m.insert(key, v),
                None => m.remove(&key),
            };
        }
    }
    m
}

/// Batches the store at `path` holds (the `last` one's number plus one).
fn batches_in(db: &Db) -> u64 {
    db.get(b"last").expect("read last").map_or(0, |v| {
        u64::from_le_bytes(v.try_into().expect("an 8-byte batch number")) + 1
    })
}

/// The child: opens (or creates) the store and commits batches from where
/// it stands, printing `ack <i>` once batch `i` is durable. It runs only
/// when the parent starts it (it needs its environment), not in a test run.
#[test]
#[ignore = "the kill test's child process, started by kill_9_leaves_whole_batches"]
fn kill_child() {
    let path = std::env::var(STORE).expect("the child runs under the kill test");
    let seed: u64 = std::env::var(SEED)
        .expect("seed")
        .parse()
        .expect("a number");
    let db = Db::open_or_create(&path, options()).expect("open the store");
    let from = batches_in(&db);
    println!("open {from}");
    for i in from..from + BATCHES {
        let mut wb = WriteBatch::default();
        for (k, v) in batch(seed, i) {
            match v {
                Some(v) => wb.put(&k, &v),
                None => wb.delete(&k),
            };
        }
        db.write(wb).expect("commit");
        println!("ack {i}");
    }
}

/// Starts the child on `path`; kills it after a random number of
/// acknowledgements (or, now and then, while it opens the store); returns
/// the highest batch it acknowledged (if any) and whether the kill came
/// while it was still running.
fn kill_once(path: &Path, seed: u64, rng: &mut SmallRng) -> (Option<u64>, bool) {
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "kill_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(STORE, path)
        .env(SEED, seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the child");
    let mut lines = BufReader::new(child.stdout.take().expect("a pipe")).lines();
    let mut acked = None;
    if rng.gen_bool(0.15) {
        std::thread::sleep(Duration::from_micros(rng.gen_range(0..20_000)));
    } else {
        let (after, deadline) = (
            rng.gen_range(1..BATCHES / 2),
            Instant::now() + Duration::from_secs(60),
        );
        let mut seen = 0;
        while seen < after {
            match lines.next() {
                Some(Ok(l)) => seen += u64::from(parse(&l, &mut acked)),
                _ => break,
            }
            assert!(
                Instant::now() < deadline,
                "the child made no progress in 60 s"
            );
        }
    }
    let running = child.try_wait().expect("child status").is_none();
    child.kill().expect("SIGKILL the child");
    child.wait().expect("reap the child");
    // Acknowledgements already in the pipe count too.
    for l in lines.map_while(Result::ok) {
        parse(&l, &mut acked);
    }
    (acked, running)
}

/// Reads an `ack <i>` line into `acked`; returns whether it was one.
fn parse(line: &str, acked: &mut Option<u64>) -> bool {
    let Some(i) = line.strip_prefix("ack ") else {
        return false;
    };
    *acked = Some(i.trim().parse().expect("an acknowledged batch number"));
    true
}

/// One store, killed `kills` times; after each kill it must hold exactly
/// batches `0..k` for some `k` past every acknowledged batch.
fn case(seed: u64, kills: u64) -> Tally {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("store");
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut t = Tally::default();
    let mut durable = 0;
    for n in 0..kills {
        let (acked, running) = kill_once(&path, seed, &mut rng);
        if let Some(a) = acked {
            durable = durable.max(a + 1);
        }
        let what = format!("seed {seed} kill {n}: {durable} batches acknowledged");
        let db = match Db::open_path(&path, options()) {
            Ok(db) => db,
            Err(e) => {
                // Killed while creating the store: allowed before any ack;
                // the next child starts a new one.
                assert_eq!(durable, 0, "{what}: the store does not open: {e}");
                let _ = std::fs::remove_file(&path);
                t += running.into();
                continue;
            }
        };
        let k = batches_in(&db);
        assert!(k >= durable, "{what}: the store holds only {k} batches");
        let got: std::collections::BTreeMap<_, _> =
            db.scan(..).expect("scan").into_iter().collect();
        assert!(
            got == model(seed, k),
            "{what}: the store is not batches 0..{k} whole"
        );
        durable = k;
        // Pairs the reopen put back in the memtable: the kill left them
        // in the log only, not yet in the tree.
        t += Tally::memtable(running, db.stats().memtable_keys > 0);
    }
    t
}

#[test]
fn kill_9_leaves_whole_batches() {
    let test = "kill_9_leaves_whole_batches";
    let t = cases(test, 0..6, |seed| case(seed, 10));
    // Most kills land while the child writes, not after it finished.
    t.assert_hits(test, 80);
}
