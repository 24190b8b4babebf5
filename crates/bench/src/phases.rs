//! The seven phases of one run of one engine (and the parallel puts),
//! each timed with its latencies; every write phase ends with a close and
//! a reopen, counted with it.

use std::time::Instant;

use crate::engine::{Client, Engine, Pair, Result};
use crate::latency::Latency;
use crate::outcome::{merge_by_kind, run_clients, timed, Outcome, Ran};
use crate::session::{read_phase, write_phase, Session};
use crate::workload::{
    Key, Value, Workload, BATCH_LEN, KEY_LEN, RANGE_LEN, READ_THREADS, THREAD_PUTS, VALUE_LEN,
    WRITE_THREADS,
};

/// The phases, in the order they run, with their client threads.
pub const PHASES: [(&str, usize); 8] = [
    ("bulk-load", 1),
    ("put-durable", 1),
    ("batch-durable", 1),
    ("put-durable-4-threads", WRITE_THREADS),
    ("read", 1),
    ("range", 1),
    ("delete-half", 1),
    ("read-2-threads", READ_THREADS),
];

/// Runs every phase in order; after a failure the rest are skipped, as
/// they would measure a store in an unknown state.
pub fn run(session: &mut Session, w: &Workload, mut report: impl FnMut(&str, usize, Outcome)) {
    let mut failed = false;
    for (phase, threads) in PHASES {
        if failed {
            report(
                phase,
                threads,
                Outcome::Skipped("an earlier phase failed".into()),
            );
            continue;
        }
        let outcome = run_one(session, phase, w);
        failed = matches!(outcome, Outcome::Failed(_) | Outcome::Skipped(_));
        report(phase, threads, outcome);
    }
}

const PAIR: u64 = (KEY_LEN + VALUE_LEN) as u64;

type Timed = Result<(usize, f64, Vec<(&'static str, Latency)>)>;

fn run_one(s: &mut Session, phase: &str, w: &Workload) -> Outcome {
    let pairs = |n: usize| n as u64 * PAIR;
    let wrote = |bytes: u64, t: Timed| t.map(|(o, secs, l)| Ran::reads(o, secs, l).writes(bytes));
    let read = |t: Timed| t.map(|(o, secs, l)| Ran::reads(o, secs, l));
    match phase {
        "bulk-load" => write_phase(s, |e| {
            let batch = refs(&w.loaded);
            let t = one_op("batch", || e.write_batch(&batch)).map(|(_, t, l)| (batch.len(), t, l));
            wrote(pairs(w.loaded.len()), t)
        }),
        "put-durable" => write_phase(s, |e| {
            wrote(pairs(w.puts.len()), clients(e, 1, |_, c| puts(c, &w.puts)))
        }),
        "batch-durable" => write_phase(s, |e| wrote(pairs(w.batched.len()), batches(e, w))),
        "put-durable-4-threads" => write_phase(s, |e| {
            let t = clients(e, WRITE_THREADS, |t, c| {
                puts(c, &w.threaded[t * THREAD_PUTS..(t + 1) * THREAD_PUTS])
            });
            wrote(pairs(w.threaded.len()), t)
        }),
        "read" => read_phase(s, |e| read(clients(e, 1, |_, c| gets(c, &w.reads, w)))),
        "range" => read_phase(s, |e| read(clients(e, 1, |_, c| ranges(c, w)))),
        "delete-half" => write_phase(s, |e| {
            let keys: Vec<&[u8]> = w.deleted().iter().map(|(k, _)| &k[..]).collect();
            let t = one_op("batch", || e.delete_batch(&keys)).map(|(_, t, l)| (keys.len(), t, l));
            wrote((keys.len() * KEY_LEN) as u64, t)
        }),
        "read-2-threads" => read_phase(s, |e| {
            read(clients(e, READ_THREADS, |t, c| {
                gets(c, &w.parallel_reads[t], w)
            }))
        }),
        other => unreachable!("unknown phase {other}"),
    }
}

fn refs(pairs: &[(Key, Value)]) -> Vec<Pair<'_>> {
    pairs.iter().map(|(k, v)| (&k[..], &v[..])).collect()
}

/// One timed operation (a whole batch).
fn one_op(kind: &'static str, f: impl FnOnce() -> Result<()>) -> Timed {
    let mut lat = Latency::default();
    let start = Instant::now();
    timed(&mut lat, f)?;
    Ok((1, start.elapsed().as_secs_f64(), vec![(kind, lat)]))
}

/// `work` on `threads` client threads: operations, seconds, latencies.
fn clients(
    e: &dyn Engine,
    threads: usize,
    work: impl Fn(usize, &mut dyn Client) -> Result<(usize, Latency)> + Sync,
) -> Timed {
    let (per_thread, seconds) = run_clients(e, threads, |t, c| {
        let (n, lat) = work(t, c)?;
        Ok((n, vec![("op", lat)]))
    })?;
    let ops = per_thread.iter().map(|(n, _)| n).sum();
    let lats: Vec<_> = per_thread.into_iter().map(|(_, l)| l).collect();
    Ok((ops, seconds, merge_by_kind(&lats)))
}

fn batches(e: &mut dyn Engine, w: &Workload) -> Timed {
    let mut lat = Latency::default();
    let start = Instant::now();
    for chunk in w.batched.chunks(BATCH_LEN) {
        let batch = refs(chunk);
        timed(&mut lat, || e.write_batch(&batch))?;
    }
    Ok((
        w.batched.len(),
        start.elapsed().as_secs_f64(),
        vec![("batch", lat)],
    ))
}

/// Each pair written and synced on its own.
fn puts(c: &mut dyn Client, pairs: &[(Key, Value)]) -> Result<(usize, Latency)> {
    let mut lat = Latency::default();
    for (k, v) in pairs {
        timed(&mut lat, || c.put(k, v))?;
    }
    Ok((pairs.len(), lat))
}

/// Gets every key in `which`; each must be there with its whole value.
fn gets(c: &mut dyn Client, which: &[u32], w: &Workload) -> Result<(usize, Latency)> {
    let mut lat = Latency::default();
    for &i in which {
        match timed(&mut lat, || c.get(&w.loaded[i as usize].0))? {
            Some(VALUE_LEN) => {}
            other => {
                return Err(format!("key #{i}: expected {VALUE_LEN} bytes, got {other:?}").into())
            }
        }
    }
    Ok((which.len(), lat))
}

/// `RANGE_LEN` pairs from each start key; the start key itself is there,
/// so each range returns at least one pair.
fn ranges(c: &mut dyn Client, w: &Workload) -> Result<(usize, Latency)> {
    let mut lat = Latency::default();
    for &i in &w.range_starts {
        let n = timed(&mut lat, || c.range(&w.loaded[i as usize].0, RANGE_LEN))?;
        if !(1..=RANGE_LEN).contains(&n) {
            return Err(format!("range from key #{i} returned {n} pairs").into());
        }
    }
    Ok((w.range_starts.len(), lat))
}
