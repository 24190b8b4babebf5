//! The seed's Tables 3.2 and 3.3 and its stated best block sizes beside the
//! model's Experiment 1, cell by cell.
//!
//! The best drive for a block size and pattern is the one with the highest
//! throughput (at one block size, MB/s and IOPS rank alike). The best block
//! size of a drive is the advisor's: the smallest block within
//! [`GOOD_ENOUGH`] of the drive's top MB/s — the seed reads its curves that
//! way ("up to 64kb the performance of flash drive increases, but, after
//! that, ... no significant development ... the best performance of flash
//! drive is shown at 64kb"). The block of the top MB/s itself is counted
//! too, as a second comparison: how the count depends on the rule.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::exp1::Exp1Row;
use super::DRIVES;
use crate::advisor::{BLOCK_SIZES, GOOD_ENOUGH, PATTERNS};
use crate::lab::LabError;
use crate::profile::Pattern;
use crate::report::{f, size_label};

const SEED: &str = include_str!("../../data/seed000.toml");

/// One cell: what the seed says and what the model gives.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    pub pattern: String,
    /// The block size (Tables 3.2 and 3.3) or the drive (best block sizes).
    pub row: String,
    pub seed: String,
    pub model: String,
    pub agrees: bool,
    /// A model parameter was fitted to this cell: its agreement is not evidence.
    pub fitted: bool,
    /// The seed's sentence stating the cell (best block sizes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub says: Option<String>,
    /// Why the model answers otherwise, where that is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One of the seed's tables beside the model's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub name: String,
    pub title: String,
    pub cells: Vec<Cell>,
    pub agree: usize,
    pub total: usize,
    /// Agreeing cells a parameter was fitted to.
    pub agree_fitted: usize,
}

#[derive(Deserialize)]
struct Seed {
    table_3_2: BTreeMap<String, Vec<String>>,
    table_3_3: BTreeMap<String, Vec<String>>,
    best_block: Vec<Stated>,
}

#[derive(Deserialize)]
struct Stated {
    drive: String,
    pattern: String,
    kb: u64,
    says: String,
}

fn seed() -> Result<Seed, LabError> {
    toml::from_str(SEED).map_err(|e| LabError::Data(format!("seed000.toml: {e}")))
}

/// Cells a model parameter was fitted to: `hdd-ide-41m`'s media rate puts
/// the disk ahead of the flash drive at 16 KB and behind it at 64 KB.
const FITTED: [(&str, &str, u64); 2] =
    [("table_3_2", "sr", 16 << 10), ("table_3_2", "sr", 64 << 10)];

/// The three comparisons: Table 3.2, Table 3.3, the stated best block
/// sizes (the advisor's rule), and the same at the top MB/s.
pub fn all(rows: &[Exp1Row]) -> Result<Vec<Comparison>, LabError> {
    let s = seed()?;
    let no_ssd: Vec<&str> = DRIVES
        .iter()
        .map(|d| d.key)
        .filter(|k| *k != "ssd")
        .collect();
    let every: Vec<&str> = DRIVES.iter().map(|d| d.key).collect();
    Ok(vec![
        winners(
            "table_3_2",
            "Table 3.2: best drive without the SSD",
            &s.table_3_2,
            &no_ssd,
            rows,
        )?,
        winners(
            "table_3_3",
            "Table 3.3: best drive",
            &s.table_3_3,
            &every,
            rows,
        )?,
        best_blocks("best_block", &s.best_block, rows, Rule::GoodEnough)?,
        best_blocks("best_block_top", &s.best_block, rows, Rule::Top)?,
    ])
}

fn mb_per_s(rows: &[Exp1Row], key: &str, pattern: &str, bs: u64) -> Option<f64> {
    let preset = DRIVES.iter().find(|d| d.key == key)?.preset;
    rows.iter()
        .find(|r| r.device == preset && r.pattern == pattern && r.block_size == bs)
        .map(|r| r.mb_per_s)
}

