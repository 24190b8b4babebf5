//! `results/placement/`: the three tables, two plots, and seed 002's
//! conclusions as scorecard claims.

use super::{Config, Part, Row, Workload, RATE};
use crate::lab::{LabError, LabOptions, Section};
use crate::points::{self, Output};
use crate::report::{f, write_csv, write_json, Plot, Series, Table};
use crate::scorecard::Claim;

const TEST: &str = "placement.rs";

/// Mean of `v` over the at-a-glance rows of `w` and `c` (their seeds).
fn glance(rows: &[Row], w: Workload, c: Config, v: fn(&Row) -> f64) -> f64 {
    let xs: Vec<f64> = rows
        .iter()
        .filter(|r| r.part == Part::Glance && r.workload == w && r.config == c)
        .map(v)
        .collect();
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn mb(b: u64) -> String {
    f(b as f64 / 1e6, 1)
}

fn glance_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        format!("Placement at a glance: throughput (closed loop), then energy and latency at {RATE} transactions/s with each drive in standby after its break-even idle time (mean over seeds)"),
        &["workload", "config", "TPS", "of all-SSD", "SSD MB", "fast reads", "J/txn", "latency ms", "HDD standby"],
    );
    for w in Workload::ALL {
        let ssd = glance(rows, w, Config::Ssd, |r| r.tps);
        for c in Config::ALL {
            let g = |v: fn(&Row) -> f64| glance(rows, w, c, v);
            let span = g(|r| r.hdd_standby_s);
            let total = super::Size::of(false).arrivals as f64 / RATE;
            t.push(vec![
                w.name().into(),
                c.name().into(),
                f(g(|r| r.tps), 1),
                format!("{} %", f(100.0 * g(|r| r.tps) / ssd.max(1e-9), 0)),
                mb(g(|r| r.ssd_bytes as f64) as u64),
                format!("{} %", f(100.0 * g(|r| r.fast_read_share), 0)),
                f(g(|r| r.joules_per_txn), 2),
                f(g(|r| r.latency_mean_ms), 1),
                format!("{} %", f(100.0 * (span / total).min(1.0), 0)),
            ]);
        }
    }
    t
}

fn capacity_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "Capacity: the SSD sized to a share of the database, and the share of the all-SSD throughput each design gets".to_string(),
        &["workload", "config", "SSD % of db", "SSD MB", "TPS", "of all-SSD"],
    );
    for r in rows.iter().filter(|r| r.part == Part::Capacity) {
        let ssd = glance(rows, r.workload, Config::Ssd, |r| r.tps);
        t.push(vec![
            r.workload.name().into(),
            r.config.name().into(),
            format!("{} %", r.ssd_pct.unwrap_or(0)),
            mb(r.ssd_bytes),
            f(r.tps, 1),
            format!("{} %", f(100.0 * r.tps / ssd.max(1e-9), 0)),
        ]);
    }
    t
}

/// The standby row of the same drive and configuration that never sleeps.
fn never<'a>(rows: &'a [Row], r: &Row) -> Option<&'a Row> {
    rows.iter().find(|n| {
        n.part == Part::Standby
            && n.drive == r.drive
            && n.config == r.config
            && n.timeout_s.is_none()
    })
}

/// Share of the energy per transaction that `r` saves against `n`, the
/// same drive and set-up never sleeping.
fn saved(r: &Row, n: &Row) -> f64 {
    1.0 - r.joules_per_txn / n.joules_per_txn.max(1e-12)
}

fn standby_table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        format!("Standby timeout swept per drive (read-mostly at {RATE} transactions/s; the other drive never sleeps)"),
        &["drive", "config", "timeout s", "J/txn", "saved", "latency ms", "added ms", "max ms", "wake-ups"],
    );
    for r in rows.iter().filter(|r| r.part == Part::Standby) {
        let Some(n) = never(rows, r) else { continue };
        t.push(vec![
            r.drive.clone().unwrap_or_default(),
            r.config.name().into(),
            r.timeout_s.map_or("never".into(), |s| f(s, 3)),
            f(r.joules_per_txn, 3),
            format!("{} %", f(100.0 * saved(r, n), 1)),
            f(r.latency_mean_ms, 2),
            f(r.latency_mean_ms - n.latency_mean_ms, 2),
            f(r.latency_max_ms, 1),
            (r.hdd_wakeups + r.ssd_wakeups).to_string(),
        ]);
    }
    t
}

