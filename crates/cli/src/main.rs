//! `flashkv`: the lab, device presets, the profiler and the key-value shell.

#![deny(clippy::unwrap_used)]

mod advise;
mod devices;
mod error;
mod files;
mod hybrid;
mod internals;
mod kv;
mod lab;
mod profile;
mod profile_cache;
mod profile_path;
mod progress;
mod replay;
mod serve;
mod units;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// flashkv: a storage engine and storage lab for flash, disk and hybrid devices.
///
/// Every simulated device stores real data and costs each operation in
/// virtual time and energy, so designs can be run, counted and compared.
#[derive(Parser)]
#[command(name = "flashkv", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the lab: reproduce the seed documents' experiments on the built-in
    /// emulated devices, print a summary and write results/ (JSON, CSV,
    /// Markdown, SVG plots).
    ///
    /// With no experiment named it runs the six built on the models alone.
    /// `pgbench` runs only when named (`flashkv lab pgbench [--quick]`): it
    /// serves each drive over NBD at the model's speed and runs an
    /// unmodified PostgreSQL and pgbench on it, so it needs root, the
    /// postgres user, /dev/fuse, PostgreSQL, libnbd's nbdcopy and nbdfuse,
    /// and fuse2fs (it says what is missing and skips), and takes about 11
    /// minutes (--quick about 1.5); its figures are wall-clock measurements.
    ///
    /// Every experiment is a grid of independent points (--points lists
    /// them). --shard I/N runs every N-th point, starting with the I-th, and
    /// writes shard-I-of-N.json to --out; `flashkv lab merge DIR...` then
    /// writes the results/ a single run would, from the N shard files.
    Lab(lab::LabArgs),
    /// List the device presets and their parameters.
    Devices(devices::DevicesArgs),
    /// Run access patterns (sequential/random × read/write, 50/50 mix) over
    /// block sizes on a simulated device, or a real file or block device
    /// (--path), and report IOPS, MB/s, latency, energy and erases.
    Profile(profile::ProfileArgs),
    /// Advise on block sizes per access pattern, the scan-versus-random
    /// breakeven and the five-minute rule, for a device model or a profile.
    Advise(advise::AdviseArgs),
    /// Poke at a key-value store from the shell: put, get, delete, scan, stats
    /// (on a real file, or on a simulated device whose data lives in the file).
    Kv(kv::KvArgs),
    /// Create or inspect a hybrid SSD+HDD device (HeteroDrive, seed 003).
    Hybrid(hybrid::HybridArgs),
    /// Replay a block trace (MSR, SPC, DiskSim, blkparse) on a device and
    /// report latency percentiles and device counters.
    Replay(replay::ReplayArgs),
    /// Serve a device preset, spec, hybrid or file over NBD (loopback TCP or
    /// a Unix socket), optionally at the model's real speed.
    ///
    /// NBD (the Network Block Device protocol, fixed-newstyle, with FLUSH,
    /// FUA, TRIM and WRITE_ZEROES) lets unmodified programs use the device:
    /// qemu-io, qemu-img, libnbd's nbdinfo, nbdcopy and nbdfuse (which
    /// shows the export as a file, for mkfs and fuse2fs), fio's nbd engine,
    /// a VM (`-drive file=nbd:unix:SOCKET,format=raw`) or the kernel's
    /// nbd-client. A preset, spec or hybrid lives in memory for this run
    /// only. A missing --file is created at --size with a 4 KiB flashkv
    /// header that is not exported; an existing file flashkv did not
    /// create, or a block device, is served only with --force. Requests of
    /// any alignment are served (partial sectors by read-modify-write), so
    /// the advertised minimum block size is 1 and the preferred one the
    /// sector (at least 4 KiB); a read or write takes at most 32 MiB, a trim
    /// or write-zeroes any length. A read or trim past the end gets EINVAL,
    /// a write ENOSPC; an unknown export name NBD_REP_ERR_UNKNOWN.
    ///
    /// Counters and a latency histogram (the model's service time per
    /// request) are printed on stdout when the server ends (Ctrl-C, SIGTERM,
    /// or the first client leaving with --once) and on SIGUSR1; SIGUSR2
    /// prints them and starts a new interval (counters and latencies from
    /// zero; the device's own counters keep counting). A hybrid adds its
    /// cache counters, and on exit the write-back it still owed the HDD.
    Serve(serve::ServeArgs),
}

