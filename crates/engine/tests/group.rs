//! Group commit on a real file: durable commits from several threads are
//! flushed outside the store's lock, each thread reads its writes back,
//! and all of them are there after a reopen. (That an acknowledged commit
//! survives power loss is the crash tests' job, on simulated devices that
//! flush the same way; that committers share flushes is tested in
//! `group.rs`'s unit tests; the peer benchmark's 4-thread phase shows what
//! it buys.)

use flashkv_engine::{Db, Options};

const THREADS: usize = 4;
const PUTS: usize = 60;

fn key(t: usize, i: usize) -> Vec<u8> {
    format!("t{t}-k{i:03}").into_bytes()
}

#[test]
fn durable_commits_from_threads_all_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("group.db");
    let opts = Options::builder().sync(true).build().unwrap();
    let db = Db::create(&path, opts.clone()).unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let db = &db;
            s.spawn(move || {
                for i in 0..PUTS {
                    db.put(&key(t, i), &[t as u8; 100]).unwrap();
                    // A thread reads its own acknowledged write back at once.
                    assert_eq!(db.get(&key(t, i)).unwrap(), Some(vec![t as u8; 100]));
                }
            });
        }
    });
    let st = db.stats();
    assert_eq!(st.commits, (THREADS * PUTS) as u64);
    assert!(
        st.device_flushes >= 1 && st.device_flushes <= st.commits + 2 * st.checkpoints + 4,
        "at most one flush per commit: {} flushes, {} commits",
        st.device_flushes,
        st.commits
    );
    drop(db);
    let db = Db::open_path(&path, opts).unwrap();
    for t in 0..THREADS {
        for i in 0..PUTS {
            assert_eq!(
                db.get(&key(t, i)).unwrap(),
                Some(vec![t as u8; 100]),
                "thread {t} put {i}"
            );
        }
    }
}
