//! Property tests: the store behaves like a `BTreeMap` across puts, deletes,
//! batches, scans both ways (whole and through ranges), checkpoints and
//! reopens, for both page stores, several geometries and buffer sizes (1
//! frame included), and in place with memtables of several budgets.

use std::collections::BTreeMap;
use std::ops::Bound;

use flashkv_engine::{Db, IplGeometry, LabOptions, Options, StoreKind, WriteBatch};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Step {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Scan(Vec<u8>, Vec<u8>, bool, bool),
    /// `range(k..)` (or `range_rev(..=k)`) and `take(n)`.
    Range(Vec<u8>, bool, usize),
    Reopen(bool),
    Checkpoint,
    Auto(Vec<u8>),
}

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(0u8..6, 0..4),
        1 => (0u8..6, 200usize..1025).prop_map(|(b, n)| vec![b; n]),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => proptest::collection::vec(any::<u8>(), 0..120),
        2 => (any::<u8>(), 500usize..2000).prop_map(|(b, n)| vec![b; n]),
        1 => (any::<u8>(), 5000usize..20000).prop_map(|(b, n)| vec![b; n]),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (key(), value()).prop_map(|(k, v)| Step::Put(k, v)),
        4 => key().prop_map(Step::Delete),
        3 => proptest::collection::vec((key(), proptest::option::of(value())), 0..12).prop_map(Step::Batch),
        2 => (key(), key(), any::<bool>(), any::<bool>()).prop_map(|(a, b, r, i)| Step::Scan(a, b, r, i)),
        2 => (key(), any::<bool>(), 0usize..40).prop_map(|(k, r, n)| Step::Range(k, r, n)),
        1 => any::<bool>().prop_map(Step::Reopen),
        1 => Just(Step::Checkpoint),
        1 => value().prop_map(Step::Auto),
    ]
}

/// A store kind, its buffer pool's frames, whether the index stays in
/// memory, and its memtable's budget.
type Config = (StoreKind, usize, bool, usize);

fn configs() -> Vec<Config> {
    let kinds = [
        StoreKind::InPlace,
        StoreKind::InPageLogging(IplGeometry::seed()),
        StoreKind::InPageLogging(IplGeometry::shared()),
        StoreKind::InPageLogging(IplGeometry::custom(4096, 8, 3)),
    ];
    let mut v = Vec::new();
    for k in kinds {
        for (frames, index) in [(1, false), (1, true), (3, false), (64, false)] {
            v.push((k, frames, index, 0));
        }
    }
    // Budgets from one that drains at almost every batch to one that
    // never does.
    for (frames, memtable) in [(1, 256), (3, 4096), (64, 64 << 10), (3, 16 << 20)] {
        v.push((StoreKind::InPlace, frames, false, memtable));
    }
    v
}

fn run((kind, frames, index, memtable): Config, steps: &[Step]) -> Result<(), TestCaseError> {
    // Reopening names no store: the store's own is taken.
    let reopen = Options::builder()
        .buffer_pages(frames)
        .lab(LabOptions {
            index_in_memory: index,
            ..LabOptions::default()
        })
        .max_size(48 << 20)
        .memtable(memtable)
        .wal_size(2 << 20);
    let opts = reopen.clone().store(kind).build().unwrap();
    let reopen = reopen.build().unwrap();
    let mut db = Db::open(
        Box::new(flashkv_device::presets::open("dram-ssd").unwrap()),
        opts.clone(),
    )
    .unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut next_auto = 0u64;
    for s in steps {
        match s {
            Step::Put(k, v) => {
                db.put(k, v).unwrap();
                model.insert(k.clone(), v.clone());
            }
            Step::Delete(k) => {
                prop_assert_eq!(db.delete(k).unwrap(), model.remove(k).is_some());
            }
            Step::Batch(ops) => {
                let mut b = WriteBatch::default();
                for (k, v) in ops {
                    match v {
                        Some(v) => {
                            b.put(k, v);
                            model.insert(k.clone(), v.clone());
                        }
                        None => {
                            b.delete(k);
                            model.remove(k);
                        }
                    }
                }
                db.write(b).unwrap();
            }
            Step::Scan(a, b, rev, incl) => {
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let hib = if *incl {
                    Bound::Included(&hi[..])
                } else {
                    Bound::Excluded(&hi[..])
                };
                let range = (Bound::Included(&lo[..]), hib);
                let mut want: Vec<(Vec<u8>, Vec<u8>)> = model
                    .range::<[u8], _>(range)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let got = if *rev {
                    want.reverse();
                    db.scan_rev::<(Bound<&[u8]>, Bound<&[u8]>)>(range).unwrap()
                } else {
                    db.scan::<(Bound<&[u8]>, Bound<&[u8]>)>(range).unwrap()
                };
                prop_assert_eq!(got, want);
            }
            Step::Range(k, rev, n) => {
                let got: Vec<(Vec<u8>, Vec<u8>)> = match rev {
                    false => db.range::<(Bound<&[u8]>, Bound<&[u8]>)>((
                        Bound::Included(k),
                        Bound::Unbounded,
                    )),
                    true => db.range_rev::<(Bound<&[u8]>, Bound<&[u8]>)>((
                        Bound::Unbounded,
                        Bound::Included(k),
                    )),
                }
                .take(*n)
                .map(|p| p.unwrap().into_parts())
                .collect();
                let want: Vec<(Vec<u8>, Vec<u8>)> = match rev {
                    false => model
                        .range::<[u8], _>((Bound::Included(&k[..]), Bound::Unbounded))
                        .take(*n)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    true => model
                        .range::<[u8], _>((Bound::Unbounded, Bound::Included(&k[..])))
                        .rev()
                        .take(*n)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                };
                prop_assert_eq!(got, want);
            }
            Step::Checkpoint => db.checkpoint().unwrap(),
            Step::Reopen(clean) => {
                let dev = if *clean {
                    db.close().unwrap()
                } else {
                    db.into_device()
                };
                db = Db::open(dev, reopen.clone()).unwrap();
                prop_assert_eq!(db.store_kind(), kind);
            }
            Step::Auto(v) => {
                let k = db.insert_auto(v).unwrap();
                prop_assert_eq!(k, next_auto);
                next_auto += 1;
                model.insert(k.to_be_bytes().to_vec(), v.clone());
            }
        }
    }
    for (k, v) in &model {
        prop_assert_eq!(db.get(k).unwrap(), Some(v.clone()));
    }
    let all: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    prop_assert_eq!(db.scan(..).unwrap(), all.clone());
    let mut rev = all;
    rev.reverse();
    prop_assert_eq!(db.scan_rev(..).unwrap(), rev);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn matches_btreemap(cfg in 0usize..20, steps in proptest::collection::vec(step(), 1..120)) {
        run(configs()[cfg], &steps)?;
    }
}

#[test]
fn many_keys_every_config() {
    for config in configs() {
        let steps: Vec<Step> = (0..1500u32)
            .map(|i| {
                let k = (i.wrapping_mul(2654435761) % 5000).to_be_bytes().to_vec();
                if i % 7 == 3 {
                    Step::Delete(k)
                } else if i % 500 == 499 {
                    Step::Reopen(i % 1000 == 499)
                } else {
                    Step::Put(k, vec![i as u8; (i % 300) as usize])
                }
            })
            .collect();
        run(config, &steps).unwrap();
    }
}
