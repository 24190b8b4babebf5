//! One drive's run, from nothing back to nothing: build the cluster's
//! images, serve the drive and the WAL disk, copy the images on, mount,
//! start PostgreSQL, warm up, measure, checkpoint, and take it all down.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cluster::{self, Template};
use super::drive::{self, Server};
use super::host::Host;
use super::procs::{self, Interrupts, Stack};
use super::txlog::TxLog;
use super::Size;
use crate::lab::{LabError, LabOptions};

/// One drive's result (the JSON and CSV row).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub drive: String,
    /// As pgbench reports it (without the initial connection time).
    pub tps: f64,
    pub transactions: u64,
    pub run_s: f64,
    pub latency_avg_ms: f64,
    /// From pgbench's per-transaction log.
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    /// PostgreSQL's own counts over the run: blocks read (from the drive,
    /// through ext4) and found in shared_buffers.
    pub pg_blocks_read: u64,
    pub pg_blocks_hit: u64,
    /// The drive's requests over the run, from its server.
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub flushes: u64,
    pub trims: u64,
    pub errors: u64,
    /// Replies the server sent more than 1 ms after the model's completion.
    pub late_replies: u64,
    /// The model's service time per request over the run, µs.
    pub service_mean_us: f64,
    pub service_p50_us: f64,
    pub service_p99_us: f64,
    pub service_p999_us: f64,
    /// The WAL disk's requests over the run.
    pub wal_writes: u64,
    pub wal_write_bytes: u64,
    pub wal_flushes: u64,
    pub wal_service_mean_us: f64,
    /// A CHECKPOINT right after the run: the dirty buffers PostgreSQL still
    /// owed the drive (not timed in --quick).
    pub checkpoint_s: Option<f64>,
    /// The hybrid: read bytes served by its SSD over the run.
    pub hybrid_read_hit_ratio: Option<f64>,
    pub hybrid_ssd_write_bytes: Option<u64>,
    pub hybrid_hdd_write_bytes: Option<u64>,
    /// Written back to the HDD during the run.
    pub hybrid_written_back_bytes: Option<u64>,
    /// Still owed to the HDD when the run ended.
    pub hybrid_owed_bytes: Option<u64>,
    /// At the end (after the checkpoint): what it owed then, and the
    /// model's seconds to write it back.
    pub hybrid_drain_bytes: Option<u64>,
    pub hybrid_drain_s: Option<f64>,
}

fn u(v: &Value, path: &[&str]) -> u64 {
    path.iter().fold(v, |v, k| &v[k]).as_u64().unwrap_or(0)
}

fn fl(v: &Value, path: &[&str]) -> f64 {
    path.iter().fold(v, |v, k| &v[k]).as_f64().unwrap_or(0.0)
}

/// A fresh folder under the temporary directory the postgres user can
/// reach, removed when the stack drops.
fn work_dir(stack: &mut Stack) -> Result<PathBuf, LabError> {
    use std::os::unix::fs::PermissionsExt;
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("flashkv-pgbench-{}-{n}", std::process::id()));
    std::fs::create_dir(&d).map_err(|e| LabError::Run(format!("{}: {e}", d.display())))?;
    stack.dir(&d);
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| LabError::Run(format!("{}: {e}", d.display())))?;
    Ok(d)
}

/// The WAL disk: hdd-7200 with its write cache on, as the drive ships.
fn wal_spec(work: &Path) -> Result<PathBuf, LabError> {
    let mut spec = flashkv_device::presets::get("hdd-7200")?;
    let flashkv_device::ModelSpec::Hdd(p) = &mut spec.model else {
        return Err(LabError::Data("hdd-7200 is not an HDD".into()));
    };
    p.write_cache_entries = WAL_WRITE_CACHE;
    spec.name = "hdd-7200-wc".into();
    spec.description =
        format!("hdd-7200 with its write cache on ({WAL_WRITE_CACHE} entries), as the drive ships");
    let text = toml::to_string(&spec).map_err(|e| LabError::Data(e.to_string()))?;
    let path = work.join("wal-disk.toml");
    std::fs::write(&path, text).map_err(|e| LabError::Run(format!("{}: {e}", path.display())))?;
    Ok(path)
}

/// Write-back cache entries of the WAL disk: the HDD model's default.
pub const WAL_WRITE_CACHE: u32 = 16;

