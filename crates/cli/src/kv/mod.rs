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

mod codec;
mod import;
mod ops;
mod shell;
mod words;

use clap::{Args, Subcommand, ValueEnum};
use flashkv_device::{presets, DataStore, SimDevice};
use flashkv_engine::{Db, Error, IplGeometry, Options, StoreKind};

use crate::error::CliError;

/// Text forms of keys and values (said once here, not on every subcommand).
const FORMATS: &str = "\
Keys and values: --key-format and --value-format say how they are written in
arguments, output and imports: utf8 (text, the default), hex (two digits per
byte) or base64 (standard, padded). In TSV output (scan, export, get) and in
`kv shell` arguments, utf8 text escapes tab, newline, carriage return and
backslash as \\t \\n \\r \\\\, and other control characters and bytes that are
not UTF-8 as \\xNN; `kv import` undoes the same escapes. JSON output needs
UTF-8: use hex or base64 for binary data there.

Limits: a key up to 1 KiB (1,024 bytes), a value up to 1 MiB (1,048,576
bytes), after decoding; a longer one is refused with exit 2.

Exit codes: 0 success; 1 not found (get, delete) or a failure while running;
2 bad input (arguments are checked before --create makes a store).";

#[derive(Args)]
#[command(after_long_help = FORMATS)]
pub struct KvArgs {
    /// File holding the store (or the simulated device's data with --device).
    #[arg(long, value_name = "FILE")]
    db: PathBuf,
    /// Create the store if --db is missing or empty (never otherwise: an
    /// existing file that is not a store is refused and left untouched).
    #[arg(long)]
    create: bool,
    /// Seconds to wait for another process that has the store open (0 to 86400).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = crate::units::seconds)]
    wait: f64,
    /// Run on a simulated device preset (see `flashkv devices`).
    #[arg(long, value_name = "PRESET")]
    device: Option<String>,
    /// Page store of a new store; an existing store is reopened with the one it was created with.
    #[arg(long, value_enum)]
    store: Option<Store>,
    /// Most bytes a new store may grow to (the file grows as it fills), e.g. 64m, 10g.
    /// Default: 64 GiB in a file, the whole device with --device.
    #[arg(long)]
    size: Option<String>,
    /// Buffer pool frames (pages held in memory) [default: the engine's: an
    /// eighth of the machine's memory, at least 64 MiB and at most 1 GiB].
    #[arg(long, value_name = "PAGES")]
    buffer: Option<usize>,
    /// Buffer replacement policy.
    #[arg(long, default_value = "clock",
          value_parser = clap::builder::PossibleValuesParser::new(flashkv_engine::POLICY_NAMES))]
    policy: String,
    /// How keys are written in arguments, output and imports (see `kv --help`).
    #[arg(
        long,
        value_enum,
        default_value = "utf8",
        global = true,
        hide_possible_values = true,
        value_name = "utf8|hex|base64"
    )]
    key_format: codec::Format,
    /// How values are written in arguments, output and imports.
    #[arg(
        long,
        value_enum,
        default_value = "utf8",
        global = true,
        hide_possible_values = true,
        value_name = "utf8|hex|base64"
    )]
    value_format: codec::Format,
    /// Print only JSON on stdout: one object, or one per line for scan/export.
    #[arg(long, global = true)]
    json: bool,
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
    Put(ops::PutArgs),
    /// Print the value of KEY (exit 1 if absent); with several keys a
    /// key<TAB>value line per key found (exit 1 if any is absent).
    Get(ops::GetArgs),
    /// Remove KEY, several keys (exit 1 if one is absent), or every key
    /// under --prefix or from --from to --to (in atomic batches of 1,000).
    Delete(ops::DeleteArgs),
    /// Print key<TAB>value lines in key order (escaped; see --key-format).
    Scan(ops::ScanArgs),
    /// Print how many keys there are (under PREFIX).
    Count(ops::CountArgs),
    /// Write every pair (under --prefix) to stdout, in a form `kv import` reads back.
    Export {
        /// Only keys starting with this.
        #[arg(long)]
        prefix: Option<String>,
        /// Layout of the output: tsv (key<TAB>value lines, escaped) or jsonl
        /// ({"key": ..., "value": ...} lines).
        #[arg(
            long,
            value_enum,
            default_value = "tsv",
            hide_possible_values = true,
            value_name = "tsv|jsonl"
        )]
        output_format: ops::TextFormat,
    },
    /// Load pairs from FILE (or stdin, `-`) in batched commits, then flush.
    Import(import::ImportArgs),
    /// Print what the store holds (keys, pages, file size) and its counters.
    Stats,
    /// Many commands in one process, as sqlite3 or redis-cli offer.
    ///
    /// On a terminal: a prompt with line editing and history (kept in
    /// ~/.flashkv_history, each command's first 200 bytes). From a pipe: one
    /// command per line, one answer per command, flushed before the next
    /// line is read; no prompt.
    ///
    /// Commands (`help CMD` in the shell shows a command's options):
    ///   put KEY VALUE          the value is the rest of the line
    ///   get KEY...             the value; several keys: key<TAB>value each
    ///   delete KEY...          also: delete --prefix P, delete --from K --to K
    ///   scan [PREFIX]          also --from K, --to K, --limit N, --reverse
    ///   count [PREFIX]
    ///   stats                  what the store holds, this session's counters
    ///   flush                  make every change so far durable
    ///   help [CMD]
    ///   quit                   also exit, or Ctrl-D
    ///
    /// Answers: `ok`, a value, `not found`, a count, scan's pairs then
    /// `end N`, or `error: ...` (the shell goes on). Words are split at
    /// spaces; "double" or 'single' quotes keep a key with spaces whole, and
    /// keys and values take the TSV escapes (\t, \n, \\, \xNN; see
    /// `kv --help`). With --json every answer is one JSON object in the shape
    /// of the one-shot commands'. At the end the store is flushed and closed.
    ///
    /// Example: printf 'put "my key" 1\nget "my key"\n' | flashkv kv --db my.db shell
    #[command(verbatim_doc_comment)]
    Shell,
}

