//! Seed 001's headline ratios (chapter 6), held at small operation counts so
//! they cannot regress: in-page logging against in-place on `nand-ipl`.

use flashkv_lab::ipl::{hypotheses, Config, Layout, Row};

fn cfg() -> Config {
    Config {
        // Enough for a relation of a few full erase units: the in-place store
        // rewrites only a unit's written pages, so a relation of one partly
        // written unit makes its updates cheap (the seed always counts 32).
        max_ops: 2000,
        step: 1000,
        sweep_ops: 0,
        sweep_rel: 0,
        sweep_buffers: Vec::new(),
        log_sectors: Vec::new(),
        seed: 7,
    }
}

/// The longest run of `e`: (in-place, ipl).
fn pair(l: &Layout, e: &str) -> (Row, Row) {
    let pick = |store| {
        hypotheses("nand-ipl", store, l, &cfg())
            .unwrap()
            .into_iter()
            .filter(|r| r.experiment == e)
            .max_by_key(|r| r.ops)
            .unwrap()
    };
    (pick("in-place"), pick("ipl"))
}

fn ratio(ipl: u64, inplace: u64) -> f64 {
    ipl as f64 / inplace as f64
}

#[test]
fn h1_1_and_h3_halve_writes_erases_and_runtime() {
    for e in ["h1.1", "h3"] {
        let (a, b) = pair(&Layout::seed(), e);
        let about_half = 0.4..=0.6;
        assert!(
            about_half.contains(&ratio(b.writes, a.writes)),
            "{e} writes: {a:?} {b:?}"
        );
        assert!(
            about_half.contains(&ratio(b.erases, a.erases)),
            "{e} erases: {a:?} {b:?}"
        );
        assert!(
            about_half.contains(&(b.est_ms / a.est_ms)),
            "{e} runtime: {a:?} {b:?}"
        );
        // The seed: ~45 % fewer reads in H3.
        assert!(ratio(b.reads, a.reads) < 0.7, "{e} reads: {a:?} {b:?}");
    }
}

#[test]
fn h1_2_bulk_insert_is_identical_without_erases() {
    let (a, b) = pair(&Layout::seed(), "h1.2");
    assert!(a.writes > 0, "{a:?}");
    assert_eq!((a.reads, a.writes, a.erases), (b.reads, b.writes, b.erases));
    assert_eq!(a.erases, 0);
}

#[test]
fn h2_reads_write_nothing_and_ipl_reads_a_little_more() {
    for e in ["h2.1", "h2.2"] {
        let (a, b) = pair(&Layout::seed(), e);
        assert_eq!(
            (a.writes, a.erases, b.writes, b.erases),
            (0, 0, 0, 0),
            "{e}"
        );
        assert!(a.reads > 0, "{e}: {a:?}");
        let r = ratio(b.reads, a.reads);
        assert!((1.0..=1.1).contains(&r), "{e} reads: {a:?} {b:?}");
    }
}

#[test]
fn shared_log_cuts_h3_erases_tenfold_and_runtime_threefold() {
    let (a, b) = pair(&Layout::shared(), "h3");
    assert!(a.erases >= 10 * b.erases.max(1), "{a:?} {b:?}");
    assert!(a.est_ms >= 3.0 * b.est_ms, "{a:?} {b:?}");
}

#[test]
fn more_log_sectors_per_page_mean_fewer_erases() {
    let (_, one) = pair(&Layout::seed(), "h1.1");
    let (_, four) = pair(&Layout::sectors_per_page(4), "h1.1");
    assert!(four.erases < one.erases, "{one:?} {four:?}");
}

#[test]
fn counts_are_deterministic() {
    let run = || {
        serde_json::to_value(hypotheses("nand-ipl", "ipl", &Layout::seed(), &cfg()).unwrap())
            .unwrap()
    };
    assert_eq!(run(), run());
}
