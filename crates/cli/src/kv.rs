//! `flashkv kv`: poke at a key-value store from the shell.
//!
//! Without `--device` the store lives in the file at `--db` (a real file
//! device). With `--device PRESET` it runs on that simulated device, whose
//! data is kept in the file at `--db` (the file is the device's backing
//! store, so the store survives between invocations; the simulated device's
//! wear and programmed-sector state start afresh each time, so its counters
//! cover one invocation).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use flashkv_device::{presets, DataStore, SimDevice};
use flashkv_engine::{Db, Error, IplGeometry, Options, StoreKind};

#[derive(Args)]
pub struct KvArgs {
    /// File holding the store (or the simulated device's data with --device).
    #[arg(long)]
    db: PathBuf,
    /// Create the store if --db is missing or empty (never otherwise: an
    /// existing file that is not a store is refused and left untouched).
    #[arg(long)]
    create: bool,
    /// Seconds to wait for another process that has the store open.
    #[arg(long, default_value_t = 10.0)]
    wait: f64,
    /// Run on a simulated device preset (see `flashkv devices`).
    #[arg(long)]
    device: Option<String>,
    /// Page store of a new store; an existing store is reopened with the one it was created with.
    #[arg(long, value_enum)]
    store: Option<Store>,
    /// Most bytes a new store may grow to (the file grows as it fills), e.g. 64m, 10g.
    /// Default: 64 GiB in a file, the whole device with --device.
    #[arg(long)]
    size: Option<String>,
    /// Buffer pool frames.
    #[arg(long, default_value_t = 64)]
    buffer: usize,
    /// Buffer replacement policy.
    #[arg(long, default_value = "lru",
          value_parser = clap::builder::PossibleValuesParser::new(flashkv_engine::POLICY_NAMES))]
    policy: String,
    #[command(subcommand)]
    cmd: KvCmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum Store {
    /// Whole pages written in place.
    InPlace,
    /// In-page logging, seed 001 layout (28 x 4 KB pages + 32 x 512 B log sectors).
    Ipl,
    /// In-page logging, SIGMOD 2007 layout (15 x 8 KB pages + 16 shared log sectors).
    IplShared,
}

#[derive(Subcommand)]
enum KvCmd {
    /// Set KEY to VALUE.
    Put { key: String, value: String },
    /// Print the value of KEY (exit 1 if absent).
    Get { key: String },
    /// Remove KEY (exit 1 if absent).
    Delete { key: String },
    /// Print key<TAB>value lines in key order.
    Scan {
        /// First key (inclusive).
        #[arg(long)]
        from: Option<String>,
        /// Last key (exclusive).
        #[arg(long)]
        to: Option<String>,
        /// Descending order.
        #[arg(long)]
        reverse: bool,
        /// At most this many pairs.
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Print the store's counters.
    Stats,
}

enum Fail {
    Usage(String),
    Run(String),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        match e {
            Error::KeyTooLarge { .. }
            | Error::ValueTooLarge { .. }
            | Error::StoreMismatch { .. }
            | Error::Options(_)
            | Error::NotAStore
            | Error::NotAStoreFile { .. }
            | Error::NoStore { .. }
            | Error::Exists { .. }
            | Error::Version { .. } => Fail::Usage(e.to_string()),
            _ => Fail::Run(e.to_string()),
        }
    }
}

