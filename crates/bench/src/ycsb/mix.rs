//! The six core workloads (Cooper et al., "Benchmarking Cloud Serving
//! Systems with YCSB", SoCC 2010; the `workloads/workload[a-f]` files) and
//! the operation stream of one client thread.
//!
//! Each thread's stream comes from the seed alone, so every engine gets the
//! same keys in the same order. A thread reads and scans the loaded
//! records and the records it inserted itself: YCSB resolves "latest"
//! against the inserts every thread has acknowledged, which depends on
//! timing; a thread's own inserts keep the stream deterministic, never
//! name a key not yet written, and still put the newest keys first.

use rand::{rngs::SmallRng, Rng, SeedableRng};

use super::gen::{ScrambledZipfian, Zipfian, ZIPF_THETA};

/// An operation type, as YCSB reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Read,
    Update,
    Insert,
    Scan,
    /// Read-modify-write: a read, then a durable write of the whole record.
    Rmw,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Read,
        Kind::Update,
        Kind::Insert,
        Kind::Scan,
        Kind::Rmw,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Update => "update",
            Kind::Insert => "insert",
            Kind::Scan => "scan",
            Kind::Rmw => "rmw",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// How a workload picks the keys it reads and updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    /// YCSB's scrambled Zipfian, constant 0.99.
    Zipfian,
    /// Zipfian over recency: the newest record is the most popular.
    Latest,
}

/// One core workload.
#[derive(Debug)]
pub struct Workload {
    pub letter: char,
    /// The letter as a string (a figure's category).
    pub name: &'static str,
    pub what: &'static str,
    /// Proportions of the operation types, summing to 1.
    pub mix: &'static [(Kind, f64)],
    pub dist: Dist,
}

impl Workload {
    /// Whether the workload writes (and so ends with a close).
    pub fn writes(&self) -> bool {
        self.mix
            .iter()
            .any(|(k, _)| *k != Kind::Read && *k != Kind::Scan)
    }

    fn share(&self, kind: Kind) -> f64 {
        self.mix
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, p)| p)
            .sum()
    }
}

/// The longest scan (workload E: `maxscanlength=100`, uniform from 1).
pub const MAX_SCAN: usize = 100;

pub const WORKLOADS: [Workload; 6] = [
    Workload {
        letter: 'A',
        name: "A",
        what: "50/50 read/update, zipfian",
        mix: &[(Kind::Read, 0.5), (Kind::Update, 0.5)],
        dist: Dist::Zipfian,
    },
    Workload {
        letter: 'B',
        name: "B",
        what: "95/5 read/update, zipfian",
        mix: &[(Kind::Read, 0.95), (Kind::Update, 0.05)],
        dist: Dist::Zipfian,
    },
    Workload {
        letter: 'C',
        name: "C",
        what: "read only, zipfian",
        mix: &[(Kind::Read, 1.0)],
        dist: Dist::Zipfian,
    },
    Workload {
        letter: 'D',
        name: "D",
        what: "95/5 read/insert, read latest",
        mix: &[(Kind::Read, 0.95), (Kind::Insert, 0.05)],
        dist: Dist::Latest,
    },
    Workload {
        letter: 'E',
        name: "E",
        what: "95/5 scan (1–100 pairs)/insert, zipfian",
        mix: &[(Kind::Scan, 0.95), (Kind::Insert, 0.05)],
        dist: Dist::Zipfian,
    },
    Workload {
        letter: 'F',
        name: "F",
        what: "50/50 read/read-modify-write, zipfian",
        mix: &[(Kind::Read, 0.5), (Kind::Rmw, 0.5)],
        dist: Dist::Zipfian,
    },
];

/// The workload named by `letter` (either case).
pub fn by_letter(letter: char) -> Option<&'static Workload> {
    WORKLOADS
        .iter()
        .find(|w| w.letter == letter.to_ascii_uppercase())
}

/// One operation: its type, the record it names (a scan's first), and how
/// many pairs a scan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub kind: Kind,
    pub keynum: u64,
    pub scan_len: usize,
}

/// Where one thread's run sits: its index, the thread count, the records
/// loaded, its operation count, and the key numbers its inserts take:
/// `insert_base + thread × stride` on (`stride` ≥ every thread's `ops`).
#[derive(Debug, Clone, Copy)]
pub struct Place {
    pub seed: u64,
    pub thread: usize,
    pub threads: usize,
    pub records: u64,
    pub insert_base: u64,
    pub ops: u64,
    pub stride: u64,
}

/// The records a thread may name: the loaded ones, then its own inserts.
#[derive(Debug, Clone, Copy)]
struct View {
    records: u64,
    own_base: u64,
    own: u64,
}

impl View {
    fn len(&self) -> u64 {
        self.records + self.own
    }

    fn keynum(&self, i: u64) -> u64 {
        debug_assert!(i < self.len());
        match i.checked_sub(self.records) {
            None => i,
            Some(j) => self.own_base + j,
        }
    }
}

enum Chooser {
    Zipfian(ScrambledZipfian),
    Latest(Zipfian),
}

