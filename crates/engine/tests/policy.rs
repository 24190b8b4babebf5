//! The default replacement policy, CLOCK, learns of readers' hits from the
//! bits they set in the pool's frames, never through a lock or a list: a
//! key read between misses keeps its pages resident while the pages around
//! it come and go. Without the bits CLOCK would be FIFO and evict them.

use flashkv_engine::{policy_by_name, Db, Options, WriteBatch};

const KEYS: u32 = 20_000;
const FRAMES: usize = 32;

fn key(i: u32) -> [u8; 8] {
    u64::from(i.wrapping_mul(2_654_435_761)).to_be_bytes()
}

/// A store of [`KEYS`] keys (hundreds of leaves) with a pool of [`FRAMES`]
/// pages, under the default policy or the one named.
fn open(policy: Option<&str>) -> Db {
    let dev = Box::new(flashkv_device::presets::open("dram-ssd").unwrap());
    let mut opts = Options::builder().buffer_pages(FRAMES);
    if let Some(name) = policy {
        opts = opts.policy(policy_by_name(name).unwrap());
    }
    let db = Db::open(dev, opts.build().unwrap()).unwrap();
    let mut b = WriteBatch::default();
    for i in 0..KEYS {
        b.put(&key(i), &[i as u8; 100]);
    }
    db.write(b).unwrap();
    db.checkpoint().unwrap();
    db
}

/// Reads one hot key between reads of cold keys that each miss; returns
/// how many of the hot key's reads missed, after a warm-up, and how many
/// of all the reads did.
fn hot_misses(db: &Db) -> (u64, u64) {
    let hot = key(7);
    let (mut hot_missed, start) = (0, db.stats().buffer.misses);
    for n in 0..3000u32 {
        let before = db.stats().buffer.misses;
        assert!(db.get(&hot).unwrap().is_some());
        if n >= 100 {
            hot_missed += db.stats().buffer.misses - before;
        }
        let cold = key(1000 + n.wrapping_mul(7919) % (KEYS - 1000));
        assert!(db.get(&cold).unwrap().is_some());
    }
    (hot_missed, db.stats().buffer.misses - start)
}

#[test]
fn the_default_policy_keeps_pages_readers_use_between_misses() {
    let db = open(None);
    assert_eq!(db.stats().policy, "clock", "the default policy");
    let (hot, all) = hot_misses(&db);
    // The cold reads miss and evict: the hand goes round the pool again
    // and again, and passes the hot pages only with their bits set.
    assert!(all > 2000, "cold reads miss the small pool: {all}");
    assert_eq!(hot, 0, "the hot key's pages stayed ({all} misses in all)");
}

#[test]
fn lru_keeps_them_too_through_its_list() {
    let db = open(Some("lru"));
    assert_eq!(db.stats().policy, "lru");
    let (hot, all) = hot_misses(&db);
    assert!(all > 2000, "cold reads miss the small pool: {all}");
    assert_eq!(hot, 0, "the hot key's pages stayed ({all} misses in all)");
}
