//! The phases of one run of one engine, each timed, with the bytes the
//! process wrote meanwhile.

use std::time::Instant;

use crate::engine::{Engine, Reader, Result, Writer};
use crate::measure::written_bytes;
use crate::workload::{
    Key, Workload, BATCH_LEN, KEY_LEN, RANGE_LEN, THREAD_PUTS, VALUE_LEN, WRITE_THREADS,
};

/// The phases, in the order they run.
pub const PHASES: [&str; 8] = [
    "bulk-load",
    "put-durable",
    "batch-durable",
    "put-durable-4-threads",
    "read",
    "range",
    "delete-half",
    "read-2-threads",
];

/// What one phase measured.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done {
        ops: usize,
        seconds: f64,
        /// Device bytes written ÷ user bytes written; `None` for reads.
        wa: Option<f64>,
    },
    Failed(String),
    Skipped(String),
}

/// Runs every phase on `engine` in order; after a failure the rest are
/// skipped, as they would measure a store in an unknown state.
pub fn run(engine: &mut dyn Engine, w: &Workload, mut report: impl FnMut(&str, Outcome)) {
    let mut failed = false;
    for phase in PHASES {
        if failed {
            report(phase, Outcome::Skipped("an earlier phase failed".into()));
            continue;
        }
        let outcome = match phase {
            "read-2-threads" => match (engine.reader(), engine.reader()) {
                (Ok(a), Ok(b)) => timed(None, || two_threads(a, b, w)),
                (Err(e), _) | (_, Err(e)) => Outcome::Skipped(format!("no shared reader: {e}")),
            },
            "put-durable-4-threads" => {
                match (0..WRITE_THREADS).map(|_| engine.writer()).collect() {
                    Ok(ws) => timed(Some(w.threaded.len() * PAIR), || parallel_puts(ws, w)),
                    Err(e) => Outcome::Skipped(format!("no shared writer: {e}")),
                }
            }
            _ => run_one(engine, phase, w),
        };
        failed = matches!(outcome, Outcome::Failed(_));
        report(phase, outcome);
    }
}

const PAIR: usize = KEY_LEN + VALUE_LEN;

fn run_one(engine: &mut dyn Engine, phase: &str, w: &Workload) -> Outcome {
    match phase {
        "bulk-load" => timed(Some(w.loaded.len() * PAIR), || {
            engine.write_batch(&w.loaded).map(|()| w.loaded.len())
        }),
        "put-durable" => timed(Some(w.puts.len() * PAIR), || {
            w.puts.iter().try_for_each(|(k, v)| engine.put(k, v))?;
            Ok(w.puts.len())
        }),
        "batch-durable" => timed(Some(w.batched.len() * PAIR), || {
            for chunk in w.batched.chunks(BATCH_LEN) {
                engine.write_batch(chunk)?;
            }
            Ok(w.batched.len())
        }),
        "read" => match engine.reader() {
            Ok(r) => timed(None, || point_reads(r, &w.reads, w)),
            Err(e) => Outcome::Failed(e.to_string()),
        },
        "range" => match engine.reader() {
            Ok(r) => timed(None, || ranges(r, w)),
            Err(e) => Outcome::Failed(e.to_string()),
        },
        "delete-half" => {
            let gone = w.deleted();
            timed(Some(gone.len() * KEY_LEN), || {
                engine.delete_batch(gone).map(|()| gone.len())
            })
        }
        other => unreachable!("unknown phase {other}"),
    }
}

/// Times `f` (which returns its operation count) and the device bytes it
/// caused; `user_bytes` is what the phase asked to write.
fn timed(user_bytes: Option<usize>, f: impl FnOnce() -> Result<usize>) -> Outcome {
    let before = written_bytes();
    let start = Instant::now();
    // An engine that panics fails its phase; the run goes on with the next engine.
    let ops = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(ops)) => ops,
        Ok(Err(e)) => return Outcome::Failed(e.to_string()),
        Err(p) => return Outcome::Failed(format!("panicked: {}", panic_message(&p))),
    };
    let seconds = start.elapsed().as_secs_f64();
    let wa = match (user_bytes, before, written_bytes()) {
        (Some(user), Ok(b), Ok(a)) => Some(a.saturating_sub(b) as f64 / user as f64),
        (Some(_), Err(e), _) | (Some(_), _, Err(e)) => return Outcome::Failed(e.to_string()),
        (None, ..) => None,
    };
    Outcome::Done { ops, seconds, wa }
}

fn key(w: &Workload, i: u32) -> &Key {
    &w.loaded[i as usize].0
}

/// Gets every key in `which`; each must be there with its whole value.
fn point_reads(mut r: Box<dyn Reader + '_>, which: &[u32], w: &Workload) -> Result<usize> {
    for &i in which {
        match r.get(key(w, i))? {
            Some(VALUE_LEN) => {}
            other => {
                return Err(format!("key #{i}: expected {VALUE_LEN} bytes, got {other:?}").into())
            }
        }
    }
    Ok(which.len())
}

/// `RANGE_LEN` pairs from each start key; the start key itself is there,
/// so each range returns at least one pair.
fn ranges(mut r: Box<dyn Reader + '_>, w: &Workload) -> Result<usize> {
    for &i in &w.range_starts {
        let n = r.range(key(w, i), RANGE_LEN)?;
        if !(1..=RANGE_LEN).contains(&n) {
            return Err(format!("range from key #{i} returned {n} pairs").into());
        }
    }
    Ok(w.range_starts.len())
}

/// Each thread reads its own list of surviving keys with its own reader.
fn two_threads(a: Box<dyn Reader + '_>, b: Box<dyn Reader + '_>, w: &Workload) -> Result<usize> {
    let [ra, rb] = [&w.parallel_reads[0], &w.parallel_reads[1]];
    std::thread::scope(|s| {
        let ta = s.spawn(|| point_reads(a, ra, w));
        let tb = s.spawn(|| point_reads(b, rb, w));
        let (na, nb) = (join(ta)?, join(tb)?);
        Ok(na + nb)
    })
}

/// Each thread makes its own `THREAD_PUTS` pairs durable one at a time.
fn parallel_puts(writers: Vec<Box<dyn Writer + '_>>, w: &Workload) -> Result<usize> {
    std::thread::scope(|s| {
        let threads: Vec<_> = writers
            .into_iter()
            .zip(w.threaded.chunks(THREAD_PUTS))
            .map(|(mut wr, pairs)| {
                s.spawn(move || {
                    pairs.iter().try_for_each(|(k, v)| wr.put(k, v))?;
                    Ok(pairs.len())
                })
            })
            .collect();
        threads.into_iter().map(join).sum()
    })
}

fn join(h: std::thread::ScopedJoinHandle<'_, Result<usize>>) -> Result<usize> {
    h.join().map_err(|_| "a reader thread panicked")?
}

pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}
