//! The streaming range API against a `BTreeMap`, with readers iterating
//! while a writer runs, and space given back by deletes.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use flashkv_engine::{Db, IplGeometry, Options, StoreKind, WriteBatch};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// A `kind` store on a fresh `dram-ssd` with a pool of `frames` pages.
fn open(kind: StoreKind, frames: usize) -> Db {
    let dev = Box::new(flashkv_device::presets::open("dram-ssd").unwrap());
    let opts = Options::builder()
        .store(kind)
        .buffer_pages(frames)
        .build()
        .unwrap();
    Db::open(dev, opts).unwrap()
}

fn kinds() -> [StoreKind; 3] {
    [
        StoreKind::InPlace,
        StoreKind::InPageLogging(IplGeometry::seed()),
        StoreKind::InPageLogging(IplGeometry::shared()),
    ]
}

fn bound(rng: &mut SmallRng) -> Bound<Vec<u8>> {
    let k = format!("r{:04}", rng.gen_range(0..1200)).into_bytes();
    match rng.gen_range(0..3) {
        0 => Bound::Included(k),
        1 => Bound::Excluded(k),
        _ => Bound::Unbounded,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Readers walk random ranges of the `r` keys, which only they read, and
/// must see exactly the model; meanwhile a writer churns the `w` keys,
/// and a reader walking those must see keys strictly in order.
#[test]
fn ranges_match_the_model_while_a_writer_runs() {
    for kind in kinds() {
        let db = Arc::new(open(kind, 16));
        let mut model = BTreeMap::new();
        let mut rng = SmallRng::seed_from_u64(7);
        for _ in 0..3000 {
            let k = format!("r{:04}", rng.gen_range(0..1000)).into_bytes();
            let v = vec![rng.gen::<u8>(); rng.gen_range(0..300)];
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        let model = Arc::new(model);
        let readers: Vec<_> = (0..2u64)
            .map(|t| {
                let (db, model) = (db.clone(), model.clone());
                std::thread::spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(100 + t);
                    for _ in 0..40 {
                        let (lo, hi) = (bound(&mut rng), bound(&mut rng));
                        if matches!((&lo, &hi), (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) if a > b)
                        {
                            continue;
                        }
                        let rev = rng.gen_bool(0.5);
                        let r = (as_ref(&lo), as_ref(&hi));
                        let got: Vec<_> = if rev {
                            db.range_rev(r).map(|p| p.unwrap().into()).collect()
                        } else {
                            db.range(r).map(|p| p.unwrap().into()).collect()
                        };
                        let mut want: Vec<_> = model
                            .range::<[u8], _>((as_ref(&lo), as_ref(&hi)))
                            .filter(|(k, _)| k.starts_with(b"r"))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        if rev {
                            want.reverse();
                        }
                        let got: Vec<(Vec<u8>, Vec<u8>)> = got.into_iter().filter(|(k, _)| k.starts_with(b"r")).collect();
                        assert_eq!(got, want, "{kind:?} {lo:?}..{hi:?} rev={rev}");
                        let w: Vec<Vec<u8>> = db.prefix(b"w").map(|r| r.unwrap().key().to_vec()).collect();
                        assert!(w.windows(2).all(|p| p[0] < p[1]), "writer's keys out of order");
                    }
                })
            })
            .collect();
        let mut rng = SmallRng::seed_from_u64(9);
        for i in 0..2000u32 {
            let k = format!("w{:04}", rng.gen_range(0..500)).into_bytes();
            if i % 3 == 0 {
                db.delete(&k).unwrap();
            } else {
                let mut b = WriteBatch::default();
                b.put(&k, &[1u8; 50]).put(&[&k[..], b"x"].concat(), b"y");
                db.write(b).unwrap();
            }
        }
        for r in readers {
            r.join().unwrap();
        }
    }
}

/// Under FIFO churn at a constant live set, emptied leaves leave the tree
/// and their pages are reused: the store stops growing.
#[test]
fn fifo_churn_keeps_the_page_count_bounded() {
    for kind in kinds() {
        let db = open(kind, 64);
        let live = 1000u64;
        for i in 0..live {
            db.put(&i.to_be_bytes(), &[3u8; 100]).unwrap();
        }
        let filled = db.stats().pages_allocated;
        for i in live..40 * live {
            db.put(&i.to_be_bytes(), &[3u8; 100]).unwrap();
            assert!(db.delete(&(i - live).to_be_bytes()).unwrap());
        }
        let after = db.stats().pages_allocated;
        assert!(
            after <= 2 * filled + 4,
            "{kind:?}: {filled} pages after filling, {after} after churn"
        );
        let first = db.range(..).next().unwrap().unwrap().into_parts().0;
        assert_eq!(first, (39 * live).to_be_bytes());
        assert_eq!(db.range(..).count() as u64, live);
    }
}

/// Deleting every key, in one batch or one by one, leaves a tree whose
/// scans touch a page or two, and the freed pages are used again.
#[test]
fn deleting_everything_gives_the_pages_back() {
    for kind in kinds() {
        for batched in [false, true] {
            let db = open(kind, 32);
            let mut rng = SmallRng::seed_from_u64(3);
            let mut keys: Vec<[u8; 8]> = (0..5000u64)
                .map(|_| rng.gen::<u64>().to_be_bytes())
                .collect();
            for k in &keys {
                db.put(k, &[9u8; 120]).unwrap();
            }
            let full = db.stats().pages_allocated;
            let shape = db.shape().unwrap();
            assert_eq!(shape.keys, db.range(..).count() as u64);
            assert!(shape.height >= 2 && shape.leaf_pages > 100, "{shape:?}");
            assert_eq!(
                shape.leaf_pages + shape.internal_pages + shape.free_pages,
                full
            );
            assert!(shape.leaf_fill > 0.4 && shape.leaf_fill <= 1.0, "{shape:?}");
            keys.sort();
            keys.dedup();
            if batched {
                let mut b = WriteBatch::default();
                for k in &keys {
                    b.delete(k);
                }
                db.write(b).unwrap();
            } else {
                for k in &keys {
                    assert!(db.delete(k).unwrap());
                }
            }
            assert_eq!(db.range(..).count(), 0);
            let shape = db.shape().unwrap();
            assert_eq!(
                (shape.keys, shape.height, shape.leaf_pages),
                (0, 1, 1),
                "{kind:?}: {shape:?}"
            );
            assert_eq!(shape.pages, full, "{kind:?}: {shape:?}");
            assert!(
                shape.free_pages + 2 >= full,
                "{kind:?}: pages not on the free list: {shape:?}"
            );
            let before = db.stats().buffer;
            assert!(db.scan_dir(.., false, 1).unwrap().is_empty());
            let after = db.stats().buffer;
            let touched = after.hits + after.misses - before.hits - before.misses;
            assert!(
                touched <= 2,
                "{kind:?}: an empty scan touched {touched} pages"
            );
            for k in &keys {
                db.put(k, &[9u8; 120]).unwrap();
            }
            let again = db.stats().pages_allocated;
            assert!(
                again <= full + full / 10,
                "{kind:?}: {full} pages, {again} after refilling"
            );
        }
    }
}

/// Deleting most keys at random leaves few, reasonably full leaves:
/// underfull leaves merge with a sibling.
#[test]
fn underfull_leaves_merge() {
    for kind in kinds() {
        let db = open(kind, 64);
        let mut rng = SmallRng::seed_from_u64(11);
        let keys: Vec<u64> = (0..6000u64).collect();
        for k in &keys {
            db.put(&k.to_be_bytes(), &[1u8; 60]).unwrap();
        }
        let before = db.shape().unwrap();
        let mut live = std::collections::BTreeSet::new();
        for k in &keys {
            if rng.gen_ratio(1, 10) {
                live.insert(*k);
            } else {
                assert!(db.delete(&k.to_be_bytes()).unwrap());
            }
        }
        let after = db.shape().unwrap();
        assert_eq!(after.keys, live.len() as u64);
        assert!(
            after.leaf_fill >= 0.25,
            "{kind:?}: fill {:.3}, {after:?}",
            after.leaf_fill
        );
        assert!(
            after.leaf_pages * 4 <= before.leaf_pages,
            "{kind:?}: {before:?} -> {after:?}"
        );
        let got: Vec<u64> = db
            .range(..)
            .map(|r| u64::from_be_bytes(r.unwrap().key().try_into().unwrap()))
            .collect();
        assert!(
            got.into_iter().eq(live.into_iter()),
            "{kind:?}: contents differ after merges"
        );
    }
}

/// With every page resident (the shared, lock-light scan), ranges from
/// bounds that are keys of the store, cut by takes on both sides of the
/// chunk sizes (16, 32, 64, and a first chunk of the last take before),
/// give exactly the model's pairs.
#[test]
fn resident_ranges_and_takes_match_the_model() {
    for kind in kinds() {
        let db = open(kind, 4096);
        let mut model = BTreeMap::new();
        let mut rng = SmallRng::seed_from_u64(11);
        for _ in 0..1500 {
            let k = format!("r{:04}", rng.gen_range(0..1200)).into_bytes();
            let v = vec![rng.gen::<u8>(); rng.gen_range(0..120)];
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        // Nothing was evicted: every page is resident.
        assert_eq!(
            db.stats().buffer.clean_evictions + db.stats().buffer.dirty_evictions,
            0
        );
        for _ in 0..300 {
            let (lo, hi) = (bound(&mut rng), bound(&mut rng));
            let rev = rng.gen_bool(0.5);
            let take = [1, 9, 10, 11, 29, 30, 31, 71, 200][rng.gen_range(0..9)];
            let r = (as_ref(&lo), as_ref(&hi));
            if matches!(r, (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) if a > b)
            {
                continue;
            }
            let iter = if rev { db.range_rev(r) } else { db.range(r) };
            let got: Vec<(Vec<u8>, Vec<u8>)> = iter.take(take).map(|p| p.unwrap().into()).collect();
            let all = model
                .range::<[u8], _>(r)
                .map(|(k, v)| (k.clone(), v.clone()));
            let want: Vec<_> = match rev {
                false => all.take(take).collect(),
                true => all.rev().take(take).collect(),
            };
            assert_eq!(got, want, "{kind:?} {lo:?}..{hi:?} rev={rev} take={take}");
        }
    }
}
