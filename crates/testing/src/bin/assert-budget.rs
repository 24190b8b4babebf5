//! Prints the assertion budget of the engine's core crates: functions,
//! assertions and assertions per function over each crate's non-test code.
//! Exits 1 when a crate has fewer than one assertion per three functions.
//! `--files` also prints each file's counts.

use std::path::Path;
use std::process::ExitCode;

use flashkv_testing::budget::{count_crate, count_files};

/// The crates held to the budget.
const CRATES: [&str; 3] = ["device", "engine", "hybrid"];

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let files = std::env::args().any(|a| a == "--files");
    let mut ok = true;
    println!(
        "{:<8} {:>9} {:>10} {:>6}",
        "crate", "functions", "assertions", "ratio"
    );
    for name in CRATES {
        let b = match count_crate(&root.join("crates").join(name).join("src")) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("assert-budget: crates/{name}/src: {e}");
                return ExitCode::from(2);
            }
        };
        let mark = if b.within() { "" } else { "  (under 1 per 3)" };
        println!(
            "{name:<8} {:>9} {:>10} {:>6.2}{mark}",
            b.functions,
            b.assertions,
            b.ratio()
        );
        ok &= b.within();
        if files {
            let src = root.join("crates").join(name).join("src");
            for (path, f) in count_files(&src).unwrap_or_default() {
                let path = path.strip_prefix(&src).unwrap_or(&path);
                println!(
                    "  {:<30} {:>5} {:>5}",
                    path.display(),
                    f.functions,
                    f.assertions
                );
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
