//! `flashkv-bench`: flashkv's two page stores against redb, fjall, sled and
//! SQLite on one workload, on real files (see the README, "Peer benchmark").

mod engine;
mod engines;
mod measure;
mod phases;
mod report;
mod workload;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use engine::Opener;
use report::Row;
use workload::Workload;

const ALL_ENGINES: &str = "flashkv-inplace,flashkv-ipl,redb,fjall,sled,sqlite";
const PEERS_HINT: &str = "cargo run --release -p flashkv-bench --features peers -- ...";

/// Runs flashkv (in-place and in-page-logging stores) and peer engines on the
/// same keys: bulk load, durable puts and batches, point and range reads,
/// delete half, 2-thread reads, file size. Prints a Markdown table, or with
/// --json one JSON object per line.
#[derive(Parser, Debug)]
#[command(name = "flashkv-bench")]
struct Args {
    /// Keys loaded (24-byte random keys, 150-byte values).
    #[arg(long, default_value_t = 300_000, value_parser = clap::value_parser!(u64).range(2..=100_000_000))]
    keys: u64,
    /// Comma-separated engines to run, from: flashkv-inplace, flashkv-ipl, redb, fjall, sled, sqlite.
    #[arg(long, value_delimiter = ',', default_value = ALL_ENGINES)]
    engines: Vec<String>,
    /// Runs per engine (engines interleaved); the report gives the median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// Existing directory to work in: a fresh sub-directory is made there and
    /// removed at the end [default: /var/tmp].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Seed of the keys, values and read order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// JSON rows on stdout, one per line, instead of the table.
    #[arg(long)]
    json: bool,
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
    let engines = match select(&args.engines) {
        Ok(e) => e,
        Err(msg) => return fail(2, &msg),
    };
    let parent = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("/var/tmp"));
    if !parent.is_dir() {
        return fail(
            2,
            &format!("--dir {}: not an existing directory", parent.display()),
        );
    }
    match run(&args, &engines, &parent) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => fail(1, &msg),
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

