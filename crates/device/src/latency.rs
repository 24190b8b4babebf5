//! Latency summaries in constant memory: an HDR histogram (three significant
//! digits, so percentiles are within 0.1 %) beside an exact count, sum, min
//! and max, instead of a vector of every latency.

use hdrhistogram::Histogram;

use crate::Nanos;

/// Latencies recorded so far.
#[derive(Clone)]
pub struct Latencies {
    hist: Histogram<u64>,
    sum: u128,
    min: Nanos,
    max: Nanos,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            // Auto-resizing from 1 ns up: recording never fails.
            hist: Histogram::new(3).expect("3 significant digits is a valid precision"),
            sum: 0,
            min: Nanos::MAX,
            max: 0,
        }
    }
}

impl Latencies {
    /// Records one latency.
    pub fn record(&mut self, ns: Nanos) {
        // An auto-resizing histogram takes any u64; saturate if it ever refuses.
        if self.hist.record(ns).is_err() {
            self.hist.saturating_record(ns);
        }
        self.sum += u128::from(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        debug_assert!(self.min <= self.max && self.count() > 0);
    }

    /// Adds what `other` recorded (latencies from several threads).
    pub fn merge(&mut self, other: &Latencies) {
        if other.count() == 0 {
            return;
        }
        // Both auto-resize from the same precision, so adding cannot fail.
        let before = self.count();
        let _ = self.hist.add(&other.hist);
        debug_assert_eq!(
            self.count(),
            before + other.count(),
            "no latency is lost merging"
        );
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Latencies recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Exact mean (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.sum as f64 / self.count() as f64
        }
    }

    /// The `q` quantile (0..=1), within 0.1 %, never outside the exact
    /// minimum and maximum (0 when empty).
    pub fn quantile(&self, q: f64) -> Nanos {
        assert!((0.0..=1.0).contains(&q), "quantile {q} outside 0..=1");
        if self.count() == 0 {
            return 0;
        }
        self.hist.value_at_quantile(q).clamp(self.min, self.max)
    }

    /// The largest latency (0 when empty).
    pub fn max(&self) -> Nanos {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_a_tenth_of_a_percent() {
        let mut l = Latencies::default();
        for v in 1..=100_000u64 {
            l.record(v * 1000);
        }
        for (q, exact) in [
            (0.5, 50_000_000f64),
            (0.99, 99_000_000.0),
            (0.999, 99_900_000.0),
        ] {
            let got = l.quantile(q) as f64;
            assert!((got - exact).abs() / exact < 1e-3, "q{q}: {got} vs {exact}");
        }
        assert_eq!(l.max(), 100_000_000);
        assert_eq!(l.count(), 100_000);
        assert_eq!(l.mean(), 50_000_500.0);
    }

    #[test]
    fn merged_latencies_are_the_union() {
        let (mut a, mut b, mut all) = (
            Latencies::default(),
            Latencies::default(),
            Latencies::default(),
        );
        for v in 1..=1000u64 {
            if v % 3 == 0 { &mut a } else { &mut b }.record(v);
            all.record(v);
        }
        a.merge(&b);
        assert_eq!(
            (a.count(), a.mean(), a.max()),
            (all.count(), all.mean(), all.max())
        );
        assert_eq!(a.quantile(0.99), all.quantile(0.99));
        a.merge(&Latencies::default());
        assert_eq!(a.count(), 1000);
    }

    #[test]
    fn equal_latencies_give_that_latency_exactly() {
        let mut l = Latencies::default();
        for _ in 0..10 {
            l.record(78_545);
        }
        assert_eq!(
            (l.quantile(0.5), l.quantile(0.99), l.max()),
            (78_545, 78_545, 78_545)
        );
        assert_eq!(Latencies::default().quantile(0.99), 0);
    }
}