pub(crate) enum Fail {
    Usage(String),
    Run(String),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        match e {
            // Named as the command line names it, where it does.
            Error::InvalidOption { option, why } => match flag(option) {
                Some(f) => Fail::Usage(format!("{f}: {why}")),
                None => Fail::Usage(format!("invalid option {option}: {why}")),
            },
            Error::KeyTooLarge { .. }
            | Error::ValueTooLarge { .. }
            | Error::StoreMismatch { .. }
            | Error::NotAStore
            | Error::NotAStoreFile { .. }
            | Error::NoStore { .. }
            | Error::Exists { .. }
            | Error::Version { .. } => Fail::Usage(e.to_string()),
            _ => Fail::Run(e.to_string()),
        }
    }
}

/// The `kv` flag that sets engine option `option` (as
/// `flashkv_engine::OptionsBuilder` names it), if one does.
fn flag(option: &str) -> Option<&'static str> {
    match option {
        "max_size" => Some("--size"),
        "store" => Some("--store"),
        "buffer_pages" | "pool" => Some("--buffer"),
        "policy" => Some("--policy"),
        _ => None,
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

/// "1 pair", "2 pairs".
pub(crate) fn pairs(n: u64) -> String {
    match n {
        1 => "1 pair".into(),
        n => format!("{n} pairs"),
    }
}

fn options(args: &KvArgs) -> Result<Options, Fail> {
    let policy = flashkv_engine::policy_by_name(&args.policy)
        .ok_or_else(|| Fail::Usage(format!("unknown policy {}", args.policy)))?;
    if args.buffer == Some(0) {
        return Err(Fail::Usage(
            "--buffer 0: the buffer pool needs at least 1 page".into(),
        ));
    }
    // Each command opens and closes the store: a close that left the log
    // would make every later command replay it.
    let mut opts = Options::builder().policy(policy).close_checkpoint(true);
    if let Some(frames) = args.buffer {
        opts = opts.buffer_pages(frames);
    }
    if let Some(size) = &args.size {
        let bytes = flashkv_device::parse_size(size)
            .map_err(|e| Fail::Usage(format!("--size {size}: {e}")))?;
        if bytes == 0 {
            return Err(Fail::Usage(format!(
                "--size {size}: a store needs more than 0 bytes"
            )));
        }
        opts = opts.max_size(bytes);
    }
    if let Some(s) = args.store {
        opts = opts.store(match s {
            Store::InPlace => StoreKind::InPlace,
            Store::Ipl => StoreKind::InPageLogging(IplGeometry::seed()),
            Store::IplShared => StoreKind::InPageLogging(IplGeometry::shared()),
        });
    }
    Ok(opts.build()?)
}

/// Whether `path` is missing or an empty file: where `--create` may make a store.
fn fresh(path: &Path) -> Result<bool, Fail> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(m.is_file() && m.len() == 0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(Fail::Usage(format!("--db {}: {e}", path.display()))),
    }
}

/// Whether the command only reads: it opens the store read-only, under a
/// shared lock, so readers run side by side (a writer waits for them).
fn reads_only(cmd: &KvCmd) -> bool {
    matches!(
        cmd,
        KvCmd::Get(_) | KvCmd::Scan(_) | KvCmd::Count(_) | KvCmd::Export { .. } | KvCmd::Stats
    )
}