/// One thread's operations, in order.
pub struct Stream {
    w: &'static Workload,
    rng: SmallRng,
    view: View,
    chooser: Chooser,
    left: u64,
}

/// A seed for (`seed`, workload, thread, thread count), mixed (SplitMix64).
fn stream_seed(seed: u64, letter: char, thread: usize, threads: usize) -> u64 {
    let mut x =
        seed ^ (u64::from(letter) << 56) ^ ((thread as u64) << 32) ^ ((threads as u64) << 16);
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Stream {
    pub fn new(w: &'static Workload, p: Place) -> Stream {
        assert!(p.records >= 1 && p.thread < p.threads && p.ops <= p.stride);
        let view = View {
            records: p.records,
            own_base: p.insert_base + p.thread as u64 * p.stride,
            own: 0,
        };
        // As YCSB sizes its key chooser: room for twice the expected inserts.
        let expected = (p.ops as f64 * w.share(Kind::Insert) * 2.0) as u64;
        let chooser = match w.dist {
            Dist::Zipfian => Chooser::Zipfian(ScrambledZipfian::new(p.records + expected)),
            Dist::Latest => Chooser::Latest(Zipfian::new(p.records, ZIPF_THETA)),
        };
        Stream {
            w,
            rng: SmallRng::seed_from_u64(stream_seed(p.seed, w.letter, p.thread, p.threads)),
            view,
            chooser,
            left: p.ops,
        }
    }

    fn kind(&mut self) -> Kind {
        let mut u: f64 = self.rng.gen();
        for &(k, p) in self.w.mix {
            if u < p {
                return k;
            }
            u -= p;
        }
        self.w.mix[self.w.mix.len() - 1].0
    }

    /// A record this thread has seen written, by the workload's distribution.
    fn existing(&mut self) -> u64 {
        let len = self.view.len();
        let i = match &mut self.chooser {
            Chooser::Zipfian(z) => loop {
                // Redrawn past the records written so far, as YCSB does.
                let i = z.next(&mut self.rng);
                if i < len {
                    break i;
                }
            },
            Chooser::Latest(z) => len - 1 - z.next(&mut self.rng, len),
        };
        self.view.keynum(i)
    }
}

impl Iterator for Stream {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        self.left = self.left.checked_sub(1)?;
        let kind = self.kind();
        let (keynum, scan_len) = match kind {
            Kind::Insert => {
                let k = self.view.own_base + self.view.own;
                self.view.own += 1;
                (k, 0)
            }
            Kind::Scan => {
                let k = self.existing();
                (k, self.rng.gen_range(1..=MAX_SCAN))
            }
            _ => (self.existing(), 0),
        };
        Some(Op {
            kind,
            keynum,
            scan_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(thread: usize, threads: usize) -> Place {
        Place {
            seed: 5,
            thread,
            threads,
            records: 1000,
            insert_base: 1000,
            ops: 2000,
            stride: 2000,
        }
    }

    #[test]
    fn a_stream_is_its_seed_and_names_only_written_records() {
        for w in &WORKLOADS {
            let a: Vec<Op> = Stream::new(w, place(1, 4)).collect();
            let b: Vec<Op> = Stream::new(w, place(1, 4)).collect();
            assert_eq!(a, b, "workload {}", w.letter);
            assert_eq!(a.len(), 2000);
            assert_ne!(a, Stream::new(w, place(2, 4)).collect::<Vec<_>>());
            let mut own = Vec::new();
            for op in &a {
                match op.kind {
                    Kind::Insert => {
                        assert_eq!(op.keynum, 1000 + 2000 + own.len() as u64);
                        own.push(op.keynum);
                    }
                    _ => assert!(op.keynum < 1000 || own.contains(&op.keynum), "{op:?}"),
                }
                assert_eq!(op.kind == Kind::Scan, (1..=MAX_SCAN).contains(&op.scan_len));
            }
        }
    }

    #[test]
    fn mixes_come_out_in_their_proportions() {
        for w in &WORKLOADS {
            let mut n = [0u32; 5];
            for op in Stream::new(w, place(0, 1)) {
                n[op.kind.index()] += 1;
            }
            for &(k, p) in w.mix {
                let got = f64::from(n[k.index()]) / 2000.0;
                assert!((got - p).abs() < 0.04, "{} {k:?}: {got}", w.letter);
            }
            let total: u32 = n.iter().sum();
            assert_eq!(total, 2000);
        }
    }

    #[test]
    fn read_latest_favours_the_newest_records() {
        let d = by_letter('d').unwrap();
        let ops: Vec<Op> = Stream::new(d, place(0, 1)).collect();
        let reads: Vec<u64> = ops
            .iter()
            .filter(|o| o.kind == Kind::Read)
            .map(|o| o.keynum)
            .collect();
        // Most reads name the newest records: own inserts or the last loaded.
        let recent = reads.iter().filter(|&&k| k >= 900).count();
        assert!(recent * 2 > reads.len(), "{recent} of {}", reads.len());
    }
}
