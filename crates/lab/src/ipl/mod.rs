//! Reproduces seed 001's evaluation (chapter 6): in-page logging against
//! the conventional in-place store on raw NAND (`nand-ipl`, Table 3.1
//! costs), hypotheses 1.1, 1.2, 2.1, 2.2, 3 and the buffer-size sweep of
//! §6.4; then the same with more log sectors per page (the seed's future
//! work), the SIGMOD 2007 shared log layout, and on an FTL SSD (`nvme`).

mod plots;
mod report;
pub mod workload;

use flashkv_engine::{IplGeometry, StoreKind, LOG_SECTOR};
use serde::{Deserialize, Serialize};

use crate::lab::{LabError, LabOptions, Section};
use crate::points::{self, Output, Params, Point};
use workload::{Bed, Counts};

/// One measured point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// `h1.1`, `h1.2`, `h2.1`, `h2.2`, `h3`, `buffer-sweep` or
    /// `random-update` (H3 with random updates instead of appends).
    pub experiment: String,
    /// `in-place` or `ipl`.
    pub store: String,
    /// `seed`, `shared` or `logK` (K log sectors per page).
    pub layout: String,
    pub device: String,
    pub ops: u64,
    pub buffer_pages: usize,
    pub reads: u64,
    pub writes: u64,
    pub erases: u64,
    /// Device busy time: every operation at its Table 3.1 cost, as the seed estimates runtime.
    pub est_ms: f64,
}

/// An erase-unit layout; the in-place store runs with its page size.
#[derive(Debug, Clone)]
pub struct Layout {
    pub name: String,
    pub geometry: IplGeometry,
}

const UNIT: u32 = 128 << 10;

impl Layout {
    pub fn seed() -> Layout {
        Layout {
            name: "seed".into(),
            geometry: IplGeometry::seed(),
        }
    }
    pub fn shared() -> Layout {
        Layout {
            name: "shared".into(),
            geometry: IplGeometry::shared(),
        }
    }
    /// 4 KB pages with `k` private log sectors each, as many pages as fit a
    /// 128 KB unit; leftover sectors stay spare as in the seed's layout.
    pub fn sectors_per_page(k: u32) -> Layout {
        let pages = UNIT / (4096 + k * LOG_SECTOR);
        Layout {
            name: format!("log{k}"),
            geometry: IplGeometry {
                page_size: 4096,
                pages_per_unit: pages,
                log_sectors: (UNIT - pages * 4096) / LOG_SECTOR,
                sectors_per_page: Some(k),
            },
        }
    }
}

impl Layout {
    /// The layout named `name`: `seed`, `shared` or `logK` (1 <= K <= 64).
    pub fn parse(name: &str) -> Option<Layout> {
        match name {
            "seed" => Some(Layout::seed()),
            "shared" => Some(Layout::shared()),
            _ => {
                let k: u32 = name.strip_prefix("log")?.parse().ok()?;
                (1..=64).contains(&k).then(|| Layout::sectors_per_page(k))
            }
        }
    }
}

/// How much to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Operations of the longest run; runs are every `step` up to it.
    pub max_ops: u64,
    pub step: u64,
    pub sweep_ops: u64,
    /// Tuples of the sweep's relation (its key space is twice that).
    pub sweep_rel: u64,
    pub sweep_buffers: Vec<usize>,
    /// Log sectors per page of the extra layouts (1 is the seed's).
    pub log_sectors: Vec<u32>,
    pub seed: u64,
}

impl Config {
    pub fn new(quick: bool, seed: u64) -> Config {
        if quick {
            Config {
                max_ops: 2000,
                step: 500,
                sweep_ops: 10_000,
                sweep_rel: 2000,
                sweep_buffers: vec![1, 8, 64, 512],
                log_sectors: vec![2, 4],
                seed,
            }
        } else {
            Config {
                max_ops: 10_000,
                step: 1000,
                sweep_ops: 100_000,
                sweep_rel: 10_000,
                sweep_buffers: (0..12).map(|i| 1 << i).collect(),
                log_sectors: vec![2, 4],
                seed,
            }
        }
    }

