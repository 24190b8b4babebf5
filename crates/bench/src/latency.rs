//! Operation latencies in an HDR histogram (nanoseconds, 3 significant
//! digits, 1 ns to an hour): memory bounded by the range (about 200 KiB),
//! not by the operation count.

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

/// The longest latency kept exactly; longer ones count as this.
const MAX_NANOS: u64 = 3_600_000_000_000;

impl Default for Latency {
    fn default() -> Self {
        Latency(
            Histogram::new_with_bounds(1, MAX_NANOS, 3)
                .expect("1 ns to an hour at 3 digits is a valid histogram"),
        )
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
            .expect("histograms of the same bounds add up");
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
        for us in 1..=10_000u64 {
            l.record(us * 1000);
        }
        assert!(l.percentiles().unwrap().max_us > 9_980.0);
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
