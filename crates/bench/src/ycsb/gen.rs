//! YCSB's generators, as its Java code has them (`site.ycsb.generator`):
//! FNV-1a key hashing, the Zipfian generator (Gray et al.'s algorithm with
//! zeta extended incrementally as the item count grows), the scrambled
//! Zipfian over a huge item space hashed into the key range, and key names.

use rand::Rng;

/// YCSB's `zipfianconstant` default.
pub const ZIPF_THETA: f64 = 0.99;
/// The scrambled Zipfian draws from this many items, then hashes the draw
/// into the key range (`ScrambledZipfianGenerator.ITEM_COUNT`)...
const SCRAMBLE_ITEMS: u64 = 10_000_000_000;
/// ...whose zeta YCSB precomputes (`ScrambledZipfianGenerator.ZETAN`).
const SCRAMBLE_ZETAN: f64 = 26.469_028_201_783_02;

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 bytes of `val`, low first,
/// made non-negative as Java's `Math.abs` does.
pub fn fnv64(val: u64) -> u64 {
    (fnv1a(&val.to_le_bytes()) as i64).unsigned_abs()
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(1_099_511_628_211)
    })
}

/// The key of record `keynum`: "user" and its hash, as YCSB's default
/// `insertorder=hashed` names it (so keys arrive in random order).
pub fn key_name(keynum: u64, out: &mut Vec<u8>) {
    use std::io::Write;
    out.clear();
    write!(out, "user{}", fnv64(keynum)).expect("writing to a Vec cannot fail");
}

/// Sum of 1/i^theta for i in `from + 1..=to`.
fn zeta(from: u64, to: u64, theta: f64) -> f64 {
    (from..to).map(|i| 1.0 / ((i + 1) as f64).powf(theta)).sum()
}

/// Zipfian over `0..n`, item 0 the most popular (`ZipfianGenerator`).
#[derive(Debug, Clone)]
pub struct Zipfian {
    theta: f64,
    alpha: f64,
    zeta2: f64,
    zetan: f64,
    /// The item count `zetan` is for.
    n: u64,
    eta: f64,
}

impl Zipfian {
    pub fn new(n: u64, theta: f64) -> Zipfian {
        Zipfian::with_zetan(n, theta, zeta(0, n, theta))
    }

    fn with_zetan(n: u64, theta: f64, zetan: f64) -> Zipfian {
        assert!(n >= 1 && theta > 0.0 && theta < 1.0);
        let mut z = Zipfian {
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2: zeta(0, 2, theta),
            zetan,
            n,
            eta: 0.0,
        };
        z.eta = z.eta_for(n);
        z
    }

    fn eta_for(&self, n: u64) -> f64 {
        (1.0 - (2.0 / n as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// A draw from `0..n`; a larger `n` than the last extends zeta by the
    /// new items only (YCSB's incremental update; it never shrinks).
    pub fn next(&mut self, rng: &mut impl Rng, n: u64) -> u64 {
        if n > self.n {
            self.zetan += zeta(self.n, n, self.theta);
            self.n = n;
            self.eta = self.eta_for(n);
        }
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(n - 1);
        }
        let x = n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (x as u64).min(n - 1)
    }
}

/// YCSB's `ScrambledZipfianGenerator`: a Zipfian draw over ten billion
/// items, hashed into `0..n`, so the popular keys are spread over the key
/// space rather than clustered at its start.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    n: u64,
    z: Zipfian,
}

impl ScrambledZipfian {
    pub fn new(n: u64) -> ScrambledZipfian {
        assert!(n >= 1);
        ScrambledZipfian {
            n,
            z: Zipfian::with_zetan(SCRAMBLE_ITEMS, ZIPF_THETA, SCRAMBLE_ZETAN),
        }
    }

    pub fn next(&mut self, rng: &mut impl Rng) -> u64 {
        fnv64(self.z.next(rng, SCRAMBLE_ITEMS)) % self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, SeedableRng};

    #[test]
    fn fnv_and_key_names_match_ycsb() {
        // The FNV test suite's vectors for FNV-1a 64.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(
            fnv64(1),
            (fnv1a(&[1, 0, 0, 0, 0, 0, 0, 0]) as i64).unsigned_abs()
        );
        assert!(fnv64(u64::MAX) <= 1 << 63);
        let mut k = Vec::new();
        key_name(0, &mut k);
        assert_eq!(k, format!("user{}", fnv64(0)).into_bytes());
        assert!(k.len() <= 23, "{}", String::from_utf8_lossy(&k));
    }

    #[test]
    fn the_precomputed_zeta_is_ycsbs_constant() {
        // Zeta over 10^10 items is too long to sum in a test: check that
        // the incremental sum agrees with the direct one, and that the
        // constant lies where the integral bound puts it.
        let direct = zeta(0, 20_000, ZIPF_THETA);
        let mut z = Zipfian::new(10_000, ZIPF_THETA);
        let mut rng = SmallRng::seed_from_u64(1);
        z.next(&mut rng, 20_000);
        assert!((z.zetan - direct).abs() < 1e-9);
        let n = SCRAMBLE_ITEMS as f64;
        let integral = (n.powf(1.0 - ZIPF_THETA) - 1.0) / (1.0 - ZIPF_THETA);
        assert!(SCRAMBLE_ZETAN > integral && SCRAMBLE_ZETAN < integral + 1.0);
    }

    #[test]
    fn zipfian_is_skewed_towards_item_zero_and_in_range() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut z = Zipfian::new(1000, ZIPF_THETA);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            counts[z.next(&mut rng, 1000) as usize] += 1;
        }
        // P(0) = 1/zeta(1000) ≈ 0.134 for theta 0.99.
        let p0 = f64::from(counts[0]) / 100_000.0;
        assert!((p0 - 1.0 / zeta(0, 1000, ZIPF_THETA)).abs() < 0.01, "{p0}");
        assert!(counts[0] > counts[1] && counts[1] > counts[10] && counts[10] > counts[500]);
    }

    #[test]
    fn scrambled_zipfian_spreads_its_hot_keys_and_stays_in_range() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut s = ScrambledZipfian::new(10_000);
        let mut counts = vec![0u32; 10_000];
        for _ in 0..200_000 {
            counts[s.next(&mut rng) as usize] += 1;
        }
        let mut sorted = counts.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        // Skewed: the hottest 1 % of keys take far more than 1 % of draws...
        let top: u32 = sorted[..100].iter().sum();
        assert!(top > 200_000 / 5, "{top}");
        // ...and the hottest key is not simply key 0.
        let hottest = counts.iter().position(|&c| c == sorted[0]).unwrap();
        assert_ne!(hottest, 0);
    }
}
