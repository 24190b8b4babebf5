//! Holds the core crates to at least one assertion per three functions of
//! non-test code (`scripts/assert-budget` prints the counts).

use std::path::Path;

use flashkv_testing::budget::{count_crate, Budget};

fn budget(name: &str) -> Budget {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates")
        .join(name)
        .join("src");
    count_crate(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()))
}

fn check(name: &str) {
    let b = budget(name);
    eprintln!(
        "{name}: {} functions, {} assertions",
        b.functions, b.assertions
    );
    assert!(b.functions > 50, "{name}: too few functions found: {b:?}");
    assert!(
        b.within(),
        "{name}: {} assertions for {} functions, under 1 per 3 (scripts/assert-budget)",
        b.assertions,
        b.functions
    );
}

#[test]
fn device_holds_one_assertion_per_three_functions() {
    check("device");
}

#[test]
fn hybrid_holds_one_assertion_per_three_functions() {
    check("hybrid");
}

#[test]
fn engine_holds_one_assertion_per_three_functions() {
    check("engine");
}
