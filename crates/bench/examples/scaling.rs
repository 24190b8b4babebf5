//! How much a second thread adds on this machine, with no engine at all: a
//! control for the benchmark's "2 threads ≥ 1.8× one" target. Two loops
//! that share nothing, each run on one thread and then split over two:
//! `compute` (multiplications in registers) and `memory` (dependent reads at
//! random over 128 MiB, as a B-tree descent that misses the caches). Prints
//! the rate of two threads over one per round, and its spread.
//!
//! `cargo run --release -p flashkv-bench --example scaling -- --rounds 20`

use std::time::Instant;

use clap::Parser;

#[derive(Parser, Debug)]
#[command(about = "A second thread's gain on this machine for two loops that share nothing")]
struct Args {
    /// Rounds per loop (each: one thread, then two threads).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
    rounds: u32,
    /// Print one JSON object (per loop: the ratios and their min, median, max).
    #[arg(long)]
    json: bool,
}

/// Words of the memory loop's table (128 MiB).
const WORDS: usize = 16 << 20;

fn next(x: u64) -> u64 {
    x.wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407)
}

/// `n` steps of a register-only loop (about 0.4 s for 60M on the 2-core CI machine).
fn compute(seed: u64, n: usize) -> u64 {
    (0..n).fold(seed, |x, _| next(x) ^ (x >> 13))
}

/// `n` descents of four dependent random reads, then 8 neighbouring words.
fn memory(table: &[u64], seed: u64, n: usize) -> u64 {
    let (mut x, mut sum) = (seed, 0u64);
    for _ in 0..n {
        x = next(x);
        let mut i = (x >> 20) as usize % table.len();
        for _ in 0..4 {
            let v = table[i];
            sum = sum.wrapping_add(v);
            i = ((v ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize % table.len();
        }
        sum = (0..8).fold(sum, |s, j| s.wrapping_add(table[(i + j) % table.len()]));
    }
    sum
}

/// A loop: `work(seed, ops)`.
type Work<'a> = &'a (dyn Fn(u64, usize) -> u64 + Sync);

/// Two threads' rate over one thread's, for `work`.
fn ratio(ops: usize, work: Work) -> f64 {
    let t = Instant::now();
    std::hint::black_box(work(1, ops));
    let one = t.elapsed().as_secs_f64();
    let t = Instant::now();
    std::thread::scope(|s| {
        let a = s.spawn(|| work(2, ops / 2));
        let b = s.spawn(|| work(3, ops - ops / 2));
        std::hint::black_box(a.join().expect("no panic") ^ b.join().expect("no panic"));
    });
    one / t.elapsed().as_secs_f64()
}

fn main() {
    let args = Args::parse();
    let table: Vec<u64> = (0..WORDS as u64).map(next).collect();
    let loops: [(&str, usize, Work); 2] = [
        ("compute", 60_000_000, &compute),
        ("memory", 1_200_000, &|seed, n| memory(&table, seed, n)),
    ];
    let mut out = serde_json::Map::new();
    for (name, ops, work) in loops {
        let mut r: Vec<f64> = (0..args.rounds).map(|_| ratio(ops, work)).collect();
        let rounds = r.clone();
        r.sort_by(f64::total_cmp);
        let n = r.len();
        let (min, median, max) = (r[0], (r[(n - 1) / 2] + r[n / 2]) / 2.0, r[n - 1]);
        if !args.json {
            println!(
                "{name}: two threads {median:.2}× one (median of {n} rounds; {min:.2}–{max:.2})"
            );
        }
        let summary =
            serde_json::json!({ "min": min, "median": median, "max": max, "rounds": rounds });
        out.insert(name.into(), summary);
    }
    if args.json {
        println!("{}", serde_json::Value::Object(out));
    }
}
