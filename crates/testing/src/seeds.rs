//! Seeded cases: every case is a function of one seed, a failing case
//! prints it, and `FLASHKV_SEED=<n>` reruns exactly that case.

use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How many cases ran, and in how many the fault struck: the case says
/// whether it did (a write torn or lost by the crash inside the workload,
/// a write sent astray, a read corrupted or failed). A case whose fault
/// never struck tested nothing of the fault.
///
/// A case that ran with a memtable also says whether the memtable held
/// pairs when the fault struck (so the fault hit pairs held in memory
/// only, not just the tree): those counts are kept apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub cases: u64,
    pub struck: u64,
    /// Cases that ran with a memtable.
    pub memtable: u64,
    /// Cases whose fault struck while the memtable held pairs.
    pub held: u64,
}

/// A case that ran without a memtable: whether its fault struck.
impl From<bool> for Tally {
    fn from(struck: bool) -> Tally {
        Tally {
            cases: 1,
            struck: u64::from(struck),
            ..Tally::default()
        }
    }
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, t: Tally) {
        self.cases += t.cases;
        self.struck += t.struck;
        self.memtable += t.memtable;
        self.held += t.held;
    }
}

impl Tally {
    /// One case with a memtable: whether the fault struck, and whether
    /// the memtable held pairs then.
    pub fn memtable(struck: bool, held: bool) -> Tally {
        Tally {
            cases: 1,
            struck: u64::from(struck),
            memtable: 1,
            held: u64::from(struck && held),
        }
    }

    /// Asserts the memtable held pairs when the fault struck in at least
    /// `percent` of the cases that ran with one (when more than one ran).
    pub fn assert_held(&self, test: &str, percent: u64) {
        if self.cases > 1 {
            assert!(
                self.held * 100 >= self.memtable * percent,
                "{test}: the memtable held pairs at the fault in only {} of {} cases",
                self.held,
                self.memtable
            );
        }
    }

    /// Asserts the fault struck in at least `percent` of the cases, when
    /// more than one ran (a rerun of one seed proves nothing about the mix).
    pub fn assert_hits(&self, test: &str, percent: u64) {
        if self.cases > 1 {
            assert!(
                self.struck * 100 >= self.cases * percent,
                "{test}: the fault struck in only {} of {} cases",
                self.struck,
                self.cases
            );
        }
    }
}

/// The seed `FLASHKV_SEED` names, if any.
fn pinned() -> Option<u64> {
    let v = std::env::var("FLASHKV_SEED").ok()?;
    Some(
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("FLASHKV_SEED={v}: not a number")),
    )
}

/// Runs one case; on a panic names its seed, then lets the panic go on.
fn one<C: Into<Tally>>(test: &str, seed: u64, case: &mut impl FnMut(u64) -> C) -> Tally {
    match catch_unwind(AssertUnwindSafe(|| case(seed))) {
        Ok(hit) => hit.into(),
        Err(panic) => {
            eprintln!("\n{test}: case failed; rerun it with FLASHKV_SEED={seed} cargo test --profile ci {test}\n");
            resume_unwind(panic)
        }
    }
}

/// Runs `case` for every seed of `seeds`, or only for `FLASHKV_SEED` when
/// set (and no case when it lies outside `seeds`: it names another test's
/// case); `case` returns whether its fault struck, or a [`Tally`] (of the
/// several faults one seed ran, or with a memtable). Reports `<test>: <n>
/// fault cases run, <k> struck; memtable on in <m>, holding pairs at <h>`
/// on stderr, and appends it to the file `FLASHKV_CASE_LOG` names, if set
/// (`scripts/fault-cases` sums that file over a test run).
pub fn cases<C: Into<Tally>>(
    test: &str,
    seeds: Range<u64>,
    mut case: impl FnMut(u64) -> C,
) -> Tally {
    let seeds = match pinned() {
        Some(s) if seeds.contains(&s) => s..s + 1,
        Some(_) => 0..0,
        None => seeds,
    };
    let mut t = Tally::default();
    for seed in seeds {
        t += one(test, seed, &mut case);
    }
    report(&format!(
        "{test}: {} fault cases run, {} struck; memtable on in {}, holding pairs at {}\n",
        t.cases, t.struck, t.memtable, t.held
    ));
    t
}

/// A line on stderr, and on the case log if there is one: one append of
/// the whole line, so tests running at once do not interleave.
pub fn report(line: &str) {
    use std::io::Write;
    eprint!("{line}");
    if let Some(path) = std::env::var_os("FLASHKV_CASE_LOG") {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path);
        let written = log.and_then(|mut f| f.write_all(line.as_bytes()));
        assert!(written.is_ok(), "FLASHKV_CASE_LOG: {written:?}");
    }
}

/// Runs cases from a fresh seed on until `FLASHKV_SOAK_SECS` (default 60)
/// have passed, or only `FLASHKV_SEED` when set.
pub fn soak<C: Into<Tally>>(test: &str, mut case: impl FnMut(u64) -> C) -> Tally {
    if let Some(seed) = pinned() {
        return one(test, seed, &mut case);
    }
    let secs = std::env::var("FLASHKV_SOAK_SECS").map_or(60, |v| {
        v.trim()
            .parse()
            .unwrap_or_else(|_| panic!("FLASHKV_SOAK_SECS={v}: not a number"))
    });
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let (until, mut t) = (Instant::now() + Duration::from_secs(secs), Tally::default());
    let mut seed = start;
    while Instant::now() < until {
        t += one(test, seed, &mut case);
        seed = seed.wrapping_add(1);
    }
    eprintln!(
        "{test}: {} cases from seed {start} in {secs} s, the fault struck in {}",
        t.cases, t.struck
    );
    t
}
