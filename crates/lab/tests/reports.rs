//! The reports as a reader gets them: every plot the lab draws is rendered
//! (resvg, with the system's fonts) and its text must stay on the canvas
//! without two labels touching; `summary.md` and `index.html` link every
//! plot and CSV, and running one experiment keeps the others' sections.

use std::path::{Path, PathBuf};
use std::process::Command;

use flashkv_lab::lab::{self, Experiment, LabOptions};
use flashkv_lab::summary::links;
use resvg::usvg;

fn run(out: &Path, experiments: &[Experiment]) {
    let opts = LabOptions {
        quick: true,
        out: out.to_path_buf(),
        seed: 1,
        on_progress: Box::new(|_| {}),
        on_point: Box::new(|| {}),
    };
    lab::run(experiments, &opts).unwrap();
}

fn files(out: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in Experiment::ALL {
        for f in std::fs::read_dir(out.join(e.name())).unwrap().flatten() {
            if f.path().extension().is_some_and(|x| x == ext) {
                v.push(f.path());
            }
        }
    }
    v.sort();
    v
}

/// Text boxes of a rendered SVG: (text, x0, y0, x1, y1).
fn text_boxes(node: &usvg::Group, out: &mut Vec<(String, f32, f32, f32, f32)>) {
    for n in node.children() {
        match n {
            usvg::Node::Group(g) => text_boxes(g, out),
            usvg::Node::Text(t) => {
                let b = t.abs_bounding_box();
                let text: String = t.chunks().iter().map(|c| c.text()).collect();
                out.push((
                    text.trim().to_string(),
                    b.left(),
                    b.top(),
                    b.right(),
                    b.bottom(),
                ));
            }
            _ => {}
        }
    }
}

/// Why the plot at `path` is unreadable, if it is.
fn check_plot(path: &Path, opt: &usvg::Options) -> Vec<String> {
    let svg = std::fs::read_to_string(path).unwrap();
    let tree = usvg::Tree::from_str(&svg, opt).unwrap();
    let (w, h) = (tree.size().width(), tree.size().height());
    let mut boxes = Vec::new();
    text_boxes(tree.root(), &mut boxes);
    let mut problems = Vec::new();
    if boxes.len() < 6 {
        problems.push(format!("only {} text elements were laid out", boxes.len()));
    }
    for (t, x0, y0, x1, y1) in &boxes {
        if *x0 < 0.0 || *y0 < 0.0 || *x1 > w || *y1 > h {
            problems.push(format!(
                "'{t}' leaves the canvas: {x0:.0},{y0:.0}..{x1:.0},{y1:.0}"
            ));
        }
    }
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let overlap_x = a.3.min(b.3) - a.1.max(b.1);
            let overlap_y = a.4.min(b.4) - a.2.max(b.2);
            if overlap_x > 0.5 && overlap_y > 0.5 {
                problems.push(format!("'{}' overlaps '{}'", a.0, b.0));
            }
        }
    }
    // Render it as a reader's viewer would; something must be drawn.
    let mut pixmap = resvg::tiny_skia::Pixmap::new(w as u32, h as u32).unwrap();
    resvg::render(&tree, Default::default(), &mut pixmap.as_mut());
    if pixmap.data().chunks(4).all(|p| p[3] == 0) {
        problems.push("renders blank".into());
    }
    if let Some(dir) = std::env::var_os("FLASHKV_PLOT_PNG") {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned() + ".png";
        let parent = path.parent().unwrap().file_name().unwrap();
        let dir = Path::new(&dir).join(parent);
        std::fs::create_dir_all(&dir).unwrap();
        pixmap.save_png(dir.join(name)).unwrap();
    }
    problems
}

fn options() -> usvg::Options<'static> {
    let mut opt = usvg::Options::default();
    let db = opt.fontdb_mut();
    db.load_system_fonts();
    // fontdb's generic "sans-serif" is Arial; map it to what is installed.
    let sans = db
        .faces()
        .flat_map(|f| f.families.iter().map(|(n, _)| n.clone()))
        .find(|n| n == "DejaVu Sans" || n.contains("Sans"));
    if let Some(family) = sans {
        db.set_sans_serif_family(family);
    }
    opt
}

