//! `flashkv serve`: export an emulated device (or a file) over NBD, so
//! unmodified programs (qemu, fio, a VM, the kernel's nbd client) run on it.

mod conn;
mod export;
mod handshake;
mod listen;
mod nbd;
mod pace;
mod served;
mod signal;
mod stats;
mod target;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use clap::{ArgGroup, Args};

use crate::error::CliError;
use crate::files::Created;
use crate::hybrid::PairArg;
use crate::units;
use conn::Shared;
use export::Export;
use handshake::ExportInfo;
use listen::Listener;
use pace::{Clock, Pace};
use stats::{Device, Drain, Head, Stats};

/// Where and how to serve (the command's help is on `Command::Serve`).
#[derive(Args)]
#[command(group = ArgGroup::new("target").required(true).args(["device", "spec", "hybrid", "file"]))]
pub struct ServeArgs {
    /// A device preset (see `flashkv devices`).
    #[arg(long, value_name = "NAME")]
    device: Option<String>,
    /// A device spec file (TOML; same fields as a preset).
    #[arg(long, value_name = "FILE")]
    spec: Option<PathBuf>,
    /// A hybrid: the SSD cache, then the HDD. Two presets (e.g.
    /// ssd-lowend,hdd-7200; in memory for this run) or the two files
    /// `flashkv hybrid create` made (clients' writes are kept in them).
    #[arg(long, value_name = "SSD,HDD")]
    hybrid: Option<String>,
    /// The hybrid's policy: `default` (re-read HDD data is promoted into
    /// the SSD), or `seed` (seed 003's HeteroDrive: no read promotion).
    /// Both flush as the crate does by default: the whole cache sorted into
    /// one write-back pass, after one disk access (12.67 ms) of idle time.
    #[arg(long, value_enum, default_value_t = Policy::Default, requires = "hybrid")]
    hybrid_policy: Policy,
    /// A real file or block device to serve (created at --size if missing).
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
    /// Size of the --file serve creates, a multiple of 4 KiB (e.g. 1g).
    #[arg(long, value_parser = units::nonzero_size)]
    size: Option<u64>,
    /// Serve an existing file flashkv did not create, or an unmounted block
    /// device: clients may overwrite all of it.
    #[arg(long)]
    force: bool,
    /// Listen on a Unix socket at this path (made by serve and removed when
    /// it ends; a stale socket nobody listens on is replaced).
    #[arg(long, value_name = "PATH", conflicts_with = "listen")]
    socket: Option<PathBuf>,
    /// Listen on this TCP address [default: 127.0.0.1:10809]; port 0 picks a
    /// free port. Loopback only unless --allow-remote.
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<String>,
    /// Accept a --listen address other than loopback (NBD has no
    /// authentication: anyone who can connect can read and write).
    #[arg(long, requires = "listen")]
    allow_remote: bool,
    /// `none`: answer each request as soon as the model has costed it,
    /// issuing requests back to back on the model's clock. `real`: map the
    /// model's virtual time onto wall time since the server started (as FEMU
    /// does) and hold each reply until the model completes the request, so
    /// clients see the emulated device's speed. Not for --file, which the
    /// hardware paces.
    #[arg(long, value_enum, default_value_t = Pace::None)]
    pace: Pace,
    /// Exit when the first client disconnects.
    #[arg(long)]
    once: bool,
    /// Print the report as one JSON object per line on stdout (on exit and
    /// on SIGUSR1); messages go to stderr.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Policy {
    Default,
    Seed,
}

impl Policy {
    fn options(self) -> flashkv_hybrid::Options {
        match self {
            Policy::Default => flashkv_hybrid::Options::default(),
            Policy::Seed => flashkv_lab::hybrid::seed_policy(),
        }
    }
}

/// How often the accept loop looks at the signal flags.
const TICK: Duration = Duration::from_millis(100);

pub fn run(a: ServeArgs) -> ExitCode {
    // A --file serve makes is kept when the server ran; the socket goes
    // with the listener either way.
    let mut created = Created::default();
    match run_inner(a, &mut created) {
        Ok(code) => {
            created.keep();
            code
        }
        Err(e) => e.exit(),
    }
}

fn open_target(a: &ServeArgs, created: &mut Created) -> Result<target::Target, CliError> {
    let pair = a.hybrid.as_deref().map(PairArg::parse).transpose()?;
    let files = a.file.is_some() || pair.as_ref().is_some_and(PairArg::is_files);
    if files && a.pace == Pace::Real {
        return Err(CliError::Usage(
            "--pace real applies to simulated devices; files run at their hardware's speed".into(),
        ));
    }
    match (&a.device, &a.spec, &pair, &a.file) {
        (Some(name), ..) => target::preset(name),
        (_, Some(path), ..) => target::spec(path),
        (_, _, Some(pair), _) => target::hybrid(pair, a.hybrid_policy.options()),
        (_, _, _, Some(path)) => target::file(path, a.size, a.force, created),
        _ => unreachable!("clap requires one target"),
    }
}