/// A table of best drives: block sizes down, patterns across.
fn winners(
    name: &str,
    title: &str,
    table: &BTreeMap<String, Vec<String>>,
    drives: &[&str],
    rows: &[Exp1Row],
) -> Result<Comparison, LabError> {
    let mut cells = Vec::new();
    for bs in BLOCK_SIZES {
        let said = table
            .get(&size_label(bs))
            .filter(|v| v.len() == PATTERNS.len())
            .ok_or_else(|| LabError::Data(format!("seed000.toml: {name} has no {bs} row")))?;
        for (p, seed) in PATTERNS.iter().zip(said) {
            let code = p.code();
            let best = drives
                .iter()
                .filter_map(|k| Some((*k, mb_per_s(rows, k, code, bs)?)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let Some((model, _)) = best else { continue };
            cells.push(Cell {
                pattern: code.to_string(),
                row: size_label(bs),
                seed: seed.clone(),
                model: model.to_string(),
                agrees: model == seed,
                fitted: FITTED.contains(&(name, code, bs)),
                says: None,
                reason: (model != seed).then(|| winner_reason(rows, seed, model, *p, bs)),
            });
        }
    }
    Ok(count(name, title, cells))
}

/// What the models lack or have that decides a cell between two kinds of
/// drive: (seed's winner, model's winner, writes, in short, why).
const MECHANISMS: [(&str, &str, bool, &str, &str); 2] = [
    (
        "ssd",
        "hdd",
        false,
        "no read-ahead in the FTL model",
        "the FTL model has no read-ahead, so each sequential request pays the SSD's command and a NAND read, \
         while the disk's read-ahead serves it from its buffer; SSD controllers of 2010 prefetched sequential reads",
    ),
    (
        "ssd",
        "hdd",
        true,
        "no write cache in the SSD's preset",
        "the SSD's preset has no write cache (the page FTL can model one, `write_cache`, but one chosen to \
         win this cell would be a fit), so a write waits for its pages' program, while the disk's write \
         cache takes it at once; the seed's SSD had a DRAM buffer the preset leaves out",
    ),
];

/// The mechanism that decides a cell the seed gives to `seed` and the
/// model to `model`, in a few words, where it is known.
pub fn mechanism(seed: &str, model: &str, pattern: &str) -> Option<&'static str> {
    let writes = PATTERNS
        .iter()
        .find(|p| p.code() == pattern)
        .is_some_and(|p| p.writes());
    MECHANISMS
        .iter()
        .find(|m| m.0 == seed && m.1 == model && m.2 == writes)
        .map(|m| m.3)
}

/// Why the model's best drive is not the seed's: both drives' rates and,
/// where known, the mechanism that decides between them.
fn winner_reason(rows: &[Exp1Row], seed: &str, model: &str, p: Pattern, bs: u64) -> String {
    let rate = |k: &str| mb_per_s(rows, k, p.code(), bs).map_or("-".into(), |v| f(v, 2));
    let why = MECHANISMS
        .iter()
        .find(|m| m.0 == seed && m.1 == model && m.2 == p.writes())
        .map_or(String::new(), |m| format!(": {}", m.4));
    format!(
        "model {model} {} MB/s against {seed} {} MB/s{why}",
        rate(model),
        rate(seed)
    )
}

#[derive(Clone, Copy)]
enum Rule {
    GoodEnough,
    Top,
}

/// A drive's best block for a pattern under `rule`, with its MB/s curve.
fn best_of(rows: &[Exp1Row], key: &str, pattern: &str, rule: Rule) -> Option<u64> {
    let curve: Vec<(u64, f64)> = BLOCK_SIZES
        .iter()
        .filter_map(|&bs| Some((bs, mb_per_s(rows, key, pattern, bs)?)))
        .collect();
    let top = curve.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    match rule {
        Rule::Top => Some(top.0),
        Rule::GoodEnough => curve
            .iter()
            .find(|c| c.1 >= GOOD_ENOUGH * top.1)
            .map(|c| c.0),
    }
}

fn best_blocks(
    name: &str,
    stated: &[Stated],
    rows: &[Exp1Row],
    rule: Rule,
) -> Result<Comparison, LabError> {
    let title = match rule {
        Rule::GoodEnough => format!(
            "Best block sizes stated in section 3.4.1 (model: smallest block within {:.0} % of the top MB/s)",
            GOOD_ENOUGH * 100.0
        ),
        Rule::Top => "Best block sizes stated in section 3.4.1 (model: block of the top MB/s)".into(),
    };
    let mut cells = Vec::new();
    for s in stated {
        let Some(model) = best_of(rows, &s.drive, &s.pattern, rule) else {
            continue;
        };
        let seed = s.kb << 10;
        cells.push(Cell {
            pattern: s.pattern.clone(),
            row: s.drive.clone(),
            seed: size_label(seed),
            model: size_label(model),
            agrees: model == seed,
            fitted: false,
            says: Some(s.says.clone()),
            reason: (model != seed).then(|| block_reason(rows, &s.drive, &s.pattern, seed, model)),
        });
    }
    Ok(count(name, &title, cells))
}

/// How a best block differs when the model's is smaller than the seed's,
/// and when it is larger: the words [`block_reason`] opens with.
pub const FLATTENS: &str = "the model's curve flattens earlier";
pub const RISES: &str = "the model's curve rises on";

/// Why the model's best block differs from the seed's: the model's rates
/// at both, which say whether its curve flattens earlier or rises on.
fn block_reason(rows: &[Exp1Row], key: &str, pattern: &str, seed: u64, model: u64) -> String {
    let at = |bs| mb_per_s(rows, key, pattern, bs).unwrap_or(f64::NAN);
    let top = BLOCK_SIZES.iter().map(|&b| at(b)).fold(f64::NAN, f64::max);
    let (s, m) = (at(seed), at(model));
    if model < seed {
        format!(
            "{FLATTENS}: {} MB/s at {} is already {:.0} % of its top {} MB/s ({} MB/s at the seed's {})",
            f(m, 2),
            size_label(model),
            100.0 * m / top,
            f(top, 2),
            f(s, 2),
            size_label(seed)
        )
    } else {
        format!(
            "{RISES}: {} MB/s at the seed's {} is {:.0} % of its top {} MB/s, reached at {}",
            f(s, 2),
            size_label(seed),
            100.0 * s / top,
            f(top, 2),
            size_label(model)
        )
    }
}

fn count(name: &str, title: &str, cells: Vec<Cell>) -> Comparison {
    let agree = cells.iter().filter(|c| c.agrees).count();
    let agree_fitted = cells.iter().filter(|c| c.agrees && c.fitted).count();
    Comparison {
        name: name.to_string(),
        title: title.to_string(),
        total: cells.len(),
        agree,
        agree_fitted,
        cells,
    }
}
