//! The scorecard: one row per claim of a source document the lab checks,
//! built by each experiment from the figures it computed (never written by
//! hand), kept in `<experiment>/claims.json` and gathered at the top of
//! `summary.md` and `index.html`.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::lab::LabError;
use crate::report::md_cell as cell;

/// The file an experiment's claims are kept in, beside its section.
pub const CLAIMS_FILE: &str = "claims.json";

/// One claim of a seed and what the lab measured for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// Where the claim is made: the seed and its table or figure.
    pub source: String,
    /// What is claimed, in a few words.
    pub claim: String,
    /// The published figure.
    pub published: String,
    /// Ours, from this run.
    pub ours: String,
    /// How close counts as reproduced.
    pub tolerance: String,
    pub reproduced: bool,
    /// Whether this run checked the claim at all (an experiment that could
    /// not run says so, and `ours` and `why` say what was missing; one run
    /// at a scale too small for the claim, `--quick`, says that).
    #[serde(default = "yes")]
    pub checked: bool,
    /// One line: why it reproduced or not.
    pub why: String,
    /// The test that holds the claim (file and function).
    pub test: String,
}

fn yes() -> bool {
    true
}

/// Writes `claims` into the experiment folder `dir`.
pub fn write(dir: &Path, claims: &[Claim]) -> Result<(), LabError> {
    let path = dir.join(CLAIMS_FILE);
    crate::report::write_json(&path, &claims).map_err(|e| LabError::Output(path, e))
}

/// The claims an experiment's folder holds (none if it has no file).
pub fn read(dir: &Path) -> Vec<Claim> {
    std::fs::read_to_string(dir.join(CLAIMS_FILE))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// The scorecard as Markdown: a count, then one row per claim, each linked
/// to its experiment's section.
pub fn markdown(claims: &[(&str, Claim)]) -> String {
    let ok = claims.iter().filter(|(_, c)| c.reproduced).count();
    let unchecked = claims.iter().filter(|(_, c)| !c.checked).count();
    let skipped = match unchecked {
        0 => String::new(),
        n => format!(" ({n} not checked: the experiment could not run here, or not at this scale)"),
    };
    let mut md = format!(
        "## Scorecard\n\n{ok} of {} claims of the source documents reproduced in this run{skipped}. \
         Each row links to its section, which has the figures behind it.\n\n\
         | source | claim | published | ours | tolerance | verdict | held by |\n\
         |---|---|---|---|---|---|---|\n",
        claims.len()
    );
    for (exp, c) in claims {
        debug_assert!(
            c.checked || !c.reproduced,
            "an unchecked claim is not reproduced"
        );
        let verdict = match (c.checked, c.reproduced) {
            (false, _) => "**not checked**",
            (true, true) => "**reproduced**",
            (true, false) => "**not reproduced**",
        };
        let _ = writeln!(
            md,
            "| [{}](#{exp}) | {} | {} | {} | {} | {verdict}: {} | `{}` |",
            cell(&c.source),
            cell(&c.claim),
            cell(&c.published),
            cell(&c.ours),
            cell(&c.tolerance),
            cell(&c.why),
            cell(&c.test)
        );
    }
    md
}

/// `ours` within `tol` (a fraction) of `published`.
pub fn within(ours: f64, published: f64, tol: f64) -> bool {
    published != 0.0 && (ours / published - 1.0).abs() <= tol
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(reproduced: bool) -> Claim {
        Claim {
            source: "seed 9, Table 1".into(),
            claim: "a | b".into(),
            published: "10".into(),
            ours: "11".into(),
            tolerance: "±15 %".into(),
            reproduced,
            checked: true,
            why: "close".into(),
            test: "t.rs: f".into(),
        }
    }

    #[test]
    fn claims_round_trip_and_the_table_counts_them() {
        let dir = tempfile::tempdir().unwrap();
        let cs = vec![claim(true), claim(false)];
        write(dir.path(), &cs).unwrap();
        assert_eq!(read(dir.path()), cs);
        assert!(read(&dir.path().join("none")).is_empty());
        let md = markdown(&[("x", cs[0].clone()), ("x", cs[1].clone())]);
        assert!(md.contains("1 of 2 claims"));
        assert!(md.contains("a \\| b"), "pipes are escaped");
        assert_eq!(md.matches("| [seed 9, Table 1](#x) |").count(), 2);
        assert!(md.contains("**not reproduced**: close"));
        assert!(!md.contains("not checked"));
    }

    #[test]
    fn a_claim_not_checked_says_so_and_counts_apart() {
        let skipped = Claim {
            checked: false,
            reproduced: false,
            why: "skipped: missing fuse2fs".into(),
            ..claim(false)
        };
        let md = markdown(&[("x", claim(true)), ("y", skipped.clone())]);
        assert!(md.contains("1 of 2 claims"), "{md}");
        assert!(md.contains("(1 not checked: "), "{md}");
        assert!(
            md.contains("| **not checked**: skipped: missing fuse2fs |"),
            "{md}"
        );
        // Files from before the field read as checked.
        let old = r#"[{"source":"s","claim":"c","published":"1","ours":"1","tolerance":"t","reproduced":true,"why":"w","test":"t.rs: f"}]"#;
        let read: Vec<Claim> = serde_json::from_str(old).unwrap();
        assert!(read[0].checked);
    }

    #[test]
    fn within_is_relative() {
        assert!(within(115.0, 100.0, 0.15));
        assert!(!within(116.0, 100.0, 0.15));
        assert!(!within(1.0, 0.0, 0.15));
    }
}
