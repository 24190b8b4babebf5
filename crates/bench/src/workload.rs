//! The keys and values every engine gets, made from one seed so each engine
//! (and each repeat) sees exactly the same operations.

use rand::{rngs::SmallRng, Rng, SeedableRng};

pub const KEY_LEN: usize = 24;
pub const VALUE_LEN: usize = 150;
/// Individual durable puts.
pub const PUTS: usize = 500;
/// Durable batches, and pairs per batch.
pub const BATCHES: usize = 50;
pub const BATCH_LEN: usize = 1_000;
/// Keys per range read.
pub const RANGE_LEN: usize = 10;
/// Threads in the parallel read phase.
pub const READ_THREADS: usize = 2;
/// Threads in the parallel durable-put phase, and puts per thread.
pub const WRITE_THREADS: usize = 4;
pub const THREAD_PUTS: usize = 250;

pub type Key = [u8; KEY_LEN];
pub type Value = [u8; VALUE_LEN];

/// Everything a run writes and reads.
pub struct Workload {
    /// Loaded in one batch; the first half is deleted later.
    pub loaded: Vec<(Key, Value)>,
    /// Written by the individual puts.
    pub puts: Vec<(Key, Value)>,
    /// Written by the durable batches, `BATCH_LEN` at a time.
    pub batched: Vec<(Key, Value)>,
    /// Written by the parallel durable puts, `THREAD_PUTS` per thread.
    pub threaded: Vec<(Key, Value)>,
    /// Indexes into `loaded` for the point reads.
    pub reads: Vec<u32>,
    /// Indexes into `loaded` where the ranges start.
    pub range_starts: Vec<u32>,
    /// Indexes into the surviving half of `loaded` for the parallel reads,
    /// one list per thread.
    pub parallel_reads: Vec<Vec<u32>>,
}

impl Workload {
    /// `n` loaded keys (at least 2), all keys distinct.
    pub fn new(n: usize, seed: u64) -> Workload {
        assert!(n >= 2 && n <= u32::MAX as usize);
        let mut rng = SmallRng::seed_from_u64(seed);
        let total = n + PUTS + BATCHES * BATCH_LEN + WRITE_THREADS * THREAD_PUTS;
        let mut seen = std::collections::HashSet::with_capacity(total);
        let mut pairs = Vec::with_capacity(total);
        while pairs.len() < total {
            let k: Key = rng.gen();
            if seen.insert(k) {
                let mut v = [0u8; VALUE_LEN];
                rng.fill(&mut v[..]);
                pairs.push((k, v));
            }
        }
        let threaded = pairs.split_off(n + PUTS + BATCHES * BATCH_LEN);
        let batched = pairs.split_off(n + PUTS);
        let puts = pairs.split_off(n);
        let idx = |rng: &mut SmallRng, lo: usize, count: usize| -> Vec<u32> {
            (0..count).map(|_| rng.gen_range(lo..n) as u32).collect()
        };
        let reads = idx(&mut rng, 0, n);
        let range_starts = idx(&mut rng, 0, (n / 10).max(1));
        let per_thread = n.div_ceil(READ_THREADS);
        let parallel_reads = (0..READ_THREADS)
            .map(|t| idx(&mut rng, n / 2, per_thread.min(n - t * per_thread)))
            .collect();
        Workload {
            loaded: pairs,
            puts,
            batched,
            threaded,
            reads,
            range_starts,
            parallel_reads,
        }
    }

    /// The keys the delete phase removes: the first half of the loaded ones
    /// (they were drawn at random, so that is a random half).
    pub fn deleted(&self) -> &[(Key, Value)] {
        &self.loaded[..self.loaded.len() / 2]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_workload_and_reads_hit_live_keys() {
        let (a, b) = (Workload::new(1000, 7), Workload::new(1000, 7));
        assert_eq!(a.loaded, b.loaded);
        assert_eq!(a.reads, b.reads);
        assert_ne!(a.loaded, Workload::new(1000, 8).loaded);
        assert_eq!(a.loaded.len(), 1000);
        assert_eq!(a.puts.len(), PUTS);
        assert_eq!(a.batched.len(), BATCHES * BATCH_LEN);
        assert_eq!(a.threaded.len(), WRITE_THREADS * THREAD_PUTS);
        assert_eq!(a.range_starts.len(), 100);
        let par: usize = a.parallel_reads.iter().map(Vec::len).sum();
        assert_eq!(par, 1000);
        assert!(a.parallel_reads.iter().flatten().all(|&i| i >= 500));
    }
}
