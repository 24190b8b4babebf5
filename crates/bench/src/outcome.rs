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

/// What a phase's operations did: the caller of [`measure`] returns it.
pub struct Ran {
    pub ops: usize,
    pub seconds: f64,
    /// Latencies by operation type.
    pub latency: Vec<(&'static str, Latency)>,
    /// Key and value bytes the operations wrote (key bytes for deletes);
    /// `None` for a phase that only reads.
    pub user_bytes: Option<u64>,
    /// Why the phase stopped before all its operations (a time limit).
    pub stopped: Option<String>,
}

impl Ran {
    /// Operations of one type that all read.
    pub fn reads(ops: usize, seconds: f64, latency: Vec<(&'static str, Latency)>) -> Ran {
        Ran {
            ops,
            seconds,
            latency,
            user_bytes: None,
            stopped: None,
        }
    }

    /// Operations that wrote `user_bytes`.
    pub fn writes(self, user_bytes: u64) -> Ran {
        Ran {
            user_bytes: Some(user_bytes),
            ..self
        }
    }
}

/// A phase that ran (to the end, or to its time limit).
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
    pub stopped: Option<String>,
}

#[derive(Clone)]
pub enum Outcome {
    Done(Measured),
    Failed(String),
    Skipped(String),
}

/// Runs `f` and counts the device bytes written meanwhile (for the phase's
/// WA when it wrote). An error or a panic fails the phase.
pub fn measure(f: impl FnOnce() -> Result<Ran>) -> Outcome {
    let before = written_bytes();
    let ran = match caught(f) {
        Ok(r) => r,
        Err(e) => return Outcome::Failed(e),
    };
    let written = match (ran.user_bytes, before, written_bytes()) {
        (Some(user), Ok(b), Ok(a)) => Some((a.saturating_sub(b), user)),
        (Some(_), Err(e), _) | (Some(_), _, Err(e)) => return Outcome::Failed(e.to_string()),
        (None, ..) => None,
    };
    Outcome::Done(Measured {
        ops: ran.ops,
        seconds: ran.seconds,
        written,
        closed: None,
        latency: ran.latency,
        stopped: ran.stopped,
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
