//! Readers that miss the buffer pool read pages themselves under the shared
//! lock (a store in a file), while a writer and the background writer
//! change and clean pages: every read sees its key's value, and the pages
//! those readers read are admitted to the pool and counted.

use flashkv_engine::{Db, Options, WriteBatch};

const KEYS: u32 = 6000;

fn key(i: u32) -> [u8; 8] {
    u64::from(i.wrapping_mul(2_654_435_761)).to_be_bytes()
}

/// The value of key `i` in round `round`: readers tell rounds apart.
fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = vec![(i % 251) as u8; 80];
    v[..4].copy_from_slice(&round.to_le_bytes());
    v
}

#[test]
fn readers_that_miss_read_in_parallel_and_see_whole_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    // A pool much smaller than the data: most reads miss.
    let opts = Options::builder().buffer_pages(24).build().unwrap();
    let db = Db::create(&path, opts).unwrap();
    let mut b = WriteBatch::default();
    for i in 0..KEYS {
        b.put(&key(i), &value(i, 0));
    }
    db.write(b).unwrap();
    db.checkpoint().unwrap();
    let before = db.stats();
    let rounds = 40u32;
    std::thread::scope(|s| {
        for t in 0..2u32 {
            let db = &db;
            s.spawn(move || {
                for n in 0..20_000u32 {
                    let i = (n.wrapping_mul(7919) + t * 13) % KEYS;
                    let v = db.get(&key(i)).unwrap().expect("every key is there");
                    let round = u32::from_le_bytes(v[..4].try_into().unwrap());
                    assert!(round < rounds, "key {i}: round {round}");
                    assert_eq!(v, value(i, round), "key {i}: a whole value of one round");
                }
            });
        }
        let db = &db;
        s.spawn(move || {
            for round in 1..rounds {
                let mut b = WriteBatch::default();
                for i in (round..KEYS).step_by(97) {
                    b.put(&key(i), &value(i, round));
                }
                db.write(b).unwrap();
            }
        });
    });
    let after = db.stats();
    let read = after.data_io.reads - before.data_io.reads;
    assert!(
        after.store.page_reads - before.store.page_reads >= read / 2,
        "page reads counted: {:?} then {:?}",
        before.store,
        after.store
    );
    assert!(
        after.buffer.misses - before.buffer.misses > 1000,
        "reads missed the small pool: {:?}",
        after.buffer
    );
    let shared = after.buffer.shared_misses - before.buffer.shared_misses;
    assert!(
        shared > 500,
        "readers read missing pages under the shared lock: {:?}",
        after.buffer
    );
    drop(db);
    let db = Db::open_path(&path, Options::default()).unwrap();
    for i in 0..KEYS {
        let v = db.get(&key(i)).unwrap().unwrap();
        assert_eq!(v[4..], value(i, 0)[4..], "key {i} after reopen");
    }
}