/// The engines asked for, in the order given, with their openers (`None`
/// when this build left the peers out).
fn select(names: &[String]) -> Result<Vec<(&'static str, Option<Opener>)>, String> {
    let all = engine::all();
    let mut out: Vec<(&'static str, Option<Opener>)> = Vec::new();
    for n in names {
        let Some(&found) = all.iter().find(|(name, _)| name == n) else {
            return Err(format!("unknown engine '{n}' (known: {ALL_ENGINES})"));
        };
        if out.iter().any(|(name, _)| name == n) {
            return Err(format!("engine '{n}' given twice"));
        }
        out.push(found);
    }
    Ok(out)
}

fn run(
    args: &Args,
    engines: &[(&'static str, Option<Opener>)],
    parent: &Path,
) -> Result<(), String> {
    let keys = args.keys as usize;
    check_space(parent, keys)?;
    let work = tempfile::Builder::new()
        .prefix("flashkv-bench-")
        .tempdir_in(parent)
        .map_err(|e| format!("cannot make a directory in {}: {e}", parent.display()))?;
    let built: Vec<(&str, Opener)> = engines
        .iter()
        .filter_map(|&(n, o)| o.map(|o| (n, o)))
        .collect();
    let left_out: Vec<&str> = engines
        .iter()
        .filter(|(_, o)| o.is_none())
        .map(|(n, _)| *n)
        .collect();
    if !left_out.is_empty() {
        eprintln!(
            "left out {} (not built; enable with: {PEERS_HINT})",
            left_out.join(", ")
        );
    }
    eprintln!("making {keys} keys (seed {})", args.seed);
    let w = Workload::new(keys, args.seed);
    let mut rows = Vec::new();
    for rep in 0..args.repeat {
        // Alternate the order so slow drift on a shared machine evens out.
        let order: Vec<_> = match rep % 2 {
            0 => built.iter().collect(),
            _ => built.iter().rev().collect(),
        };
        for &&(name, open) in &order {
            let dir = work.path().join(format!("{name}-{rep}"));
            rows.extend(run_engine(name, open, &dir, &w));
        }
    }
    let mut rows = report::medians(&rows);
    for n in &left_out {
        rows.push(Row::skipped(
            n,
            "all",
            &format!("not built; enable with: {PEERS_HINT}"),
        ));
    }
    print(
        args,
        &rows,
        &built.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
    );
    work.close()
        .map_err(|e| format!("cannot remove the work directory: {e}"))
}

/// Refuses to start when the file system cannot hold the largest store
/// (flashkv's: about 4 KiB per key with its log today) with room to spare.
fn check_space(dir: &Path, keys: usize) -> Result<(), String> {
    let need = keys as u64 * 8192 + (1 << 30);
    let free = flashkv_device::free_space(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if free < need {
        return Err(format!(
            "{} has {} MB free; {keys} keys need about {} MB (use --dir or fewer --keys)",
            dir.display(),
            free >> 20,
            need >> 20
        ));
    }
    Ok(())
}

/// Every phase of one engine in a fresh directory `dir`, then its size
/// after closing; the directory is removed afterwards.
fn run_engine(name: &str, open: Opener, dir: &Path, w: &Workload) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut record = |phase: &str, o: phases::Outcome| {
        let row = Row::phase(name, phase, o);
        progress(&row);
        rows.push(row);
    };
    let opened = std::fs::create_dir(dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))
        .and_then(|()| caught(|| open(dir, w.loaded.len())));
    let closed = match opened {
        Ok(mut engine) => {
            phases::run(engine.as_mut(), w, &mut record);
            caught(|| engine.close())
        }
        Err(e) => {
            let mut first = Some(phases::Outcome::Failed(format!("open: {e}")));
            for p in phases::PHASES {
                let skip = phases::Outcome::Skipped("the engine did not open".into());
                record(p, first.take().unwrap_or(skip));
            }
            Ok(())
        }
    };
    let size = closed
        .map_err(|e| format!("close: {e}"))
        .and_then(|()| measure::dir_size(dir).map_err(|e| e.to_string()));
    let row = Row::size(name, size);
    progress(&row);
    rows.push(row);
    if let Err(e) = std::fs::remove_dir_all(dir) {
        eprintln!("warning: cannot remove {}: {e}", dir.display());
    }
    rows
}

/// `f`'s result, with an error or a panic as a message.
fn caught<T>(f: impl FnOnce() -> engine::Result<T>) -> Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(p) => Err(format!("panicked: {}", phases::panic_message(&p))),
    }
}

/// One line on stderr per measurement, as it comes.
fn progress(r: &Row) {
    let what = match (&r.error, &r.skipped, r.ops_per_s, r.allocated_bytes) {
        (Some(e), ..) => format!("error: {e}"),
        (_, Some(s), ..) => format!("skipped: {s}"),
        (.., Some(ops), _) => {
            let wa = r.wa.map(|w| format!(", WA {w:.2}")).unwrap_or_default();
            format!(
                "{ops:.0} ops/s{wa} ({:.2} s)",
                r.seconds.unwrap_or_default()
            )
        }
        (.., Some(a)) => format!(
            "{a} bytes allocated, {} apparent",
            r.apparent_bytes.unwrap_or_default()
        ),
        _ => String::new(),
    };
    eprintln!("{} {}: {what}", r.engine, r.phase);
}

fn print(args: &Args, rows: &[Row], engines: &[&str]) {
    if args.json {
        for r in rows {
            println!("{}", serde_json::to_string(r).expect("rows serialise"));
        }
        return;
    }
    println!(
        "{} keys (24-byte keys, 150-byte values), seed {}, median of {} run(s)\n",
        args.keys, args.seed, args.repeat
    );
    println!("{}", report::table(rows, engines));
    for r in rows.iter().filter(|r| r.phase == "all") {
        println!("{}: {}", r.engine, r.skipped.as_deref().unwrap_or_default());
    }
}