/// Measures `id` (served with `target`); its row and its transactions per
/// second, second by second.
pub fn drive(
    host: &Host,
    id: &str,
    target: &[&str],
    size: Size,
    opts: &LabOptions,
) -> Result<(Row, Vec<u64>), LabError> {
    let _catch = Interrupts::catch();
    let mut stack = Stack::default();
    let work = work_dir(&mut stack)?;
    opts.progress(&format!(
        "pgbench {id}: building the cluster (scale {})",
        size.scale
    ));
    let t = cluster::build(&mut stack, host, &work, size)?;
    let wal = wal_spec(&work)?;
    let wal_target = ["--spec", wal.to_str().unwrap_or_default()];
    let data = Server::start(
        &mut stack,
        host,
        target,
        &work.join("data.sock"),
        &work.join("data-serve.log"),
    )?;
    let log = Server::start(
        &mut stack,
        host,
        &wal_target,
        &work.join("wal.sock"),
        &work.join("wal-serve.log"),
    )?;
    opts.progress(&format!("pgbench {id}: copying the images onto the drives"));
    data.load(host, &t.data_img, &work.join("nbdcopy-data.log"))?;
    log.load(host, &t.wal_img, &work.join("nbdcopy-wal.log"))?;
    let dm = drive::mount(&mut stack, host, &data, &work.join("nbd-data"), &t.data_dir)?;
    let wm = drive::mount(&mut stack, host, &log, &work.join("nbd-wal"), &t.wal_dir)?;
    let uncached = drive::keep_uncached(&mut stack, &[&dm.file, &wm.file])?;
    let (row, per_second) = bench(&mut stack, host, &t, id, size, opts, [&data, &log])?;
    uncached.store(true, std::sync::atomic::Ordering::SeqCst);
    dm.unmount(&mut stack);
    wm.unmount(&mut stack);
    let last = data.finish(&mut stack)?;
    log.finish(&mut stack)?;
    let row = Row {
        hybrid_drain_bytes: last["drain"]["bytes"].as_u64(),
        hybrid_drain_s: last["drain"]["seconds"].as_f64(),
        ..row
    };
    drop(stack);
    procs::check()?;
    Ok((row, per_second))
}

/// PostgreSQL on the mounted drives: warm-up, the measured run, the
/// checkpoint; the row from pgbench's and the servers' counts.
fn bench(
    stack: &mut Stack,
    host: &Host,
    t: &Template,
    id: &str,
    size: Size,
    opts: &LabOptions,
    [data, log]: [&Server; 2],
) -> Result<(Row, Vec<u64>), LabError> {
    let pgdata = t.work.join("run-pgdata");
    let mut c = procs::command(Path::new("cp"));
    c.arg("-a").arg(&t.pgdata).arg(&pgdata);
    drive::run(c, "cp", &t.work.join("cp.log"))?;
    let pg = cluster::start(stack, host, t, &pgdata, &["autovacuum=off"])?;
    opts.progress(&format!("pgbench {id}: warming up for {} s", size.warmup_s));
    cluster::pgbench(host, t, size, size.warmup_s, None)?;
    let d0 = data.interval(stack)?;
    log.interval(stack)?;
    let before = pg_blocks(host, t)?;
    opts.progress(&format!(
        "pgbench {id}: {} clients for {} s",
        size.clients, size.run_s
    ));
    let logs = t.work.join("txlog");
    std::fs::create_dir(&logs).map_err(|e| LabError::Run(e.to_string()))?;
    let (s, _) = cluster::pgbench(host, t, size, size.run_s, Some(&logs))?;
    let d = data.interval(stack)?;
    let w = log.interval(stack)?;
    let after = pg_blocks(host, t)?;
    let checkpoint_s = if size.checkpoint {
        opts.progress(&format!("pgbench {id}: checkpoint"));
        let began = Instant::now();
        cluster::psql(host, t, "checkpoint")?;
        Some(began.elapsed().as_secs_f64())
    } else {
        None
    };
    procs::stop(
        stack.child(pg),
        libc::SIGQUIT,
        std::time::Duration::from_secs(30),
    );
    let tx = TxLog::read(&logs)?;
    let ms = |q: f64| tx.latency.quantile(q) as f64 / 1e6;
    let hy = hybrid(&d0, &d);
    let row = Row {
        drive: id.to_string(),
        tps: s.tps,
        transactions: s.transactions,
        run_s: size.run_s as f64,
        latency_avg_ms: s.latency_avg_ms,
        latency_p50_ms: ms(0.5),
        latency_p99_ms: ms(0.99),
        pg_blocks_read: after.0.saturating_sub(before.0),
        pg_blocks_hit: after.1.saturating_sub(before.1),
        reads: u(&d, &["reads"]),
        read_bytes: u(&d, &["read_bytes"]),
        writes: u(&d, &["writes"]),
        write_bytes: u(&d, &["write_bytes"]),
        flushes: u(&d, &["flushes"]),
        trims: u(&d, &["trims"]),
        errors: u(&d, &["errors"]) + u(&w, &["errors"]),
        late_replies: u(&d, &["late_replies"]),
        service_mean_us: fl(&d, &["latency_us", "mean"]),
        service_p50_us: fl(&d, &["latency_us", "p50"]),
        service_p99_us: fl(&d, &["latency_us", "p99"]),
        service_p999_us: fl(&d, &["latency_us", "p999"]),
        wal_writes: u(&w, &["writes"]),
        wal_write_bytes: u(&w, &["write_bytes"]),
        wal_flushes: u(&w, &["flushes"]),
        wal_service_mean_us: fl(&w, &["latency_us", "mean"]),
        checkpoint_s,
        hybrid_drain_bytes: None,
        hybrid_drain_s: None,
        ..hy
    };
    Ok((row, tx.per_second))
}

