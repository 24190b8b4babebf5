//! `flashkv devices`: the presets and their parameters.

use std::process::ExitCode;

use clap::Args;
use flashkv_device::presets;

use crate::error::{print_json, CliError};

/// List the built-in device presets (name, kind, capacity, source), or with
/// --json every parameter. A preset's fields are those a --spec file takes.
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
    }
    println!(
        "\n`flashkv devices --json` prints every parameter; a --spec file takes the same fields."
    );
    Ok(ExitCode::SUCCESS)
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
