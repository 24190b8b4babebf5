//! pgbench's per-transaction log (`--log`): one line per transaction,
//! `client_id transaction_no time script_no time_epoch time_us`, where
//! `time` is the latency in µs and the last two the completion time. The
//! latencies go into a histogram (p50 / p99 as pgbench would report them
//! with percentiles) and the completions into a count per second.

use std::io::{BufRead, BufReader};
use std::path::Path;

use flashkv_device::Latencies;

use crate::lab::LabError;

/// Latencies and transactions completed in each second of the run.
#[derive(Default)]
pub struct TxLog {
    pub latency: Latencies,
    /// Completions per second, from the first completion's second.
    pub per_second: Vec<u64>,
    first: Option<u64>,
}

impl TxLog {
    /// Adds one log line; `false` when it is not a transaction line.
    pub fn add(&mut self, line: &str) -> bool {
        let f: Vec<u64> = line
            .split_whitespace()
            .map_while(|w| w.parse().ok())
            .collect();
        let [_, _, latency_us, _, epoch_s, _] = f[..] else {
            return false;
        };
        self.latency.record(latency_us * 1000);
        let first = *self.first.get_or_insert(epoch_s);
        // A line from before the first one seen (another client's file).
        let Some(k) = epoch_s.checked_sub(first) else {
            self.shift(first - epoch_s);
            self.first = Some(epoch_s);
            self.per_second[0] += 1;
            return true;
        };
        let k = k as usize;
        if self.per_second.len() <= k {
            self.per_second.resize(k + 1, 0);
        }
        self.per_second[k] += 1;
        true
    }

    /// Makes room for `n` earlier seconds.
    fn shift(&mut self, n: u64) {
        let mut v = vec![0u64; n as usize];
        v.append(&mut self.per_second);
        self.per_second = v;
    }

    /// Reads every `pgbench_log.*` file in `dir`.
    pub fn read(dir: &Path) -> Result<TxLog, LabError> {
        let mut t = TxLog::default();
        let err = |e: std::io::Error| LabError::Run(format!("pgbench log: {e}"));
        for e in std::fs::read_dir(dir).map_err(err)? {
            let p = e.map_err(err)?.path();
            let is_log = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("pgbench_log."));
            if is_log {
                let f = std::fs::File::open(&p).map_err(err)?;
                for l in BufReader::new(f).lines() {
                    t.add(&l.map_err(err)?);
                }
            }
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_count_by_second_and_latencies_go_to_the_histogram() {
        let mut t = TxLog::default();
        assert!(t.add("0 1 2000 0 1700000001 500"));
        assert!(t.add("1 1 4000 0 1700000003 10"));
        assert!(t.add("0 2 6000 0 1700000000 999"), "an earlier second");
        assert!(!t.add("garbage line"));
        assert!(!t.add("1 2 3"));
        assert_eq!(t.per_second, [1, 1, 0, 1]);
        assert_eq!(t.latency.count(), 3);
        assert_eq!(t.latency.mean(), 4_000_000.0);
    }
}