fn main() -> ExitCode {
    // Output piped into `head` and closed early should end the program
    // quietly, as other Unix tools do, not panic on a failed print.
    // SAFETY: called before any other thread exists; SIG_DFL is always valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return error::clap_exit(e),
    };
    let result = match cli.command {
        Command::Lab(a) => lab::run(a),
        Command::Devices(a) => devices::run(a),
        Command::Profile(a) => profile::run(a),
        Command::Advise(a) => advise::run(a),
        Command::Kv(a) => return kv::run(a),
        Command::Hybrid(a) => return hybrid::run(a),
        Command::Replay(a) => return replay::run(a),
        Command::Serve(a) => return serve::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => e.exit(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use proptest::prelude::*;

    #[test]
    fn the_parser_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Every argument of every command says what it is, and the key and
    /// value formats are described once, in `kv --help`, not on every kv
    /// subcommand.
    #[test]
    fn help_describes_every_argument_once() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for a in cmd.get_arguments() {
                let builtin = matches!(a.get_id().as_str(), "help" | "version");
                if !builtin
                    && !a.is_hide_set()
                    && a.get_help().is_none()
                    && a.get_long_help().is_none()
                {
                    missing.push(format!("{path} {}", a.get_id()));
                }
            }
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "flashkv", &mut missing);
        assert!(missing.is_empty(), "arguments without help: {missing:?}");

        let mut cli = Cli::command();
        cli.build();
        let kv = cli.find_subcommand_mut("kv").expect("kv");
        let top = kv.render_long_help().to_string();
        assert!(
            top.contains("two digits per"),
            "kv --help describes the formats"
        );
        for sub in kv.get_subcommands_mut() {
            let help = sub.render_long_help().to_string();
            assert!(
                !help.contains("two digits per"),
                "{} repeats the formats",
                sub.get_name()
            );
            assert!(help.lines().count() < 60, "{}: {help}", sub.get_name());
        }
    }

    /// Words a user might type, valid or not, and arbitrary strings.
    fn word() -> impl Strategy<Value = String> {
        const KNOWN: &[&str] = &[
            "lab",
            "devices",
            "profile",
            "advise",
            "kv",
            "hybrid",
            "replay",
            "serve",
            "create",
            "inspect",
            "put",
            "get",
            "scan",
            "stats",
            "--device",
            "--spec",
            "--path",
            "--span",
            "--ops",
            "--block-sizes",
            "--patterns",
            "--json",
            "--out",
            "--quick",
            "--ssd",
            "--hdd",
            "--ssd-size",
            "--hdd-size",
            "--force",
            "--trace",
            "--socket",
            "--listen",
            "--pace",
            "--once",
            "--file",
            "--format",
            "--db",
            "--size",
            "--iodepth",
            "--duration",
            "-h",
            "--help",
            "-V",
            "nvme",
            "0",
            "1p",
            "4k",
            "-1",
            "",
            "=",
            "--",
            "seed004",
            "msr",
            "1e308",
            "18446744073709551616",
        ];
        prop_oneof![
            3 => proptest::sample::select(KNOWN).prop_map(str::to_string),
            1 => any::<String>(),
            1 => "[-a-z0-9=,.]{0,12}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn arbitrary_arguments_parse_or_fail_in_one_line(words in proptest::collection::vec(word(), 0..8)) {
            let argv = std::iter::once("flashkv".to_string()).chain(words);
            match Cli::try_parse_from(argv) {
                Ok(_) => {}
                Err(e) => {
                    use clap::error::ErrorKind;
                    if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                        let line = error::clap_line(&e);
                        prop_assert!(!line.contains('\n'), "{line}");
                        prop_assert!(line.ends_with("(see --help)"), "{line}");
                    }
                }
            }
        }
    }
}