pub fn run(args: KvArgs) -> ExitCode {
    match exec(args) {
        Ok(code) => code,
        Err(Fail::Usage(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(2)
        }
        Err(Fail::Run(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(1)
        }
    }
}

fn options(args: &KvArgs) -> Result<Options, Fail> {
    let policy = flashkv_engine::policy_by_name(&args.policy)
        .ok_or_else(|| Fail::Usage(format!("unknown policy {}", args.policy)))?;
    let mut opts = Options::default()
        .buffer_pages(args.buffer.max(1))
        .policy(policy);
    if let Some(size) = &args.size {
        let bytes = flashkv_device::parse_size(size)
            .map_err(|e| Fail::Usage(format!("--size {size}: {e}")))?;
        opts = opts.max_size(bytes);
    }
    opts.store = args.store.map(|s| match s {
        Store::InPlace => StoreKind::InPlace,
        Store::Ipl => StoreKind::InPageLogging(IplGeometry::seed()),
        Store::IplShared => StoreKind::InPageLogging(IplGeometry::shared()),
    });
    Ok(opts)
}

/// Whether `path` is missing or an empty file: where `--create` may make a store.
fn fresh(path: &Path) -> Result<bool, Fail> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(m.is_file() && m.len() == 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(Fail::Usage(format!("--db {}: {e}", path.display()))),
    }
}

fn open(args: &KvArgs) -> Result<Db, Fail> {
    let opts = options(args)?;
    let fresh = fresh(&args.db)?;
    if fresh && !args.create {
        return Err(Fail::Usage(format!(
            "--db {}: no store there (add --create to make one)",
            args.db.display()
        )));
    }
    let deadline = Instant::now() + Duration::from_secs_f64(args.wait.clamp(0.0, 86_400.0));
    loop {
        let r = match &args.device {
            None if fresh => Db::create(&args.db, opts.clone()),
            None => Db::open_path(&args.db, opts.clone()),
            Some(name) => return open_on_device(args, name, fresh, opts),
        };
        match r {
            // Another process has the store: wait for it, up to --wait.
            Err(Error::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            // It created the store while we waited: open it.
            Err(Error::Exists { .. }) if fresh => return Ok(Db::open_path(&args.db, opts)?),
            r => return Ok(r?),
        }
    }
}

/// A store on a simulated device whose data is kept in the file at --db.
/// The file is locked while the store is open, as a file store is.
fn open_on_device(args: &KvArgs, name: &str, fresh: bool, opts: Options) -> Result<Db, Fail> {
    let spec = presets::get(name).map_err(|e| Fail::Usage(e.to_string()))?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(fresh)
        .truncate(false)
        .open(&args.db)
        .map_err(|e| Fail::Usage(format!("--db {}: {e}", args.db.display())))?;
    lock(&file, &args.db, args.wait)?;
    let dev = SimDevice::with_store(&spec, DataStore::File(file))
        .map_err(|e| Fail::Run(e.to_string()))?;
    let r = if fresh {
        Db::open(Box::new(dev), opts)
    } else {
        Db::open_existing(Box::new(dev), opts)
    };
    r.map_err(|e| {
        if fresh {
            let _ = std::fs::remove_file(&args.db);
        }
        match e {
            Error::NotAStore => Fail::Usage(format!(
                "--db {}: not a flashkv store on a {name} device; nothing was written",
                args.db.display()
            )),
            e => e.into(),
        }
    })
}

/// Takes an exclusive lock on `file` (released when the device closes it),
/// waiting up to `wait` seconds for another process that holds it.
fn lock(file: &std::fs::File, path: &Path, wait: f64) -> Result<(), Fail> {
    use std::os::unix::io::AsRawFd;
    let deadline = Instant::now() + Duration::from_secs_f64(wait.clamp(0.0, 86_400.0));
    loop {
        // SAFETY: flock only reads its integer arguments; `file` is open.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Fail::Run(format!(
                "--db {}: the store is open in another process",
                path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn exec(args: KvArgs) -> Result<ExitCode, Fail> {
    let db = open(&args)?;
    let code = match &args.cmd {
        KvCmd::Put { key, value } => {
            db.put(key.as_bytes(), value.as_bytes())?;
            ExitCode::SUCCESS
        }
        KvCmd::Get { key } => match db.get(key.as_bytes())? {
            Some(v) => {
                println!("{}", String::from_utf8_lossy(&v));
                ExitCode::SUCCESS
            }
            None => ExitCode::from(1),
        },
        KvCmd::Delete { key } => {
            if db.delete(key.as_bytes())? {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        KvCmd::Scan {
            from,
            to,
            reverse,
            limit,
        } => {
            use std::ops::Bound;
            let lo = from
                .as_deref()
                .map_or(Bound::Unbounded, |k| Bound::Included(k.as_bytes()));
            let hi = to
                .as_deref()
                .map_or(Bound::Unbounded, |k| Bound::Excluded(k.as_bytes()));
            let pairs = db.scan_dir((lo, hi), *reverse, limit.unwrap_or(usize::MAX))?;
            let mut out = String::new();
            for (k, v) in pairs {
                out.push_str(&String::from_utf8_lossy(&k));
                out.push('\t');
                out.push_str(&String::from_utf8_lossy(&v));
                out.push('\n');
            }
            print!("{out}");
            ExitCode::SUCCESS
        }
        KvCmd::Stats => {
            let s = db.stats();
            println!("store\t{}", s.store_kind);
            println!("policy\t{}", s.policy);
            println!(
                "buffer hits / misses\t{} / {}",
                s.buffer.hits, s.buffer.misses
            );
            println!(
                "evictions dirty / clean\t{} / {}",
                s.buffer.dirty_evictions, s.buffer.clean_evictions
            );
            println!(
                "page reads / writes\t{} / {}",
                s.store.page_reads, s.store.page_writes
            );
            println!(
                "log sector reads / writes\t{} / {}",
                s.store.log_reads, s.store.log_writes
            );
            println!("merges / erases\t{} / {}", s.store.merges, s.store.erases);
            for (name, r) in [("data", s.data_io), ("wal", s.wal_io), ("meta", s.meta_io)] {
                println!(
                    "{name} I/O reads / writes / erases\t{} / {} / {}",
                    r.reads, r.writes, r.erases
                );
            }
            println!(
                "device reads / writes / erases\t{} / {} / {}",
                s.device.host_reads, s.device.host_writes, s.device.block_erases
            );
            ExitCode::SUCCESS
        }
    };
    // Make the change durable and leave a checkpoint behind.
    db.close()?;
    Ok(code)
}