    pub fn layouts(&self) -> Vec<Layout> {
        let mut v = vec![Layout::seed(), Layout::shared()];
        v.extend(
            self.log_sectors
                .iter()
                .filter(|&&k| k > 1)
                .map(|&k| Layout::sectors_per_page(k)),
        );
        v
    }
}

pub const STORES: [&str; 2] = ["in-place", "ipl"];

fn bed(device: &'static str, store: &str, l: &Layout, buffer_pages: usize) -> Bed {
    Bed {
        device,
        store: if store == "ipl" {
            StoreKind::InPageLogging(l.geometry)
        } else {
            StoreKind::InPlace
        },
        page_size: l.geometry.page_size,
        buffer_pages,
    }
}

/// Hypotheses 1.1, 1.2, 2.1, 2.2 and 3 for one store, layout and device.
/// H2 and H3 run on the relation H1.1 built (as the seed's relation 1
/// served every hypothesis), written to the device first: H3 starts from
/// it and grows it by half.
pub fn hypotheses(
    device: &'static str,
    store: &'static str,
    l: &Layout,
    cfg: &Config,
) -> Result<Vec<Row>, LabError> {
    let b = bed(device, store, l, 1);
    let (n, step) = (cfg.max_ops, cfg.step);
    let mut runs: Vec<(&'static str, Vec<(u64, Counts)>)> = Vec::new();
    let db = b.open()?;
    workload::isolate_rel2(&db)?;
    runs.push(("h1.2", workload::bulk_insert(&db, n, step)?));
    let db = b.open()?;
    workload::isolate_rel2(&db)?;
    runs.push(("h1.1", workload::seq_insert(&db, n, step)?));
    db.checkpoint()?;
    runs.push(("h2.1", workload::random_read(&db, n, n, step, cfg.seed)?));
    runs.push(("h2.2", workload::seq_scan(&db, n, n, step)?));
    runs.push((
        "h3",
        workload::read_insert(&db, n, n, step, cfg.seed, true)?,
    ));
    let row = |e, ops, c| make_row(e, store, l, device, ops, 1, c);
    Ok(runs
        .into_iter()
        .flat_map(|(e, pts)| pts.into_iter().map(move |(ops, c)| row(e, ops, c)))
        .collect())
}

/// §6.4: H3's reads and inserts over a loaded relation with a buffer of
/// `pages`, without forcing evictions (the buffer is what varies).
pub fn buffer_sweep(
    device: &'static str,
    store: &'static str,
    l: &Layout,
    pages: usize,
    cfg: &Config,
) -> Result<Vec<Row>, LabError> {
    let db = bed(device, store, l, pages).open()?;
    workload::load(&db, cfg.sweep_rel)?;
    let pts = workload::read_insert(
        &db,
        cfg.sweep_rel,
        cfg.sweep_ops,
        cfg.sweep_ops,
        cfg.seed,
        false,
    )?;
    Ok(pts
        .into_iter()
        .map(|(ops, c)| make_row("buffer-sweep", store, l, device, ops, pages, c))
        .collect())
}

/// H3 with random updates in place of appended inserts (not in the seed),
/// on the relation H1.1 built: what the workload, not the store, decides.
pub fn update_contrast(
    device: &'static str,
    store: &'static str,
    l: &Layout,
    cfg: &Config,
) -> Result<Row, LabError> {
    let db = bed(device, store, l, 1).open()?;
    workload::isolate_rel2(&db)?;
    workload::seq_insert(&db, cfg.max_ops, cfg.max_ops)?;
    db.checkpoint()?;
    let pts = workload::read_update(&db, cfg.max_ops, cfg.max_ops, cfg.seed)?;
    let c = pts.last().map_or_else(Counts::default, |p| p.1);
    Ok(make_row(
        "random-update",
        store,
        l,
        device,
        cfg.max_ops,
        1,
        c,
    ))
}

fn make_row(
    experiment: &'static str,
    store: &'static str,
    l: &Layout,
    device: &'static str,
    ops: u64,
    buffer_pages: usize,
    c: Counts,
) -> Row {
    Row {
        experiment: experiment.into(),
        store: store.into(),
        layout: l.name.clone(),
        device: device.into(),
        ops,
        buffer_pages,
        reads: c.reads,
        writes: c.writes,
        erases: c.erases,
        est_ms: c.busy_ns as f64 / 1e6,
    }
}

/// Devices and the layouts run on them: raw NAND gets every layout, the
/// FTL SSD the seed's and the shared one.
fn plan(cfg: &Config) -> Vec<(&'static str, Layout)> {
    let mut v: Vec<(&'static str, Layout)> =
        cfg.layouts().into_iter().map(|l| ("nand-ipl", l)).collect();
    v.push(("nvme", Layout::seed()));
    v.push(("nvme", Layout::shared()));
    v
}

/// A point: what to run (`hypotheses`, `buffer-sweep` or
/// `random-update`), where, and for the sweep the buffer size.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PointParams {
    kind: String,
    device: String,
    layout: String,
    store: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    buffer_pages: Option<usize>,
}

const KINDS: [&str; 3] = ["hypotheses", "buffer-sweep", "random-update"];

/// The hypotheses per device, layout and store; the sweep per store and
/// buffer size; the random-update contrast per store.
pub fn points(quick: bool) -> Vec<Point> {
    let cfg = Config::new(quick, 0);
    let param = |kind: &str, device: &str, layout: &str, store: &str, pages| PointParams {
        kind: kind.into(),
        device: device.into(),
        layout: layout.into(),
        store: store.into(),
        buffer_pages: pages,
    };
    let mut v = Vec::new();
    for (device, l) in plan(&cfg) {
        for store in STORES {
            let id = format!("hypotheses/{device}/{}/{store}", l.name);
            v.push((id, param("hypotheses", device, &l.name, store, None)));
        }
    }
    for store in STORES {
        for &pages in &cfg.sweep_buffers {
            let id = format!("buffer-sweep/{store}/{pages}");
            v.push((
                id,
                param("buffer-sweep", "nand-ipl", "seed", store, Some(pages)),
            ));
        }
    }
    for store in STORES {
        let id = format!("random-update/{store}");
        v.push((id, param("random-update", "nand-ipl", "seed", store, None)));
    }
    points::grid(v)
}

/// Runs one point; its parameters' names checked first.
pub fn run_point(params: &Params, opts: &LabOptions) -> Result<Output, LabError> {
    let p: PointParams = points::parse("ipl", params)?;
    let cfg = Config::new(opts.quick, opts.seed);
    let names = flashkv_device::presets::names();
    let device = names
        .iter()
        .copied()
        .find(|&d| d == p.device)
        .ok_or_else(|| points::unknown("ipl", "device", &p.device, &names))?;
    let store = STORES
        .into_iter()
        .find(|&s| s == p.store)
        .ok_or_else(|| points::unknown("ipl", "store", &p.store, &STORES))?;
    let l = Layout::parse(&p.layout).ok_or_else(|| {
        points::unknown(
            "ipl",
            "layout",
            &p.layout,
            &["seed", "shared", "logK (1..=64)"],
        )
    })?;
    let rows = match (p.kind.as_str(), p.buffer_pages) {
        ("hypotheses", None) => {
            opts.progress(&format!("ipl {device} {} {store}", l.name));
            hypotheses(device, store, &l, &cfg)?
        }
        ("buffer-sweep", Some(pages)) if pages > 0 => {
            opts.progress(&format!("ipl buffer sweep {store} {pages}"));
            buffer_sweep(device, store, &l, pages, &cfg)?
        }
        ("random-update", None) => {
            opts.progress(&format!("ipl random updates {store}"));
            vec![update_contrast(device, store, &l, &cfg)?]
        }
        (k, _) if !KINDS.contains(&k) => return Err(points::unknown("ipl", "kind", k, &KINDS)),
        (k, pages) => {
            return Err(LabError::Params(format!(
                "ipl: buffer_pages {pages:?} with kind {k} (only buffer-sweep takes it, at least 1)"
            )))
        }
    };
    Output::of(&rows)
}

/// Writes `ipl/` under the output directory from every point's rows.
pub fn report(opts: &LabOptions, outputs: &[Output]) -> Result<Section, LabError> {
    let cfg = Config::new(opts.quick, opts.seed);
    report::write(opts, &cfg, points::rows(outputs)?)
}
