//! A synthetic OLTP-like block trace in MSR Cambridge CSV on stdout: 20,000
//! requests of 4-64 KiB (4, 8, 16, 32 or 64 KiB, equally likely) over 4 GiB,
//! 40 % writes, 80 % of them 2 sectors (1 KiB) off a 4 KiB boundary, as a
//! database with 512-byte sectors issues them; one request per millisecond.
//! Fixed seed, so the trace (and a replay's figures) never change:
//!
//! ```sh
//! cargo run -p flashkv-hybrid --example oltp_trace > /tmp/oltp.csv
//! flashkv replay --trace /tmp/oltp.csv --format msr --back-to-back --hybrid nvme,hdd-7200
//! ```

use std::io::{BufWriter, Write};

use rand::{Rng, SeedableRng};

const REQUESTS: u64 = 20_000;
const SPAN: u64 = 4 << 30;

fn main() -> std::io::Result<()> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let mut out = BufWriter::new(std::io::stdout().lock());
    for i in 0..REQUESTS {
        let size = 4096u64 << rng.gen_range(0..5);
        let block = rng.gen_range(0..(SPAN - (64 << 10)) / 4096);
        let skew = if rng.gen_bool(0.8) { 1024 } else { 0 };
        let kind = if rng.gen_bool(0.4) { "Write" } else { "Read" };
        // Timestamps in 100 ns ticks.
        let t = 128_166_372_000_000_000 + i * 10_000;
        writeln!(out, "{t},oltp,0,{kind},{},{size},0", block * 4096 + skew)?;
    }
    out.flush()
}