/// A file store opened for reading; one with writes to recover is opened
/// for writing, which recovers them.
fn open_path(path: &Path, opts: Options, read: bool) -> Result<Db, Error> {
    match read {
        true => match Db::open_read_only(path, opts.clone()) {
            Err(Error::NeedsRecovery) => Db::open_path(path, opts),
            r => r,
        },
        false => Db::open_path(path, opts),
    }
}

fn open(args: &KvArgs, read: bool) -> Result<Db, Fail> {
    let opts = options(args)?;
    let fresh = fresh(&args.db)?;
    if fresh && !args.create {
        return Err(Fail::Usage(format!(
            "--db {}: no store there (add --create to make one)",
            args.db.display()
        )));
    }
    if fresh {
        // A missing directory, or /dev, is the user's to fix: exit 2.
        crate::files::inspect("--db", &args.db).map_err(|e| match e {
            CliError::Usage(m) => Fail::Usage(m),
            CliError::Failed(m) => Fail::Run(m),
        })?;
    }
    let deadline = Instant::now() + Duration::from_secs_f64(args.wait);
    loop {
        let r = match &args.device {
            None if fresh => Db::create(&args.db, opts.clone()),
            None => open_path(&args.db, opts.clone(), read),
            Some(name) => return open_on_device(args, name, fresh, opts),
        };
        match r {
            // Another process has the store: wait for it, up to --wait.
            Err(Error::Locked { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            // It created the store while we waited: open it.
            Err(Error::Exists { .. }) if fresh => return Ok(open_path(&args.db, opts, read)?),
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
    if fresh {
        // The new name is durable before the first commit that needs it.
        flashkv_device::sync_parent(&args.db).map_err(|e| {
            let _ = std::fs::remove_file(&args.db);
            Fail::Run(e.to_string())
        })?;
    }
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
    let deadline = Instant::now() + Duration::from_secs_f64(wait);
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

impl From<std::io::Error> for Fail {
    fn from(e: std::io::Error) -> Self {
        Fail::Run(e.to_string())
    }
}

fn exec(args: KvArgs) -> Result<ExitCode, Fail> {
    let codec = codec::Codec {
        key: args.key_format,
        value: args.value_format,
    };
    let mut out = ops::Out::new(codec, args.json);
    // Arguments and the import input are checked first: bad input creates no store.
    check_args(&args.cmd, &out)?;
    let input = match &args.cmd {
        KvCmd::Import(a) => Some(import::open_input(a)?),
        _ => None,
    };
    let db = open(&args, reads_only(&args.cmd))?;
    let found = match &args.cmd {
        KvCmd::Put(a) => ops::put(&db, &mut out, a)?,
        KvCmd::Get(a) => ops::get(&db, &mut out, a)?,
        KvCmd::Delete(a) => ops::delete(&db, &mut out, a)?,
        KvCmd::Scan(s) => ops::scan(&db, &mut out, s)?,
        KvCmd::Count(a) => ops::count(&db, &mut out, a)?,
        KvCmd::Export {
            prefix,
            output_format,
        } => ops::export(&db, &mut out, prefix.as_deref(), *output_format)?,
        KvCmd::Import(a) => {
            let input = input.expect("opened above for import");
            import::run(&db, &mut out, a, input)?
        }
        KvCmd::Stats => ops::stats(&db, &mut out, &args.db)?,
        KvCmd::Shell => shell::run(&db, &mut out, &args.db)?,
    };
    out.finish()?;
    // Make the change durable and leave a checkpoint behind.
    db.close()?;
    Ok(if found {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Decodes every key and value argument once, to fail before opening the store.
fn check_args(cmd: &KvCmd, out: &ops::Out) -> Result<(), Fail> {
    match cmd {
        KvCmd::Put(a) => {
            let (k, v) = (out.key(&a.key)?, out.value(&a.value)?);
            // Refused before --create makes a store, with the engine's errors.
            let (max_k, max_v) = (flashkv_engine::MAX_KEY, flashkv_engine::MAX_VALUE);
            if k.len() > max_k {
                return Err(Error::KeyTooLarge {
                    len: k.len(),
                    max: max_k,
                }
                .into());
            }
            if v.len() > max_v {
                return Err(Error::ValueTooLarge {
                    len: v.len(),
                    max: max_v,
                }
                .into());
            }
            Ok(())
        }
        KvCmd::Get(a) => a.keys.iter().try_for_each(|k| out.key(k).map(drop)),
        KvCmd::Delete(a) => a.check(out),
        KvCmd::Count(a) => a.prefix().map_or(Ok(()), |p| out.key(p).map(drop)),
        KvCmd::Export {
            prefix: Some(p), ..
        } => out.key(p).map(drop),
        KvCmd::Scan(s) => s.check(out),
        _ => Ok(()),
    }
}
