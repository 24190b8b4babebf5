//! Workloads and the reference model shared by the crash tests.

use std::collections::BTreeMap;

use flashkv_device::DeviceError;
use flashkv_engine::{Db, Error, WriteBatch};
use rand::rngs::SmallRng;
use rand::Rng;

#[derive(Clone, Debug)]
pub enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
    Flush,
}

/// `n` operations on `keys` distinct keys.
pub fn workload(rng: &mut SmallRng, n: usize, keys: u32) -> Vec<Op> {
    let key = |rng: &mut SmallRng| format!("k{:05}", rng.gen_range(0..keys)).into_bytes();
    let val = |rng: &mut SmallRng| {
        let len = if rng.gen_bool(0.05) {
            rng.gen_range(2000..9000)
        } else {
            rng.gen_range(0..200)
        };
        vec![rng.gen::<u8>(); len]
    };
    (0..n)
        .map(|_| match rng.gen_range(0..100) {
            0..=64 => Op::Put(key(rng), val(rng)),
            65..=79 => Op::Delete(key(rng)),
            80..=93 => Op::Batch(
                (0..rng.gen_range(2..7))
                    .map(|_| (key(rng), rng.gen_bool(0.7).then(|| val(rng))))
                    .collect(),
            ),
            _ => Op::Flush,
        })
        .collect()
}

/// `n` operations on `keys` keys, among them batches of up to `big` pairs
/// (larger than a small log's half).
pub fn workload_big(rng: &mut SmallRng, n: usize, keys: u32, big: usize) -> Vec<Op> {
    let mut ops = workload(rng, n, keys);
    for op in ops.iter_mut() {
        if !rng.gen_bool(0.2) {
            continue;
        }
        *op = Op::Batch(
            (0..rng.gen_range(big / 4..=big))
                .map(|_| {
                    let k = format!("k{:05}", rng.gen_range(0..keys)).into_bytes();
                    let len = rng.gen_range(50..800);
                    (k, rng.gen_bool(0.9).then(|| vec![rng.gen::<u8>(); len]))
                })
                .collect(),
        );
    }
    ops
}

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Applies `op` to the store and to `next`, the model of what it then holds.
pub fn apply(db: &Db, op: &Op, next: &mut Model) -> flashkv_engine::Result<()> {
    match op {
        Op::Put(k, v) => {
            next.insert(k.clone(), v.clone());
            db.put(k, v)
        }
        Op::Delete(k) => {
            next.remove(k);
            db.delete(k).map(drop)
        }
        Op::Batch(b) => {
            let mut wb = WriteBatch::default();
            for (k, v) in b {
                match v {
                    Some(v) => {
                        wb.put(k, v);
                        next.insert(k.clone(), v.clone());
                    }
                    None => {
                        wb.delete(k);
                        next.remove(k);
                    }
                }
            }
            db.write(wb)
        }
        Op::Flush => db.flush(),
    }
}

/// Runs `ops`; returns the model after each acknowledged op and the index of
/// the last state known durable.
pub fn run(db: &Db, ops: &[Op], sync: bool) -> (Vec<Model>, usize, bool) {
    run_from(db, ops, sync, Model::new())
}

/// [`run`] on a store that holds `m` already. Each op is applied to a copy
/// of the last state, the one copy an op needs: the copy is the next state
/// if the op is acknowledged, or may be if power failed inside it.
pub fn run_from(db: &Db, ops: &[Op], sync: bool, m: Model) -> (Vec<Model>, usize, bool) {
    let crashed = |e: &Error| matches!(e, Error::Device(DeviceError::Crashed) | Error::Poisoned);
    run_until(db, ops, sync, m, crashed)
}

/// [`run_from`] where `crashed` tells the errors of a lost power supply
/// (any other error fails the test).
pub fn run_until(
    db: &Db,
    ops: &[Op],
    sync: bool,
    m: Model,
    crashed: impl Fn(&Error) -> bool,
) -> (Vec<Model>, usize, bool) {
    let mut states = vec![m];
    let mut durable = 0;
    for op in ops {
        let mut next = states.last().expect("the first state").clone();
        let r = apply(db, op, &mut next);
        let changes = !matches!(op, Op::Flush);
        match r {
            Ok(()) if changes => {
                states.push(next);
                if sync {
                    durable = states.len() - 1;
                }
            }
            Ok(()) => durable = states.len() - 1,
            Err(e) if crashed(&e) => {
                // The op in flight may or may not have committed.
                if changes {
                    states.push(next);
                }
                return (states, durable, true);
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    (states, durable, false)
}