#[test]
fn the_check_sees_overlapping_and_clipped_labels() {
    let opt = options();
    if opt.fontdb.is_empty() {
        eprintln!("no system fonts: skipping");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.svg");
    let text = |x: u32, y: u32, s: &str| {
        format!("<text x=\"{x}\" y=\"{y}\" font-family=\"sans-serif\" font-size=\"13\">{s}</text>")
    };
    let labels: String = (0..6).map(|i| text(20, 40 + 40 * i, "ok")).collect();
    let svg = format!(
        "<svg width=\"200\" height=\"300\" xmlns=\"http://www.w3.org/2000/svg\">\
         <rect width=\"200\" height=\"300\" fill=\"#fff\"/>{labels}{}{}{}</svg>",
        text(100, 20, "90.0"),
        text(118, 20, "100.0"),
        text(170, 290, "clipped label")
    );
    std::fs::write(&p, svg).unwrap();
    let problems = check_plot(&p, &opt);
    assert!(
        problems.iter().any(|e| e == "'90.0' overlaps '100.0'"),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|e| e.starts_with("'clipped label' leaves the canvas")),
        "{problems:?}"
    );
    assert_eq!(problems.len(), 2, "{problems:?}");
}

#[test]
fn every_plot_renders_readably_and_the_summary_links_everything() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    run(out, &Experiment::ALL);

    let opt = options();
    let svgs = files(out, "svg");
    assert!(svgs.len() >= 30, "{} plots", svgs.len());
    if opt.fontdb.is_empty() {
        eprintln!("no system fonts: text layout of the plots is not checked");
    } else {
        let bad: Vec<String> = svgs
            .iter()
            .flat_map(|p| {
                check_plot(p, &opt)
                    .into_iter()
                    .map(move |e| format!("{}: {e}", p.display()))
            })
            .collect();
        assert!(
            bad.is_empty(),
            "{} problems:\n{}",
            bad.len(),
            bad.join("\n")
        );
    }

    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.starts_with("# flashkv lab summary\n\n## Scorecard\n"),
        "the summary opens with the scorecard"
    );
    scorecard_rows_name_real_tests(out);
    for head in [
        "| version |",
        "| commit |",
        "| date |",
        "| options |",
        "| seed | 1 |",
    ] {
        assert!(md.contains(head), "summary lacks {head}");
    }
    let linked = links(&md);
    for png in md.split("([PNG](").skip(1) {
        let target = &png[..png.find(')').unwrap()];
        assert!(target.ends_with(".png"), "a PNG link to {target}");
    }
    for l in &linked {
        assert!(
            out.join(l).is_file(),
            "summary links a missing {}",
            l.display()
        );
    }
    for f in svgs.iter().chain(&files(out, "csv")) {
        let rel = f.strip_prefix(out).unwrap();
        assert!(
            linked.iter().any(|l| l == rel),
            "summary does not link {}",
            rel.display()
        );
    }

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    for e in Experiment::ALL {
        assert_eq!(
            html.matches(&format!("<section id=\"{}\">", e.name()))
                .count(),
            1
        );
    }
    assert_eq!(
        html.matches("<img ").count(),
        svgs.len(),
        "every plot shown once"
    );
    for src in html.split("<img src=\"").skip(1) {
        let f = &src[..src.find('"').unwrap()];
        assert!(out.join(f).is_file(), "index shows a missing {f}");
    }
    assert!(!html.contains("<th></th>"), "no empty header cells");
    assert!(
        html.contains("<nav") && html.contains("href=\"#scorecard\""),
        "a table of contents"
    );
    // Figures in the seed's order: 6.2 before 6.10.
    let at = |f: &str| {
        html.find(&format!("<img src=\"{f}"))
            .unwrap_or_else(|| panic!("{f}"))
    };
    assert!(at("ipl/fig6_2-") < at("ipl/fig6_10-") && at("ipl/fig6_9-") < at("ipl/fig6_10-"));
    assert!(at("hybrid/pattern_original.svg") < at("hybrid/pattern_hybrid_ssd.svg"));
    assert!(at("hybrid/pattern_hybrid_ssd.svg") < at("hybrid/pattern_hybrid_hdd.svg"));
    // A PNG beside every SVG (this machine has fonts when the layout check ran).
    if !opt.fontdb.is_empty() {
        for svg in &svgs {
            let png = svg.with_extension("png");
            let img = resvg::tiny_skia::Pixmap::load_png(&png).unwrap();
            assert_eq!(
                img.width(),
                2 * flashkv_lab::plot::WIDTH,
                "{}",
                png.display()
            );
        }
    }
    assert_eq!(
        html.matches("<section ").count(),
        html.matches("</section>").count()
    );
    for l in links(&html) {
        assert!(
            out.join(&l).is_file(),
            "index links a missing {}",
            l.display()
        );
    }

    tables_keep_their_columns(&out.join("summary.md"));
    in_chromium(&out.join("index.html"), svgs.len());

    // One experiment again: its section is replaced, the others stay.
    let before = std::fs::read_to_string(out.join("seed004/section.md")).unwrap();
    run(out, &[Experiment::Advisor]);
    let md2 = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md2.contains(before.trim()), "seed004's section was lost");
    assert!(md2.contains("| ran | advisor |"));
    for e in Experiment::ALL {
        assert!(
            md2.contains(&format!("<a id=\"{}\"></a>", e.name())),
            "{}",
            e.name()
        );
    }
}

