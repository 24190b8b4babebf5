//! Seed 000's rows of the scorecard: Tables 3.2 and 3.3 and the best block
//! sizes its section 3.4.1 states, each with the model's agreement count
//! and, where cells differ, which and why in a line.

use super::compare::{mechanism, Cell, Comparison, FLATTENS, RISES};
use super::DRIVES;
use crate::scorecard::Claim;

/// The test that holds these rows (their counts, verdicts and reasons).
const TEST: &str = "seed000.rs: the_scorecard_gives_each_table_its_count_and_reasons";

/// One claim per counted comparison: reproduced when every cell agrees (a
/// best drive or a best block is the same or it is not).
pub fn claims(comparisons: &[Comparison]) -> Vec<Claim> {
    comparisons
        .iter()
        .filter_map(|c| {
            let (source, claim, what) = match c.name.as_str() {
                "table_3_2" => (
                    "seed 000, Table 3.2",
                    "the best drive without the SSD, per block size (4 KB – 1 MB) and pattern",
                    "best drives",
                ),
                "table_3_3" => (
                    "seed 000, Table 3.3",
                    "the best of the five drives, per block size (4 KB – 1 MB) and pattern",
                    "best drives",
                ),
                "best_block" => (
                    "seed 000, section 3.4.1",
                    "each drive's best block size, as the text states it (the advisor's 90 % rule)",
                    "best block sizes",
                ),
                _ => return None,
            };
            let fitted = match c.agree_fitted {
                0 => String::new(),
                n => format!(" ({n} fitted)"),
            };
            Some(Claim {
                source: source.into(),
                claim: claim.into(),
                published: format!("{} {what}", c.total),
                ours: format!("{} of {} agree{fitted}", c.agree, c.total),
                tolerance: "every cell the same".into(),
                reproduced: c.agree == c.total,
                checked: true,
                why: why(c),
                test: TEST.into(),
            })
        })
        .collect()
}

/// The preset of a drive key of the seed's tables.
fn preset(key: &str) -> &str {
    DRIVES
        .iter()
        .find(|d| d.key == key)
        .map_or(key, |d| d.preset)
}

fn why(c: &Comparison) -> String {
    let differ: Vec<&Cell> = c.cells.iter().filter(|x| !x.agrees).collect();
    if differ.is_empty() {
        return match c.agree_fitted {
            0 => "every cell agrees".into(),
            n => format!(
                "every cell agrees; a model parameter was fitted to {n} of them, the other {} are evidence",
                c.total - n
            ),
        };
    }
    if c.name.starts_with("table") {
        let cells: Vec<String> = differ
            .iter()
            .map(|x| {
                let how = mechanism(&x.seed, &x.model, &x.pattern)
                    .unwrap_or("the section gives both drives' rates");
                format!(
                    "{} {}: {} ahead of {} ({how})",
                    x.row,
                    x.pattern,
                    preset(&x.model),
                    preset(&x.seed)
                )
            })
            .collect();
        return format!("{} differ: {}", differ.len(), cells.join("; "));
    }
    let group = |opening: &str| -> Option<String> {
        let cells: Vec<String> = differ
            .iter()
            .filter(|x| x.reason.as_deref().is_some_and(|r| r.starts_with(opening)))
            .map(|x| {
                format!(
                    "{} {} (seed {}, model {})",
                    preset(&x.row),
                    x.pattern,
                    x.seed,
                    x.model
                )
            })
            .collect();
        (!cells.is_empty()).then(|| format!("{opening}: {}", cells.join(", ")))
    };
    let parts: Vec<String> = [RISES, FLATTENS].into_iter().filter_map(group).collect();
    format!("{} differ — {}", differ.len(), parts.join("; "))
}