/// What the rows say, in words: where each placement wins and what it costs.
fn verdict(rows: &[Row]) -> String {
    let mut s = String::new();
    for w in Workload::ALL {
        let tps = |c| glance(rows, w, c, |r| r.tps);
        let j = |c| glance(rows, w, c, |r| r.joules_per_txn);
        let ssd_mb = |c| glance(rows, w, c, |r| r.ssd_bytes as f64) / 1e6;
        let best = Config::ALL
            .into_iter()
            .filter(|c| *c != Config::Ssd)
            .max_by(|a, b| tps(*a).total_cmp(&tps(*b)))
            .unwrap_or(Config::Hdd);
        s += &format!(
            "{}: the SSD alone {} TPS, the HDD alone {}; without the whole database on the SSD, {} does best ({} TPS, {} % of all-SSD, {} MB of SSD). Index on the SSD: {} TPS ({}x the HDD) from {} MB of SSD. Energy per transaction: HDD {} J, SSD {} J, index-on-fast {} J, hot-cold {} J.\n",
            w.name(),
            f(tps(Config::Ssd), 1),
            f(tps(Config::Hdd), 1),
            best.name(),
            f(tps(best), 1),
            f(100.0 * tps(best) / tps(Config::Ssd).max(1e-9), 0),
            f(ssd_mb(best), 1),
            f(tps(Config::IndexOnFast), 1),
            f(tps(Config::IndexOnFast) / tps(Config::Hdd).max(1e-9), 2),
            f(ssd_mb(Config::IndexOnFast), 1),
            f(j(Config::Hdd), 2),
            f(j(Config::Ssd), 2),
            f(j(Config::IndexOnFast), 2),
            f(j(Config::HotCold), 2),
        );
    }
    s
}

