//! `flashkv devices`: the presets and their parameters.

use std::process::ExitCode;

use clap::Args;
use flashkv_device::{presets, Calibration};

use crate::error::{print_json, CliError};

/// List the built-in device presets (name, kind, capacity, source) with what
/// each was calibrated to: the parameters fitted to which source figure
/// (reproducing those figures shows nothing), the figures it predicts (held
/// out), and what it takes as given; or with --json every parameter. A
/// preset's fields are those a --spec file takes.
#[derive(Args)]
pub struct DevicesArgs {
    /// Print every preset with all its parameters as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(a: DevicesArgs) -> Result<ExitCode, CliError> {
    let all = presets::all();
    if a.json {
        print_json(&all)?;
        return Ok(ExitCode::SUCCESS);
    }
    let w = all.iter().map(|s| s.name.len()).max().unwrap_or(4);
    println!(
        "{:<w$}  {:<5}  {:>10}  description (source)",
        "name", "kind", "capacity"
    );
    for s in all {
        println!(
            "{:<w$}  {:<5}  {:>10}  {}",
            s.name,
            s.model.kind(),
            human(s.capacity),
            s.description
        );
        println!("{:<w$}  {:<5}  {:>10}  source: {}", "", "", "", s.source);
        let pad = format!("{:<w$}  {:<5}  {:>10}  ", "", "", "");
        for line in calibration_lines(&s.calibration) {
            println!("{pad}{line}");
        }
    }
    println!(
        "\n`flashkv devices --json` prints every parameter; a --spec file takes the same fields."
    );
    Ok(ExitCode::SUCCESS)
}

/// The preset's calibration, a line per fit, prediction and given.
fn calibration_lines(c: &Calibration) -> Vec<String> {
    let fits = c
        .fitted
        .iter()
        .map(|f| format!("fitted: {} ← {}", f.parameters.join(", "), f.figure));
    let predicts = c.predicts.iter().map(|p| format!("predicts: {p}"));
    let given = c.given.iter().map(|g| format!("given: {g}"));
    fits.chain(predicts).chain(given).collect()
}

fn human(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    format!("{v:.0} {}", U[i])
}
