//! A YCSB run on one engine: the load phase (in durable batches), then
//! each workload at each thread count on the loaded store; every update,
//! insert and read-modify-write is its own durable commit.

use std::time::{Duration, Instant};

use rand::{rngs::SmallRng, RngCore, SeedableRng};

use super::gen::key_name;
use super::mix::{by_letter, Kind, Place, Stream, Workload};
use crate::engine::{Client, Engine, Pair, Result};
use crate::latency::Latency;
use crate::outcome::{merge_by_kind, run_clients, timed, Outcome, Ran};
use crate::session::{read_phase, write_phase, Session};

/// Records per load batch: one durable commit each (YCSB inserts one at a
/// time; batches keep the load of every engine within the time budget).
pub const LOAD_BATCH: u64 = 1000;

/// What one YCSB run does.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Config {
    pub records: u64,
    /// Operations per workload and thread count, split over the threads.
    pub ops: u64,
    pub value_size: usize,
    pub threads: Vec<usize>,
    /// Workload letters, in the order they run.
    pub workloads: Vec<char>,
    pub seed: u64,
    /// A workload stops here if its operations are not done (as YCSB's
    /// `maxexecutiontime`): the rows say so.
    pub max_seconds: f64,
    /// The load stops here; the workloads then run on what it loaded.
    pub load_seconds: f64,
}

/// The load, then `after_load` (which may close and reopen the engine),
/// then every workload at every thread count, each reported as it ends
/// (`phase` is "load" or the workload's letter).
pub fn run(
    session: &mut Session,
    cfg: &Config,
    after_load: impl FnOnce(&mut Session) -> std::result::Result<(), String>,
    mut report: impl FnMut(&str, usize, Outcome),
) {
    let load = write_phase(session, |e| load(e, cfg));
    let mut records = match &load {
        Outcome::Done(m) => m.ops as u64,
        _ => 0,
    };
    report("load", 1, load);
    if records > 0 {
        if let Err(e) = after_load(session) {
            report("memory-limit", 1, Outcome::Failed(e));
            records = 0;
        }
    }
    // The next insert's key number: each inserting run reserves its keys
    // past every record the load was to write.
    let mut insert_base = cfg.records;
    for &threads in &cfg.threads {
        for &letter in &cfg.workloads {
            let w = by_letter(letter).expect("workload letters are checked when parsed");
            let name = letter.to_ascii_uppercase().to_string();
            if records == 0 {
                report(
                    &name,
                    threads,
                    Outcome::Skipped("nothing was loaded".into()),
                );
                continue;
            }
            let places = places(cfg, records, threads, insert_base);
            insert_base += places[0].stride * threads as u64;
            let outcome = if w.writes() {
                write_phase(session, |e| workload(e, w, &places, cfg))
            } else {
                read_phase(session, |e| workload(e, w, &places, cfg))
            };
            report(&name, threads, outcome);
        }
    }
}

/// Each thread's place: `ops` split as evenly as they go, every thread
/// reserving the largest share of insert keys.
fn places(cfg: &Config, records: u64, threads: usize, insert_base: u64) -> Vec<Place> {
    let stride = cfg.ops.div_ceil(threads as u64);
    (0..threads)
        .map(|t| {
            let share = cfg.ops / threads as u64 + u64::from((t as u64) < cfg.ops % threads as u64);
            Place {
                seed: cfg.seed,
                thread: t,
                threads,
                records,
                insert_base,
                ops: share,
                stride,
            }
        })
        .collect()
}

/// Values of record bytes drawn from `rng`.
fn fill(rng: &mut SmallRng, value: &mut [u8]) {
    rng.fill_bytes(value);
}

/// Why a phase stopped at its time limit.
fn stopped_note(done: u64, of: u64, limit: f64) -> Option<String> {
    (done < of).then(|| format!("stopped at its {limit} s limit after {done} of {of} operations"))
}

