//! What the server did: request counters and a latency histogram (the
//! model's service time per request, constant memory), reported on exit and
//! on SIGUSR1; SIGUSR2 reports and starts a new interval.

use flashkv_device::{DeviceStats, Latencies, Nanos};
use flashkv_hybrid::HybridStats;
use serde::Serialize;

use super::nbd::{CMD_FLUSH, CMD_READ, CMD_TRIM, CMD_WRITE, CMD_WRITE_ZEROES};

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
    /// NBD_CMD_WRITE_ZEROES requests and the bytes they zeroed.
    pub zeroes: u64,
    pub zero_bytes: u64,
    /// Requests answered with an error.
    pub errors: u64,
    /// Replies sent more than 1 ms after their completion time (--pace real).
    pub late_replies: u64,
}

#[derive(Default)]
pub struct Stats {
    pub counters: Counters,
    latency: Latencies,
    /// Intervals started by SIGUSR2 so far.
    interval: u64,
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
            CMD_WRITE_ZEROES => {
                c.zeroes += 1;
                c.zero_bytes += len;
            }
            _ => unreachable!("only data commands are served, not {kind}"),
        }
        self.latency.record(latency);
    }

    /// Starts a new interval: counters and latencies from zero.
    pub fn reset(&mut self) {
        *self = Stats {
            interval: self.interval + 1,
            ..Stats::default()
        };
    }

    pub fn report(&self, head: Head, device: Device) -> Report {
        let l = &self.latency;
        let us = |ns: Nanos| ns as f64 / 1e3;
        Report {
            head,
            interval: self.interval,
            counters: self.counters.clone(),
            latency_us: LatencyUs {
                count: l.count(),
                mean: l.mean() / 1e3,
                p50: us(l.quantile(0.5)),
                p99: us(l.quantile(0.99)),
                p999: us(l.quantile(0.999)),
                max: us(l.max()),
            },
            device: device.stats,
            hybrid: device.hybrid,
            drain: device.drain,
        }
    }
}

/// What the device says of itself for a report.
pub struct Device {
    pub stats: DeviceStats,
    pub hybrid: Option<HybridStats>,
    pub drain: Option<Drain>,
}

/// The hybrid's write-back of everything it still owed the HDD when the
/// server ended, run then in the model's time.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Drain {
    /// Dirty bytes the SSD held.
    pub bytes: u64,
    /// Model seconds until they were all on the HDD.
    pub seconds: f64,
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
    /// Which interval the counters and latencies cover: 0 from the start,
    /// then one more at each SIGUSR2.
    pub interval: u64,
    #[serde(flatten)]
    pub counters: Counters,
    /// Service time of every request served, in the model's microseconds.
    pub latency_us: LatencyUs,
    /// The device's own counters since the server started (not reset by
    /// SIGUSR2).
    pub device: DeviceStats,
    /// A hybrid's cache counters since the server started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hybrid: Option<HybridStats>,
    /// On exit, a hybrid's write-back of what it still owed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drain: Option<Drain>,
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
            "serve {} (pace {}): {} connections; reads {} ({:.1} MiB), writes {} ({:.1} MiB), flushes {}, trims {} ({:.1} MiB), zeroes {} ({:.1} MiB), errors {}{}",
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
            c.zeroes,
            mib(c.zero_bytes),
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
        if let Some(hy) = &self.hybrid {
            say(format_args!(
                "  hybrid: read hit ratio {:.3}, {:.1} MiB to the SSD, {:.1} MiB to the HDD, {:.1} MiB written back, {:.1} MiB owed",
                hy.read_hit_ratio,
                mib(hy.ssd_write_bytes),
                mib(hy.hdd_write_bytes),
                mib(hy.flush_bytes),
                mib(hy.dirty_bytes)
            ));
        }
        if let Some(d) = &self.drain {
            say(format_args!(
                "  write-back owed at exit: {:.1} MiB, {:.2} s of the model's time",
                mib(d.bytes),
                d.seconds
            ));
        }
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
        s.served(CMD_WRITE_ZEROES, 1024, 0);
        let head = Head {
            export: "x".into(),
            size: 1,
            pace: "none",
        };
        let r = s.report(
            head,
            Device {
                stats: DeviceStats::default(),
                hybrid: None,
                drain: None,
            },
        );
        let c = &r.counters;
        assert_eq!(
            (c.reads, c.read_bytes, c.writes, c.write_bytes),
            (1, 4096, 1, 512)
        );
        assert_eq!((c.trims, c.trim_bytes, c.flushes), (1, 8192, 1));
        assert_eq!((c.zeroes, c.zero_bytes), (1, 1024));
        assert_eq!(r.latency_us.count, 5);
        assert_eq!(r.latency_us.mean, 1.2);
        assert_eq!(r.latency_us.max, 3.0);
        assert_eq!(r.interval, 0);
        s.reset();
        s.served(CMD_READ, 512, 7_000);
        let head = r.head.clone();
        let none = || Device {
            stats: DeviceStats::default(),
            hybrid: None,
            drain: None,
        };
        let r = s.report(head, none());
        assert_eq!(r.interval, 1, "SIGUSR2 starts the next interval");
        assert_eq!((r.counters.reads, r.counters.read_bytes), (1, 512));
        assert_eq!((r.counters.writes, r.latency_us.count), (0, 1));
        assert_eq!(r.latency_us.mean, 7.0);
    }
}