/// The hybrid's counters over the run (its reports count from the
/// server's start: the differences between the run's two), and what it
/// owed at the end.
fn hybrid(start: &Value, end: &Value) -> Row {
    let (a, b) = (&start["hybrid"], &end["hybrid"]);
    if b.is_null() {
        return Row::empty();
    }
    let delta = |k: &str| u(b, &[k]).saturating_sub(u(a, &[k]));
    let (hit, miss) = (delta("read_hit_bytes"), delta("read_miss_bytes"));
    Row {
        hybrid_read_hit_ratio: Some(if hit + miss == 0 {
            0.0
        } else {
            hit as f64 / (hit + miss) as f64
        }),
        hybrid_ssd_write_bytes: Some(delta("ssd_write_bytes")),
        hybrid_hdd_write_bytes: Some(delta("hdd_write_bytes")),
        hybrid_written_back_bytes: Some(delta("flush_bytes")),
        hybrid_owed_bytes: b["dirty_bytes"].as_u64(),
        ..Row::empty()
    }
}

impl Row {
    pub(super) fn empty() -> Row {
        Row {
            drive: String::new(),
            tps: 0.0,
            transactions: 0,
            run_s: 0.0,
            latency_avg_ms: 0.0,
            latency_p50_ms: 0.0,
            latency_p99_ms: 0.0,
            pg_blocks_read: 0,
            pg_blocks_hit: 0,
            reads: 0,
            read_bytes: 0,
            writes: 0,
            write_bytes: 0,
            flushes: 0,
            trims: 0,
            errors: 0,
            late_replies: 0,
            service_mean_us: 0.0,
            service_p50_us: 0.0,
            service_p99_us: 0.0,
            service_p999_us: 0.0,
            wal_writes: 0,
            wal_write_bytes: 0,
            wal_flushes: 0,
            wal_service_mean_us: 0.0,
            checkpoint_s: None,
            hybrid_read_hit_ratio: None,
            hybrid_ssd_write_bytes: None,
            hybrid_hdd_write_bytes: None,
            hybrid_written_back_bytes: None,
            hybrid_owed_bytes: None,
            hybrid_drain_bytes: None,
            hybrid_drain_s: None,
        }
    }
}

/// (blocks read, blocks hit) of the postgres database so far.
fn pg_blocks(host: &Host, t: &Template) -> Result<(u64, u64), LabError> {
    let sql = "select blks_read, blks_hit from pg_stat_database where datname = 'postgres'";
    let out = cluster::psql(host, t, sql)?;
    let mut it = out.trim().split('|').map(|v| v.trim().parse::<u64>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(r), Some(h)) => Ok((r, h)),
        _ => Err(LabError::Run(format!("pg_stat_database: {}", out.trim()))),
    }
}
