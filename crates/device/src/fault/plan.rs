//! What a [`super::FaultDevice`] injects, and the seeded generator that
//! decides every random choice.

use crate::Nanos;

/// Where one kind of fault strikes: each candidate (a sector read, a write,
/// an operation) with probability `chance`, and every candidate whose
/// number is in `at`.
#[derive(Debug, Clone, Default)]
pub struct Strike {
    /// Probability that any one candidate is struck (0 to 1).
    pub chance: f64,
    /// Candidates struck for sure, by number.
    pub at: Vec<u64>,
}

impl Strike {
    /// Strikes with probability `chance` only.
    pub fn chance(chance: f64) -> Self {
        assert!((0.0..=1.0).contains(&chance), "chance {chance}");
        Strike {
            chance,
            at: Vec::new(),
        }
    }

    /// Strikes exactly at the numbered candidates.
    pub fn at(at: Vec<u64>) -> Self {
        Strike { chance: 0.0, at }
    }

    /// Whether candidate `n` is struck. Draws from `rng` only when the
    /// chance is non-zero, so a plan without this fault draws nothing.
    pub(super) fn hits(&self, n: u64, rng: &mut Rng) -> bool {
        self.at.contains(&n) || (self.chance > 0.0 && rng.below(self.chance))
    }

    pub(super) fn is_off(&self) -> bool {
        self.chance == 0.0 && self.at.is_empty()
    }
}

/// What to inject. The default injects nothing. Every random choice comes
/// from `seed`, so a plan and the same sequence of calls give the same faults.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    /// `n` writes complete; power is lost during write `n + 1`, which fails
    /// with [`crate::DeviceError::Crashed`] and may land whole, in part or not at all.
    pub crash_after_writes: Option<u64>,
    /// `n` operations of any kind complete; power is lost during the next one.
    pub crash_after_ops: Option<u64>,
    /// Seeds every random choice: which unflushed writes survive a crash,
    /// which reads are corrupted, which writes go astray.
    pub seed: u64,
    /// Whether an unflushed multi-sector write may land in part.
    pub tear: bool,
    /// Whether the write in flight at a crash may also tear inside a
    /// sector: a prefix of its new bytes lands over the old ones.
    pub tear_bytes: bool,
    /// Whether a program-once device (raw NAND) loses programs since the
    /// last flush too, as if it had a write cache: a lost program leaves
    /// its sectors programmed (they must be erased before reuse) but
    /// reading as erased. Without it completed programs are durable.
    pub lose_programs: bool,
    /// Operations (numbered from 0 over every call) that fail with
    /// [`crate::DeviceError::Injected`] and have no effect.
    pub fail_ops: Vec<u64>,
    /// Writes (numbered from 0) that fail with [`crate::DeviceError::Injected`].
    pub fail_writes: Vec<u64>,
    /// Operations (numbered from 0) that panic before doing anything, as
    /// a bug anywhere in the caller's call would.
    pub panic_ops: Vec<u64>,
    /// Sector reads (by sector number in `at`) returned with one bit
    /// flipped; the medium keeps the right bytes.
    pub flip_reads: Strike,
    /// Writes (by write number in `at`) that land at another sector-aligned
    /// offset nearby and leave their target as it was.
    pub misdirect: Strike,
    /// Sectors (by sector number in `at`) that turn out unreadable when
    /// read: the read fails with [`crate::DeviceError::Unreadable`], and so
    /// does every later read of the sector until it is written again.
    pub latent: Strike,
    /// Operations (by number in `at`) that take `spike_ns` longer.
    pub spikes: Strike,
    /// Extra virtual time of a latency spike.
    pub spike_ns: Nanos,
}

impl FaultPlan {
    /// A plan that loses power during write `n + 1`, tearing writes, choices seeded by `seed`.
    pub fn crash_after_writes(n: u64, seed: u64) -> Self {
        FaultPlan {
            crash_after_writes: Some(n),
            seed,
            tear: true,
            ..FaultPlan::default()
        }
    }

    /// Whether the plan corrupts what reads return (so a test must accept
    /// detected errors from reads).
    pub fn corrupts(&self) -> bool {
        !(self.flip_reads.is_off() && self.misdirect.is_off() && self.latent.is_off())
    }
}

/// splitmix64: fixed forever, so a seed names the same faults in every build.
#[derive(Debug, Clone)]
pub(super) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw in `0..n`.
    pub fn below_n(&mut self, n: u64) -> u64 {
        assert!(n > 0, "a draw from an empty range");
        self.next() % n
    }

    /// True with probability `p`.
    pub fn below(&mut self, p: f64) -> bool {
        debug_assert!((0.0..=1.0).contains(&p), "probability {p}");
        ((self.next() >> 11) as f64) < p * (1u64 << 53) as f64
    }
}
