//! Operation latencies in an HDR histogram (nanoseconds, 3 significant
//! digits): memory bounded by the range, not by the operation count.

use hdrhistogram::Histogram;

/// The latencies of one kind of operation.
#[derive(Clone)]
pub struct Latency(Histogram<u64>);

/// What the report shows of a histogram, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    pub count: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Default for Latency {
    fn default() -> Self {
        // Auto-resizing: any latency fits, from 1 ns up.
        Latency(Histogram::new(3).expect("3 significant digits is a valid histogram"))
    }
}

impl Latency {
    /// Adds one operation that took `nanos`.
    pub fn record(&mut self, nanos: u64) {
        self.0.saturating_record(nanos.max(1));
    }

    /// Adds every operation `other` holds.
    pub fn merge(&mut self, other: &Latency) {
        self.0
            .add(&other.0)
            .expect("auto-resizing histograms take any other");
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// `None` when no operation was recorded.
    pub fn percentiles(&self) -> Option<Percentiles> {
        if self.0.is_empty() {
            return None;
        }
        let us = |q: f64| self.0.value_at_quantile(q) as f64 / 1000.0;
        Some(Percentiles {
            count: self.0.len(),
            p50_us: us(0.5),
            p99_us: us(0.99),
            p999_us: us(0.999),
            max_us: self.0.max() as f64 / 1000.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_spread_within_the_histogram_precision() {
        let mut l = Latency::default();
        assert!(l.percentiles().is_none());
        for ns in 1..=10_000u64 {
            l.record(ns * 1000);
        }
        let mut other = Latency::default();
        other.record(50_000_000);
        l.merge(&other);
        let p = l.percentiles().unwrap();
        assert_eq!(p.count, 10_001);
        let near = |a: f64, b: f64| (a - b).abs() <= b * 0.001 + 1e-9;
        assert!(near(p.p50_us, 5000.0), "{p:?}");
        assert!(near(p.p99_us, 9900.0), "{p:?}");
        assert!(near(p.p999_us, 9990.0), "{p:?}");
        assert!(near(p.max_us, 50_000.0), "{p:?}");
    }
}