/// Records `0..records` in batches of `LOAD_BATCH`, each a durable commit,
/// until the load's time limit.
fn load(e: &mut dyn Engine, cfg: &Config) -> Result<Ran> {
    let mut rng = SmallRng::seed_from_u64(cfg.seed);
    let mut lat = Latency::default();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(cfg.load_seconds);
    let (mut first, mut user) = (0, 0);
    while first < cfg.records && Instant::now() < deadline {
        let end = (first + LOAD_BATCH).min(cfg.records);
        let keys: Vec<Vec<u8>> = (first..end)
            .map(|k| {
                let mut key = Vec::new();
                key_name(k, &mut key);
                key
            })
            .collect();
        let mut values = vec![0u8; keys.len() * cfg.value_size];
        fill(&mut rng, &mut values);
        let batch: Vec<Pair<'_>> = keys
            .iter()
            .zip(values.chunks(cfg.value_size))
            .map(|(k, v)| (&k[..], v))
            .collect();
        timed(&mut lat, || e.write_batch(&batch))?;
        user += batch
            .iter()
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum::<u64>();
        first = end;
    }
    let mut ran = Ran::reads(
        first as usize,
        start.elapsed().as_secs_f64(),
        vec![("batch", lat)],
    );
    ran.stopped = stopped_note(first, cfg.records, cfg.load_seconds)
        .map(|s| s.replace("operations", "records"));
    Ok(ran.writes(user))
}

/// One workload on one thread per place, until its time limit.
fn workload(e: &dyn Engine, w: &'static Workload, places: &[Place], cfg: &Config) -> Result<Ran> {
    let deadline = Instant::now() + Duration::from_secs_f64(cfg.max_seconds);
    let (per_thread, seconds) = run_clients(e, places.len(), |t, c| {
        client(c, Stream::new(w, places[t]), places[t], cfg, deadline)
    })?;
    let ops: usize = per_thread.iter().map(|d| d.ops).sum();
    let user = per_thread.iter().map(|d| d.user_bytes).sum();
    let lats: Vec<_> = per_thread.into_iter().map(|d| d.latency).collect();
    let mut ran = Ran::reads(ops, seconds, merge_by_kind(&lats));
    ran.stopped = stopped_note(ops as u64, cfg.ops, cfg.max_seconds);
    Ok(if w.writes() { ran.writes(user) } else { ran })
}

/// What one client thread did.
struct Done {
    ops: usize,
    user_bytes: u64,
    latency: Vec<(&'static str, Latency)>,
}

/// One client thread's operations, each timed by its type, until the
/// deadline; every read must find its record whole and every scan its
/// first key.
fn client(
    c: &mut dyn Client,
    stream: Stream,
    p: Place,
    cfg: &Config,
    deadline: Instant,
) -> Result<Done> {
    let mut lat: [Latency; 5] = Default::default();
    let mut rng = SmallRng::seed_from_u64(cfg.seed ^ (p.insert_base << 8) ^ p.thread as u64);
    let (mut key, mut value) = (Vec::with_capacity(32), vec![0u8; cfg.value_size]);
    let (mut ops, mut user) = (0, 0);
    let whole = |got: Option<usize>, key: &[u8]| match got {
        Some(n) if n == cfg.value_size => Ok(()),
        other => Err(format!(
            "{}: expected {} bytes, got {other:?}",
            String::from_utf8_lossy(key),
            cfg.value_size
        )),
    };
    for op in stream {
        if Instant::now() >= deadline {
            break;
        }
        key_name(op.keynum, &mut key);
        let l = &mut lat[op.kind.index()];
        match op.kind {
            Kind::Read => whole(timed(l, || c.get(&key))?, &key)?,
            Kind::Update | Kind::Insert => {
                fill(&mut rng, &mut value);
                timed(l, || c.put(&key, &value))?;
                user += (key.len() + value.len()) as u64;
            }
            Kind::Scan => {
                let n = timed(l, || c.range(&key, op.scan_len))?;
                if !(1..=op.scan_len).contains(&n) {
                    return Err(format!("scan of {} returned {n} pairs", op.scan_len).into());
                }
            }
            Kind::Rmw => {
                fill(&mut rng, &mut value);
                let got = timed(l, || {
                    let got = c.get(&key)?;
                    c.put(&key, &value)?;
                    Ok(got)
                })?;
                whole(got, &key)?;
                user += (key.len() + value.len()) as u64;
            }
        }
        ops += 1;
    }
    let latency = Kind::ALL
        .iter()
        .zip(lat)
        .filter(|(_, l)| l.count() > 0)
        .map(|(k, l)| (k.name(), l))
        .collect();
    Ok(Done {
        ops,
        user_bytes: user,
        latency,
    })
}
