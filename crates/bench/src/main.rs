//! `flashkv-bench`: flashkv's two page stores against redb, fjall, sled,
//! SQLite, LMDB and RocksDB on real files: seven phases, or the YCSB core
//! workloads A–F in memory and larger than memory (docs/benchmarks.md).

mod cgroup;
mod child;
mod engine;
mod engines;
mod latency;
mod measure;
mod outcome;
mod phases;
mod plan;
mod report;
mod session;
mod stop;
mod svg;
mod table;
mod workload;
mod ycsb;

use std::process::ExitCode;

use clap::Parser;

/// Runs flashkv (in-place and in-page-logging stores) and peer engines on
/// the same operations, each engine in a process of its own, on real files.
/// Without --ycsb: seven phases (bulk load, durable puts and batches, point
/// and range reads, delete half, reads and puts on several threads). With
/// --ycsb: the YCSB core workloads A–F after a load, at 1 and 4 client
/// threads, with data in memory and with data about 4× a cache budget under
/// a cgroup memory limit. Every write is durable (synced) when it returns,
/// and each write phase ends with a close and a reopen whose writes count in
/// "WA through close". Prints Markdown tables, or with --json one JSON
/// object per line; --out also writes the tables, the rows and SVG figures.
#[derive(Parser, Debug)]
#[command(name = "flashkv-bench")]
pub struct Args {
    /// Run the YCSB core workloads A–F instead of the seven phases.
    #[arg(long)]
    pub ycsb: bool,
    /// A small scale for CI: 2,000 keys, or for YCSB 1,000 records, 500
    /// operations and a 1 MiB cache budget (about 30 s); flashkv's two
    /// stores unless --engines says otherwise.
    #[arg(long)]
    pub quick: bool,
    /// Seven phases: keys loaded (24-byte random keys, 150-byte values)
    /// [default: 300000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..=100_000_000))]
    pub keys: Option<u64>,
    /// YCSB: records of the in-memory scale [default: 100000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub records: Option<u64>,
    /// YCSB: records of the larger-than-memory scale; 0 leaves that scale
    /// out [default: 4 × the cache budget ÷ --value-size].
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    pub large_records: Option<u64>,
    /// YCSB: operations per workload and thread count [default: 10000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub ops: Option<u64>,
    /// YCSB: a workload that has not done its operations after this many
    /// seconds stops there (YCSB's maxexecutiontime); the report says so.
    #[arg(long, default_value_t = 8.0, value_parser = seconds)]
    pub max_seconds: f64,
    /// YCSB: the load stops after this many seconds; the workloads then
    /// run on the records loaded, and the report says so.
    #[arg(long, default_value_t = 60.0, value_parser = seconds)]
    pub load_seconds: f64,
    /// YCSB: bytes per record value (YCSB's 10 fields of 100 bytes, as one value).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub value_size: u64,
    /// YCSB: the cache budget of the larger-than-memory scale, in MiB, set
    /// through each engine's own cache setting [default: 64].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub cache_mib: Option<u64>,
    /// YCSB: the memory limit (cgroup) of each engine's process during the
    /// workloads of the larger-than-memory scale, in MiB; 0 runs it
    /// unbounded [default: the cache budget + 96].
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=1_048_576))]
    pub memory_limit_mib: Option<u64>,
    /// YCSB: client thread counts, each running every workload.
    #[arg(long, value_delimiter = ',', default_value = "1,4", value_parser = clap::value_parser!(u64).range(1..=64))]
    pub threads: Vec<u64>,
    /// YCSB: workloads to run, in order (letters from a to f).
    #[arg(long, value_delimiter = ',', default_value = "a,b,c,d,e,f")]
    pub workloads: Vec<String>,
    /// Comma-separated engines, from: flashkv-inplace, flashkv-ipl,
    /// flashkv-no-memtable (a tuned row: in place with `memtable(0)`),
    /// redb, fjall, sled, sqlite, lmdb, rocksdb [default: all of them].
    #[arg(long, value_delimiter = ',')]
    pub engines: Option<Vec<String>>,
    /// Runs per engine (engines interleaved); the report gives the median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: u32,
    /// Existing directory to work in: a fresh sub-directory is made there and
    /// removed at the end [default: /var/tmp].
    #[arg(long)]
    pub dir: Option<std::path::PathBuf>,
    /// Seed of the keys, values and operation order.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// JSON rows on stdout, one per line, instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Also write bench.md (the tables), bench.jsonl (the rows) and SVG
    /// figures into this directory (made if missing; its parent must exist).
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Internal: run one engine as described (the benchmark runs itself).
    #[arg(long, hide = true)]
    pub child: Option<String>,
}

fn main() -> ExitCode {
    // SAFETY: called before any other thread exists; SIG_DFL is always valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => return clap_exit(e),
    };
    if let Some(spec) = &args.child {
        let spec: child::Spec = match serde_json::from_str(spec) {
            Ok(s) => s,
            Err(e) => return fail(2, &format!("--child: {e}")),
        };
        return match child::run(&spec) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail(1, &e),
        };
    }
    let plan = match plan::Plan::from_args(&args) {
        Ok(p) => p,
        Err(msg) => return fail(2, &msg),
    };
    stop::install();
    match plan.run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) if msg == plan::INTERRUPTED => fail(130, &msg),
        Err(msg) => fail(1, &msg),
    }
}

/// A time limit in seconds: positive and finite.
fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("'{s}' is not a positive number of seconds")),
    }
}

fn fail(code: u8, msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(code)
}

/// Help goes to stdout with exit 0; a parse error is one line and exit 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    // clap's message runs until the blank line before "Usage:"; fold it into one line.
    let rendered = e.render().to_string();
    let lines: Vec<&str> = rendered
        .lines()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let msg = lines.join(" ");
    fail(
        2,
        &format!(
            "{} (see --help)",
            msg.strip_prefix("error: ").unwrap_or(&msg)
        ),
    )
}