fn run_inner(a: ServeArgs, created: &mut Created) -> Result<ExitCode, CliError> {
    if a.file.is_none() && (a.size.is_some() || a.force) {
        return Err(CliError::Usage(
            "--size and --force apply to --file only".into(),
        ));
    }
    // Every argument is checked before a file or socket is made.
    let addr = match (&a.socket, &a.listen) {
        (Some(path), _) => {
            listen::check_socket(path)?;
            None
        }
        (None, l) => Some(listen::tcp_address(
            l.as_deref().unwrap_or("127.0.0.1:10809"),
            a.allow_remote,
        )?),
    };
    let t = open_target(&a, created)?;
    let listener = match (&a.socket, addr) {
        (Some(path), _) => Listener::unix(path)?,
        (None, Some(addr)) => Listener::tcp(addr)?,
        (None, None) => unreachable!("an address when there is no socket"),
    };
    let export = Export::new(t.dev, t.base, t.size);
    let sector = u32::try_from(export.sector()).expect("sectors are small");
    assert!(sector.is_power_of_two(), "sector {sector} is a power of 2");
    let info = ExportInfo {
        name: t.name.clone(),
        size: t.size,
        flags: transmission_flags(t.rotational),
        preferred_block: sector.max(4096),
    };
    let shared = Arc::new(Shared {
        export: Mutex::new(export),
        stats: Mutex::new(Stats::default()),
        clock: Clock::new(a.pace),
        info,
    });
    signal::install();
    eprintln!(
        "serving {} ({}, pace {}) on {}",
        t.name,
        units::human(t.size),
        a.pace.name(),
        listener.uri()
    );
    accept_loop(&listener, &shared, &a);
    let drain = finish(&shared);
    report(&shared, a.json, drain);
    Ok(ExitCode::SUCCESS)
}

/// What the export offers: flush, FUA, trim and write-zeroes; rotational
/// where a disk holds the data (a hint for the client's I/O scheduling).
fn transmission_flags(rotational: bool) -> u16 {
    let mut f = nbd::TFLAG_HAS_FLAGS
        | nbd::TFLAG_SEND_FLUSH
        | nbd::TFLAG_SEND_FUA
        | nbd::TFLAG_SEND_TRIM
        | nbd::TFLAG_SEND_WRITE_ZEROES;
    if rotational {
        f |= nbd::TFLAG_ROTATIONAL;
    }
    f
}

/// Accepts clients, each served on its own thread, until a signal ends the
/// server or, with --once, the first client has left. Clients still
/// connected then are cut off when the process exits.
fn accept_loop(l: &Listener, shared: &Arc<Shared>, a: &ServeArgs) {
    let ended = Arc::new(AtomicUsize::new(0));
    let mut accepted = 0u64;
    let done = |ended: &AtomicUsize| a.once && ended.load(Ordering::SeqCst) > 0;
    while !signal::stop_requested() && !done(&ended) {
        if signal::take_report() {
            report(shared, a.json, None);
        }
        if signal::take_interval() {
            report(shared, a.json, None);
            shared.stats().reset();
        }
        if a.once && accepted > 0 {
            std::thread::sleep(TICK);
            continue;
        }
        match l.accept(TICK) {
            Ok(Some(c)) => {
                accepted += 1;
                let (shared, ended) = (Arc::clone(shared), Arc::clone(&ended));
                std::thread::spawn(move || {
                    client(c, &shared, accepted);
                    ended.fetch_add(1, Ordering::SeqCst);
                });
            }
            Ok(None) => {}
            Err(e) => {
                // Out of descriptors and the like: say so, keep serving.
                eprintln!("serve: accept failed: {e}");
                std::thread::sleep(TICK);
            }
        }
    }
}

fn client(c: listen::Conn, shared: &Shared, id: u64) {
    eprintln!("client {id} connected");
    match conn::serve(c.r, c.w, shared) {
        Ok(()) => eprintln!("client {id} disconnected"),
        Err(e) => eprintln!("client {id}: connection closed: {e}"),
    }
}

/// Makes every acknowledged write durable before the server exits; a
/// hybrid then writes back what it owes the HDD, in the model's time (the
/// served device is in memory and goes with the server: this only says
/// what the write-back would take).
fn finish(shared: &Shared) -> Option<Drain> {
    let mut e = shared.export.lock().unwrap_or_else(PoisonError::into_inner);
    let at = shared.clock.issue(e.clock());
    let flushed = match e.flush(at) {
        Ok(c) => c.end,
        Err(errno) => {
            eprintln!("serve: the final flush failed (error {})", errno.0);
            return None;
        }
    };
    let h = e.served_mut().hybrid_mut()?;
    let bytes = h.hybrid_stats().dirty_bytes;
    match h.drain(flushed) {
        Ok(c) => Some(Drain {
            bytes,
            seconds: c.end.saturating_sub(c.start) as f64 / 1e9,
        }),
        Err(err) => {
            eprintln!("serve: the hybrid's final write-back failed: {err}");
            None
        }
    }
}

fn report(shared: &Shared, json: bool, drain: Option<Drain>) {
    let of = |e: &Export| Device {
        stats: e.device().stats(),
        hybrid: e.served().hybrid().map(|h| h.hybrid_stats()),
        drain,
    };
    let device = match shared.export.lock() {
        Ok(e) => of(&e),
        Err(p) => of(&p.into_inner()),
    };
    let head = Head {
        export: shared.info.name.clone(),
        size: shared.info.size,
        pace: shared.clock.pace().name(),
    };
    let r = shared.stats().report(head, device);
    if json {
        r.print_json();
    } else {
        r.print_human();
    }
}
