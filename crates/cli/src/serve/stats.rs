//! What the server did: request counters and a latency histogram (the
//! model's service time per request, constant memory), reported on exit and
//! on SIGUSR1.

use flashkv_device::{DeviceStats, Latencies, Nanos};
use serde::Serialize;

use super::nbd::{CMD_FLUSH, CMD_READ, CMD_TRIM, CMD_WRITE};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub connections: u64,
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub flushes: u64,
    pub trims: u64,
    pub trim_bytes: u64,
    /// Requests answered with an error.
    pub errors: u64,
    /// Replies sent more than 1 ms after their completion time (--pace real).
    pub late_replies: u64,
}

#[derive(Default)]
pub struct Stats {
    pub counters: Counters,
    latency: Latencies,
}

impl Stats {
    /// A request of `kind` and `len` bytes served in `latency` virtual ns.
    pub fn served(&mut self, kind: u16, len: u64, latency: Nanos) {
        let c = &mut self.counters;
        match kind {
            CMD_READ => {
                c.reads += 1;
                c.read_bytes += len;
            }
            CMD_WRITE => {
                c.writes += 1;
                c.write_bytes += len;
            }
            CMD_FLUSH => c.flushes += 1,
            CMD_TRIM => {
                c.trims += 1;
                c.trim_bytes += len;
            }
            _ => unreachable!("only data commands are served, not {kind}"),
        }
        self.latency.record(latency);
    }

    pub fn report(&self, head: Head, device: DeviceStats) -> Report {
        let l = &self.latency;
        let us = |ns: Nanos| ns as f64 / 1e3;
        Report {
            head,
            counters: self.counters.clone(),
            latency_us: LatencyUs {
                count: l.count(),
                mean: l.mean() / 1e3,
                p50: us(l.quantile(0.5)),
                p99: us(l.quantile(0.99)),
                p999: us(l.quantile(0.999)),
                max: us(l.max()),
            },
            device,
        }
    }
}

/// The export a report is about.
#[derive(Debug, Clone, Serialize)]
pub struct Head {
    pub export: String,
    pub size: u64,
    pub pace: &'static str,
}

#[derive(Debug, Serialize)]
pub struct LatencyUs {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

#[derive(Debug, Serialize)]
pub struct Report {
    #[serde(flatten)]
    pub head: Head,
    #[serde(flatten)]
    pub counters: Counters,
    /// Service time of every request served, in the model's microseconds.
    pub latency_us: LatencyUs,
    /// The device's own counters since the server started.
    pub device: DeviceStats,
}

impl Report {
    /// One JSON object on one line (a stream of them with SIGUSR1).
    pub fn print_json(&self) {
        let line = serde_json::to_string(self).expect("a report serialises");
        say(format_args!("{line}"));
    }

    pub fn print_human(&self) {
        let (h, c, l) = (&self.head, &self.counters, &self.latency_us);
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        say(format_args!(
            "serve {} (pace {}): {} connections; reads {} ({:.1} MiB), writes {} ({:.1} MiB), flushes {}, trims {} ({:.1} MiB), errors {}{}",
            h.export,
            h.pace,
            c.connections,
            c.reads,
            mib(c.read_bytes),
            c.writes,
            mib(c.write_bytes),
            c.flushes,
            c.trims,
            mib(c.trim_bytes),
            c.errors,
            if h.pace == "real" {
                format!(", late replies {}", c.late_replies)
            } else {
                String::new()
            }
        ));
        say(format_args!(
            "  latency µs: count {}  mean {:.1}  p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}",
            l.count, l.mean, l.p50, l.p99, l.p999, l.max
        ));
        for line in crate::internals::lines(&self.device) {
            say(format_args!("  {line}"));
        }
    }
}

/// A line on stdout; a closed stdout must not stop the server (SIGPIPE is
/// ignored while serving, so the write just fails).
fn say(line: std::fmt::Arguments) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_and_latencies_add_up() {
        let mut s = Stats::default();
        s.served(CMD_READ, 4096, 1_000);
        s.served(CMD_WRITE, 512, 3_000);
        s.served(CMD_TRIM, 8192, 0);
        s.served(CMD_FLUSH, 0, 2_000);
        let head = Head {
            export: "x".into(),
            size: 1,
            pace: "none",
        };
        let r = s.report(head, DeviceStats::default());
        let c = &r.counters;
        assert_eq!(
            (c.reads, c.read_bytes, c.writes, c.write_bytes),
            (1, 4096, 1, 512)
        );
        assert_eq!((c.trims, c.trim_bytes, c.flushes), (1, 8192, 1));
        assert_eq!(r.latency_us.count, 4);
        assert_eq!(r.latency_us.mean, 1.5);
        assert_eq!(r.latency_us.max, 3.0);
    }
}