/// Seed 002's conclusions, checked.
fn claims(rows: &[Row]) -> Vec<Claim> {
    let source = "seed 002, conclusions (Flash versus Disk)";
    let tps = |w, c| glance(rows, w, c, |r| r.tps);
    let j = |w, c| glance(rows, w, c, |r| r.joules_per_txn);
    let index_wins = Workload::ALL
        .iter()
        .all(|&w| tps(w, Config::IndexOnFast) > tps(w, Config::Hdd));
    let ssd_cheaper = Workload::ALL
        .iter()
        .all(|&w| j(w, Config::Ssd) < j(w, Config::Hdd));
    let per_w = |v: &dyn Fn(Workload) -> String| {
        Workload::ALL
            .iter()
            .map(|&w| format!("{} {}", w.name(), v(w)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut out = vec![
        Claim {
            source: source.into(),
            claim: "\"Clever data distribution needed (e.g. Index on SSD)\": the index on the SSD beats the HDD alone".into(),
            published: "index on SSD (no figure)".into(),
            ours: per_w(&|w| format!("{}x the HDD's TPS", f(tps(w, Config::IndexOnFast) / tps(w, Config::Hdd).max(1e-9), 2))),
            tolerance: "faster on both workloads".into(),
            reproduced: index_wins,
            checked: true,
            why: if index_wins { "every point read and update walks the index: its pages come from the SSD".into() } else { "the index's reads are too few of the HDD's time here".into() },
            test: format!("{TEST}: index_on_fast_beats_the_hdd"),
        },
        Claim {
            source: source.into(),
            claim: "SSDs spend less energy than HDDs (\"SSDs superior in ALL situations\" for reads)".into(),
            published: "SSD superior".into(),
            ours: per_w(&|w| format!("{} vs {} J/txn", f(j(w, Config::Ssd), 2), f(j(w, Config::Hdd), 2))),
            tolerance: "less energy per transaction on both workloads".into(),
            reproduced: ssd_cheaper,
            checked: true,
            why: if ssd_cheaper { "the HDD's idle power dominates at a light load".into() } else { "the SSD's energy per transaction is not below the HDD's".into() },
            test: format!("{TEST}: the_ssd_spends_less_energy"),
        },
    ];
    out.extend(standby_claim(rows));
    out
}

/// "Exploit efficient Standby-Mode of SSDs": the SSD sleeping after its
/// break-even time saves energy at a negligible latency.
fn standby_claim(rows: &[Row]) -> Option<Claim> {
    let r = rows.iter().find(|r| {
        r.part == Part::Standby
            && r.drive.as_deref() == Some("ssd")
            && r.config == Config::Ssd
            && r.timeout_s.is_some()
    })?;
    let n = never(rows, r)?;
    let saved = saved(r, n);
    let added = r.latency_mean_ms - n.latency_mean_ms;
    let ok = saved > 0.0;
    Some(Claim {
        source: "seed 002, conclusions (Flash versus Disk)".into(),
        claim: "\"Exploit efficient Standby-Mode of SSDs\": an SSD in standby between transactions saves energy".into(),
        published: "(no figure)".into(),
        ours: format!("{} % less energy, {} ms more latency per transaction", f(100.0 * saved, 1), f(added, 3)),
        tolerance: "less energy per transaction (the latency it adds is reported)".into(),
        reproduced: ok,
        checked: true,
        why: if ok { "its wake-up costs milliseconds and millijoules; the idle power it saves between transactions is most of its energy at a light load".into() } else { "its wake-ups cost more than its standby saves".into() },
        test: format!("{TEST}: ssd_standby_saves_energy"),
    })
}

fn capacity_plot(path: &std::path::Path, rows: &[Row]) -> Result<(), LabError> {
    let mut series = Vec::new();
    for w in Workload::ALL {
        let ssd = glance(rows, w, Config::Ssd, |r| r.tps).max(1e-9);
        for c in [Config::Hybrid, Config::IndexOnFast, Config::HotCold] {
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.part == Part::Capacity && r.workload == w && r.config == c)
                .map(|r| (f64::from(r.ssd_pct.unwrap_or(0)), r.tps / ssd))
                .collect();
            if !points.is_empty() {
                series.push(Series {
                    name: format!("{} {}", w.name(), c.name()),
                    points,
                    markers_only: false,
                });
            }
        }
    }
    let plot = Plot {
        title: "Throughput against SSD capacity (share of the all-SSD throughput)",
        x_label: "SSD capacity, % of the database",
        y_label: "fraction of all-SSD TPS",
        log_x: false,
        log_y: false,
        series: &series,
        x_names: &[],
    };
    plot.write_svg(path)
        .map_err(|e| LabError::Output(path.to_path_buf(), e))
}

/// Energy saved against latency added, a line per drive and set-up, a
/// point per standby timeout.
fn standby_plot(path: &std::path::Path, rows: &[Row]) -> Result<(), LabError> {
    let mut series: Vec<Series> = Vec::new();
    for r in rows.iter().filter(|r| r.part == Part::Standby) {
        let Some(n) = never(rows, r) else { continue };
        let name = format!(
            "{} ({})",
            r.drive.clone().unwrap_or_default(),
            r.config.name()
        );
        let point = (r.latency_mean_ms - n.latency_mean_ms, 100.0 * saved(r, n));
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(point),
            None => series.push(Series {
                name,
                points: vec![point],
                markers_only: false,
            }),
        }
    }
    let plot = Plot {
        title: "Standby timeouts: energy saved against latency added (one point per timeout)",
        x_label: "mean latency added per transaction (ms)",
        y_label: "energy saved per transaction (%)",
        log_x: false,
        log_y: false,
        series: &series,
        x_names: &[],
    };
    plot.write_svg(path)
        .map_err(|e| LabError::Output(path.to_path_buf(), e))
}

/// `results/placement/` from every point's row.
pub fn report(opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
    let rows: Vec<Row> = points::rows(outputs)?;
    let dir = opts.dir("placement")?;
    write_json(&dir.join("rows.json"), &rows).map_err(|e| LabError::Output(dir.clone(), e))?;
    write_csv(&dir.join("rows.csv"), &rows).map_err(|e| LabError::Output(dir.clone(), e))?;
    capacity_plot(&dir.join("capacity.svg"), &rows)?;
    standby_plot(&dir.join("standby.svg"), &rows)?;
    let tables = [
        glance_table(&rows),
        capacity_table(&rows),
        standby_table(&rows),
    ];
    let note = verdict(&rows);
    let text: String = tables.iter().map(|t| t.text() + "\n").collect();
    let md: String = tables.iter().map(|t| t.markdown() + "\n").collect();
    Ok(Section {
        name: "placement",
        text: format!("{text}{note}"),
        markdown: format!("## Placement across SSD and HDD, and drives that sleep\n\n{md}{note}"),
        json: serde_json::to_value(&rows).map_err(|e| LabError::Data(e.to_string()))?,
        claims: claims(&rows),
    })
}
