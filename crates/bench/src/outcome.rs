//! What one phase or workload measured, and the timing of client threads.

use std::sync::Barrier;
use std::time::Instant;

use crate::engine::{Client, Engine, Result};
use crate::latency::Latency;
use crate::measure::written_bytes;

/// Bytes written by the close (and the reopen that follows it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Closed {
    pub bytes: u64,
    pub seconds: f64,
}

/// A phase that ran to the end.
#[derive(Clone)]
pub struct Measured {
    pub ops: usize,
    pub seconds: f64,
    /// Write phases: device bytes the process wrote meanwhile, and the
    /// user bytes (keys and values) the phase asked to write.
    pub written: Option<(u64, u64)>,
    /// Write phases: what closing the engine after the phase wrote.
    pub closed: Option<Closed>,
    /// Latencies by operation type.
    pub latency: Vec<(&'static str, Latency)>,
}

#[derive(Clone)]
pub enum Outcome {
    Done(Measured),
    Failed(String),
    Skipped(String),
}

/// Runs `f`, which returns its operation count and latencies; counts the
/// device bytes written meanwhile when `user_bytes` says it writes. An
/// error or a panic fails the phase.
pub fn measure(
    user_bytes: Option<u64>,
    f: impl FnOnce() -> Result<(usize, f64, Vec<(&'static str, Latency)>)>,
) -> Outcome {
    let before = written_bytes();
    let (ops, seconds, latency) = match caught(f) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e),
    };
    let written = match (user_bytes, before, written_bytes()) {
        (Some(user), Ok(b), Ok(a)) => Some((a.saturating_sub(b), user)),
        (Some(_), Err(e), _) | (Some(_), _, Err(e)) => return Outcome::Failed(e.to_string()),
        (None, ..) => None,
    };
    Outcome::Done(Measured {
        ops,
        seconds,
        written,
        closed: None,
        latency,
    })
}

/// `f`'s result, with an error or a panic as a message.
pub fn caught<T>(f: impl FnOnce() -> Result<T>) -> std::result::Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(p) => Err(format!("panicked: {}", panic_message(&p))),
    }
}

pub fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Times one operation into `lat`.
pub fn timed<T>(lat: &mut Latency, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let start = Instant::now();
    let r = f()?;
    lat.record(start.elapsed().as_nanos() as u64);
    Ok(r)
}

/// Runs `work(thread, client)` on `threads` threads, each with its own
/// client made here, all released together; returns their results and the
/// seconds from the first thread's start to the last one's end (each
/// thread reads the clock itself: the caller may not be scheduled while
/// they run).
pub fn run_clients<T: Send>(
    engine: &dyn Engine,
    threads: usize,
    work: impl Fn(usize, &mut dyn Client) -> Result<T> + Sync,
) -> Result<(Vec<T>, f64)> {
    let clients = (0..threads)
        .map(|_| engine.client())
        .collect::<Result<Vec<_>>>()?;
    let start = Barrier::new(threads);
    let joined: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                let (start, work) = (&start, &work);
                s.spawn(move || {
                    start.wait();
                    let t0 = Instant::now();
                    let r = work(i, c.as_mut());
                    (t0, Instant::now(), r)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut out = Vec::with_capacity(threads);
    let (mut first, mut last) = (None::<Instant>, None::<Instant>);
    for j in joined {
        let (t0, t1, r) = match j {
            Ok(x) => x,
            Err(p) => return Err(format!("a client thread panicked: {}", panic_message(&p)).into()),
        };
        out.push(r?);
        first = Some(first.map_or(t0, |f| f.min(t0)));
        last = Some(last.map_or(t1, |l| l.max(t1)));
    }
    let seconds = match (first, last) {
        (Some(f), Some(l)) => l.duration_since(f).as_secs_f64(),
        _ => 0.0,
    };
    Ok((out, seconds))
}

/// Merges per-thread latencies kept by operation type.
pub fn merge_by_kind(per_thread: &[Vec<(&'static str, Latency)>]) -> Vec<(&'static str, Latency)> {
    let mut out: Vec<(&'static str, Latency)> = Vec::new();
    for (name, l) in per_thread.iter().flatten() {
        match out.iter_mut().find(|(n, _)| n == name) {
            Some((_, acc)) => acc.merge(l),
            None => out.push((name, l.clone())),
        }
    }
    out
}
