//! Key generators for the buffer experiments: YCSB's scrambled zipfian
//! (Gray et al., "Quickly generating billion-record synthetic databases",
//! SIGMOD 1994, as YCSB's `ScrambledZipfianGenerator` uses it), uniform
//! keys, and short range scans.

use rand::{rngs::SmallRng, Rng};

/// Zipfian over `0..n` with constant `theta`, its ranks scattered over the
/// key space by an FNV-1a hash so the hot keys do not share pages (YCSB's
/// "scrambled" variant; a hash collision merges two ranks, as in YCSB).
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    n: u64,
    theta: f64,
    alpha: f64,
    zeta_n: f64,
    eta: f64,
}

/// YCSB's default request-distribution constant.
pub const YCSB_THETA: f64 = 0.99;

impl ScrambledZipfian {
    pub fn new(n: u64, theta: f64) -> Self {
        let n = n.max(2);
        let zeta = |k: u64| (1..=k).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let (zeta_2, zeta_n) = (zeta(2), zeta(n));
        ScrambledZipfian {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta_n,
            eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta_2 / zeta_n),
        }
    }

    /// The rank drawn (0 is the most popular), before scrambling.
    pub fn rank(&self, rng: &mut SmallRng) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let r = self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (r as u64).min(self.n - 1)
    }

    pub fn next(&self, rng: &mut SmallRng) -> u64 {
        fnv1a(self.rank(rng)) % self.n
    }
}

/// FNV-1a over the 8 bytes of `v`, as YCSB's `Utils.fnvhash64`.
fn fnv1a(v: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in v.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// One operation of a mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Read(u64),
    /// Insert or overwrite.
    Write(u64),
    /// `len` keys from `start` on.
    Scan {
        start: u64,
        len: u64,
    },
}

/// The workloads of `flashkv lab buffer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    /// YCSB A: 50 % reads, 50 % updates, zipfian 0.99.
    YcsbA,
    /// YCSB B: 95 % reads, 5 % updates, zipfian 0.99.
    ReadMostly,
    /// YCSB E-like: 95 % scans of 1..=100 keys from a zipfian start, 5 % updates.
    ScanHeavy,
    /// Seed 001's hypothesis 3: uniform random reads and writes (inserts or
    /// updates), half each, over a key space twice the loaded relation.
    H3,
}

impl Mix {
    pub const ALL: [Mix; 4] = [Mix::YcsbA, Mix::ReadMostly, Mix::ScanHeavy, Mix::H3];

    pub fn name(self) -> &'static str {
        match self {
            Mix::YcsbA => "ycsb-a",
            Mix::ReadMostly => "read-mostly",
            Mix::ScanHeavy => "scan-heavy",
            Mix::H3 => "h3",
        }
    }

    /// The mix named `name` (as [`Mix::name`] gives it).
    pub fn parse(name: &str) -> Option<Mix> {
        Mix::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// Draws the operations of a mix over a relation of `n` loaded keys `0..n`.
pub struct Gen {
    mix: Mix,
    n: u64,
    zipf: ScrambledZipfian,
}

impl Gen {
    pub fn new(mix: Mix, n: u64) -> Gen {
        Gen {
            mix,
            n,
            zipf: ScrambledZipfian::new(n, YCSB_THETA),
        }
    }

    pub fn next(&self, rng: &mut SmallRng) -> Op {
        let z = |rng: &mut SmallRng| self.zipf.next(rng);
        match self.mix {
            Mix::YcsbA if rng.gen_bool(0.5) => Op::Read(z(rng)),
            Mix::YcsbA => Op::Write(z(rng)),
            Mix::ReadMostly if rng.gen_bool(0.95) => Op::Read(z(rng)),
            Mix::ReadMostly => Op::Write(z(rng)),
            Mix::ScanHeavy if rng.gen_bool(0.95) => Op::Scan {
                start: z(rng),
                len: rng.gen_range(1..=100),
            },
            Mix::ScanHeavy => Op::Write(z(rng)),
            Mix::H3 if rng.gen_bool(0.5) => Op::Read(rng.gen_range(0..2 * self.n)),
            Mix::H3 => Op::Write(rng.gen_range(0..2 * self.n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn zipfian_ranks_follow_the_power_law() {
        // P(rank 0) = 1 / zeta(n): about 13.4 % for n = 1000, theta 0.99;
        // rank 1 about half as often.
        let z = ScrambledZipfian::new(1000, YCSB_THETA);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut c = [0u32; 3];
        for _ in 0..100_000 {
            let r = z.rank(&mut rng) as usize;
            if r < 3 {
                c[r] += 1;
            }
        }
        let p0 = f64::from(c[0]) / 1e5;
        assert!((p0 - 1.0 / z.zeta_n).abs() < 0.01, "{p0}");
        let ratio = f64::from(c[0]) / f64::from(c[1]);
        assert!((1.7..2.3).contains(&ratio), "{ratio}");
    }

    #[test]
    fn scrambled_keys_stay_in_range_and_spread() {
        let z = ScrambledZipfian::new(500, YCSB_THETA);
        let mut rng = SmallRng::seed_from_u64(1);
        let keys: Vec<u64> = (0..10_000).map(|_| z.next(&mut rng)).collect();
        assert!(keys.iter().all(|&k| k < 500));
        // The hottest key is not key 0: ranks are scattered.
        let mut count = std::collections::HashMap::new();
        for k in keys {
            *count.entry(k).or_insert(0) += 1;
        }
        let hottest = count.iter().max_by_key(|e| e.1).map(|e| *e.0);
        assert_eq!(hottest, Some(fnv1a(0) % 500));
    }

    #[test]
    fn mixes_have_their_read_write_ratio() {
        let mut rng = SmallRng::seed_from_u64(3);
        let g = Gen::new(Mix::ReadMostly, 1000);
        let writes = (0..20_000)
            .filter(|_| matches!(g.next(&mut rng), Op::Write(_)))
            .count();
        assert!((800..1200).contains(&writes), "{writes}");
        let h3 = Gen::new(Mix::H3, 1000);
        assert!((0..1000).all(|_| match h3.next(&mut rng) {
            Op::Read(k) | Op::Write(k) => k < 2000,
            Op::Scan { .. } => false,
        }));
    }
}