/// Every row of every Markdown table in `md` has as many cells as its
/// header (a `|` left unescaped in a cell adds a column, which a browser's
/// table then drops: the cells slide under the wrong headings).
fn tables_keep_their_columns(md: &Path) {
    let text = std::fs::read_to_string(md).unwrap();
    let (mut tables, mut header, mut bad) = (0, None, Vec::new());
    for (n, line) in text.lines().enumerate() {
        if !line.starts_with('|') {
            header = None;
            continue;
        }
        let cells = flashkv_lab::report::md_cells(line).len();
        match header {
            None => {
                header = Some(cells);
                tables += 1;
            }
            Some(h) if h != cells => {
                bad.push(format!("line {}: {cells} cells under {h}: {line}", n + 1))
            }
            Some(_) => {}
        }
    }
    assert!(tables > 20, "{tables} tables in {}", md.display());
    assert!(
        bad.is_empty(),
        "{} rows out of their tables' columns:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Every scorecard row names a test function that exists, in the lab's
/// tests or its sources, and links to a section of the summary.
fn scorecard_rows_name_real_tests(out: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for e in Experiment::ALL {
        for c in flashkv_lab::scorecard::read(&out.join(e.name())) {
            n += 1;
            let (file, func) = c.test.split_once(": ").expect("file: function");
            let found = [root.join("tests").join(file), root.join("src").join(file)]
                .iter()
                .filter_map(|p| std::fs::read_to_string(p).ok())
                .any(|src| src.contains(&format!("fn {func}(")));
            assert!(found, "{}: the test {} does not exist", e.name(), c.test);
            assert!(
                !c.published.is_empty() && !c.ours.is_empty() && !c.why.is_empty(),
                "{c:?}"
            );
        }
    }
    assert!(n >= 20, "{n} claims");
}

/// Opens `index.html` in headless Chromium (which `.ci/run` installs; the
/// check is skipped with a message where it is missing): a copy of the page
/// with a script that, once everything has loaded, records each image whose
/// natural width is 0 and each element whose text overflows its box, and
/// the DOM Chromium dumps carries the result.
fn in_chromium(index: &Path, plots: usize) {
    let Some(browser) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
    else {
        eprintln!("chromium is not installed (apt-get install chromium): index.html not checked in a browser");
        return;
    };
    const CHECK: &str = r#"<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute('src'));
  const over = [...document.querySelectorAll('p,li,td,th,h1,h2,h3,figcaption,nav,code')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).display !== 'inline')
    .map(e => e.tagName + ': ' + e.textContent.slice(0, 60));
  const page = document.documentElement.scrollWidth > window.innerWidth + 1;
  // A number in a table cell on more than one line.
  const split = [...document.querySelectorAll('td,th')]
    .filter(e => /^[+\-]?[0-9][0-9.,]*[%x×]?$/.test(e.textContent.trim()))
    .filter(e => { const r = document.createRange(); r.selectNodeContents(e); return r.getClientRects().length > 1; })
    .map(e => e.textContent.trim());
  const r = document.createElement('pre');
  r.id = 'flashkv-check';
  r.textContent = JSON.stringify({images: imgs.length, broken, over, page, split});
  document.body.appendChild(r);
});
</script>"#;
    let html = std::fs::read_to_string(index).unwrap();
    let check = index.with_file_name("chromium-check.html");
    std::fs::write(&check, html.replace("</body>", &format!("{CHECK}</body>"))).unwrap();
    let profile = tempfile::tempdir().unwrap();
    let o = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1280,1000",
            "--virtual-time-budget=20000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("file://{}", check.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&o.stdout);
    let Some(start) = dom.find("<pre id=\"flashkv-check\">") else {
        panic!(
            "the check did not run in Chromium: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let body = &dom[start + "<pre id=\"flashkv-check\">".len()..];
    let text = body[..body.find("</pre>").unwrap()]
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["images"], plots, "{r}");
    assert_eq!(
        r["broken"],
        serde_json::json!([]),
        "images that did not load: {r}"
    );
    assert_eq!(r["over"], serde_json::json!([]), "text that overflows: {r}");
    assert_eq!(r["page"], false, "the page scrolls sideways: {r}");
    assert_eq!(
        r["split"],
        serde_json::json!([]),
        "numbers broken over lines: {r}"
    );
}
