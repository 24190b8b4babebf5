//! `summary.md` and `index.html` in the results folder.
//!
//! Each experiment keeps its own part of the summary in
//! `<out>/<experiment>/section.md`: the run it came from, its tables and
//! links to every file it wrote. The summary is assembled from the sections
//! present, so running one experiment replaces its section and keeps the
//! others. `index.html` is the same summary with the plots inline.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::lab::{Experiment, LabError, Section};
use crate::scorecard::{self, Claim, CLAIMS_FILE};

/// The file holding an experiment's part of the summary; its presence also
/// marks the folder as flashkv's own, so stale files in it may be removed.
pub const SECTION_FILE: &str = "section.md";

/// What produced a set of results.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub version: &'static str,
    pub commit: String,
    /// UTC, `YYYY-MM-DD HH:MM`.
    pub date: String,
    pub quick: bool,
    pub seed: u64,
}

impl RunInfo {
    /// Now, or `SOURCE_DATE_EPOCH` (seconds since the epoch) where it is
    /// set, as reproducible builds date their output: two runs then write
    /// the same summary.
    pub fn now(quick: bool, seed: u64) -> RunInfo {
        let secs = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs())
            });
        RunInfo {
            version: env!("CARGO_PKG_VERSION"),
            commit: commit(),
            date: utc(secs),
            quick,
            seed,
        }
    }

    fn options(&self) -> String {
        let mode = if self.quick { "--quick" } else { "full" };
        format!("{mode}, --seed {}", self.seed)
    }
}

/// The source's commit (`git describe --always --dirty`) where the binary
/// was built from a checkout that still exists; else "unknown".
fn commit() -> String {
    std::process::Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "describe",
            "--always",
            "--dirty",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// `secs` since the Unix epoch as a UTC date and time.
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (h, m) = (secs % 86_400 / 3600, secs % 3600 / 60);
    // Civil from days (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02} UTC")
}

/// Removes what an earlier run of the experiment left in its folder, if
/// the folder is flashkv's (it holds a section file).
pub fn clear_stale(out: &Path, name: &str) -> Result<(), LabError> {
    let dir = out.join(name);
    if !dir.join(SECTION_FILE).is_file() {
        return Ok(());
    }
    for entry in fs::read_dir(&dir).map_err(|e| LabError::Output(dir.clone(), e))? {
        let p = entry.map_err(|e| LabError::Output(dir.clone(), e))?.path();
        let ours = matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("svg" | "png" | "csv" | "json" | "md")
        );
        if ours && p.is_file() {
            fs::remove_file(&p).map_err(|e| LabError::Output(p.clone(), e))?;
        }
    }
    Ok(())
}

/// Files in the experiment's folder, in natural order (fig6_2 before
/// fig6_10, as the seeds number their figures), without the section file.
fn files(out: &Path, name: &str) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(out.join(name))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|f| f != SECTION_FILE && f != CLAIMS_FILE)
        .collect();
    v.sort_by_key(|f| natural(f));
    v
}

/// A sort key that orders runs of digits by their value.
fn natural(s: &str) -> Vec<(u8, u64, String)> {
    let mut key = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits > 0 {
            let n = rest[..digits].parse().unwrap_or(u64::MAX);
            key.push((0, n, String::new()));
            rest = &rest[digits..];
        } else {
            let text = rest.len() - rest.trim_start_matches(|c: char| !c.is_ascii_digit()).len();
            key.push((1, 0, rest[..text].to_string()));
            rest = &rest[text..];
        }
    }
    key
}

/// Writes the experiment's section file: the run, its tables and links.
pub fn write_section(out: &Path, s: &Section, run: &RunInfo) -> Result<(), LabError> {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "<a id=\"{}\"></a>\n\n_`{}`: run {} from flashkv {} ({}), {}._\n",
        s.name,
        s.name,
        run.date,
        run.version,
        run.commit,
        run.options()
    );
    md.push_str(s.markdown.trim_end());
    md.push_str("\n\n");
    let dir = out.join(s.name);
    fs::create_dir_all(&dir).map_err(|e| LabError::Output(dir.clone(), e))?;
    scorecard::write(&dir, &s.claims)?;
    let files = files(out, s.name);
    // Only a plot has a PNG beside it (a CSV is no picture of itself).
    let png = |f: &str| {
        let p = format!("{}.png", f.strip_suffix(".svg")?);
        files
            .contains(&p)
            .then(|| format!(" ([PNG]({}/{p}))", s.name))
    };
    for (what, ext) in [("Plots", ".svg"), ("Data", ".csv"), ("JSON", ".json")] {
        let links: Vec<String> = files
            .iter()
            .filter(|f| f.ends_with(ext))
            .map(|f| format!("[{f}]({}/{f}){}", s.name, png(f).unwrap_or_default()))
            .collect();
        if !links.is_empty() {
            let _ = writeln!(md, "{what}: {}\n", links.join(" · "));
        }
    }
    let path = dir.join(SECTION_FILE);
    fs::write(&path, md).map_err(|e| LabError::Output(path, e))
}

/// The sections present under `out`, in the lab's order.
fn present(out: &Path) -> Vec<(&'static str, String)> {
    Experiment::KNOWN
        .iter()
        .filter_map(|e| {
            let text = fs::read_to_string(out.join(e.name()).join(SECTION_FILE)).ok()?;
            Some((e.name(), text))
        })
        .collect()
}

/// Writes `summary.md` and `index.html` from the sections present.
pub fn write_summary(out: &Path, run: &RunInfo, ran: &[&str]) -> Result<(), LabError> {
    let sections = present(out);
    let claims: Vec<(&str, Claim)> = sections
        .iter()
        .flat_map(|(n, _)| {
            scorecard::read(&out.join(n))
                .into_iter()
                .map(move |c| (*n, c))
        })
        .collect();
    let mut md = String::from("# flashkv lab summary\n\n");
    md.push_str(&scorecard::markdown(&claims));
    md.push_str("\n## This run\n\n");
    let cell = crate::report::md_cell;
    let _ = writeln!(md, "| item | value |\n|---|---|");
    let _ = writeln!(md, "| version | flashkv {} |", cell(run.version));
    let _ = writeln!(md, "| commit | {} |", cell(&run.commit));
    let _ = writeln!(md, "| date | {} |", cell(&run.date));
    let _ = writeln!(md, "| options | {} |", cell(&run.options()));
    let _ = writeln!(md, "| seed | {} |", run.seed);
    let _ = writeln!(md, "| ran | {} |\n", cell(&ran.join(", ")));
    if run.quick {
        md.push_str(
            "_Quick run (`--quick`): fewer operations per point, so figures are noisier._\n\n",
        );
    }
    md.push_str("Sections: ");
    let toc: Vec<String> = sections
        .iter()
        .map(|(n, _)| format!("[{n}](#{n})"))
        .collect();
    md.push_str(&toc.join(" · "));
    md.push_str(". Each section names the run it comes from.\n\n");
    for (_, text) in &sections {
        md.push_str(text);
        md.push('\n');
    }
    let path = out.join("summary.md");
    fs::write(&path, &md).map_err(|e| LabError::Output(path, e))?;
    let html = index_html(out, &md, &sections);
    let path = out.join("index.html");
    fs::write(&path, html).map_err(|e| LabError::Output(path, e))
}

/// The page's style: left-aligned prose at a readable width (a long path
/// in it may break anywhere), tables that scroll rather than break a cell
/// inside a word or a number, plots at their own size (their text stays
/// at 12 px or more).
const STYLE: &str = "\
body{font-family:system-ui,'DejaVu Sans',sans-serif;line-height:1.5;color:#1a1a1a;\
max-width:62rem;margin:0 auto;padding:1rem 1.5rem;text-align:left}
p,li{max-width:48rem}
p,li,h1,h2,h3,nav,figcaption{overflow-wrap:anywhere}
h1,h2,h3{line-height:1.25}h2{margin-top:2.5rem;border-bottom:1px solid #ddd}
h3{font-size:1.05rem;margin-top:1.8rem}
table{border-collapse:collapse;margin:1rem 0;font-size:.88rem;display:block;overflow-x:auto;max-width:100%}
th,td{border:1px solid #ccc;padding:.25em .55em;vertical-align:top}th{background:#f4f4f4}
nav{background:#f7f7f7;border:1px solid #e2e2e2;padding:.5rem 1.2rem;margin:1rem 0}
nav ol{margin:.3rem 0;padding-left:1.3rem}
figure{margin:1.5rem 0}figure img{display:block;max-width:100%;height:auto;border:1px solid #e5e5e5}
figcaption{font-size:.9rem;color:#333;margin-top:.3rem;max-width:48rem}
code{font-size:.9em;background:#f3f3f3;padding:0 .2em}
";

/// Markdown as HTML.
fn render(m: &str) -> String {
    let mut h = String::new();
    let opts = pulldown_cmark::Options::ENABLE_TABLES;
    pulldown_cmark::html::push_html(&mut h, pulldown_cmark::Parser::new_ext(m, opts));
    h
}

/// The summary as HTML: a table of contents, the scorecard, then each
/// section with its figures in the seed's order, captioned.
fn index_html(out: &Path, md: &str, sections: &[(&'static str, String)]) -> String {
    let head = md.split("\n<a id=").next().unwrap_or(md);
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>flashkv lab summary</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n"
    );
    let body = render(head)
        .replace("<h2>Scorecard</h2>", "<h2 id=\"scorecard\">Scorecard</h2>")
        .replace("<h2>This run</h2>", "<h2 id=\"this-run\">This run</h2>");
    // The contents go under the page's title.
    let (title, rest) = body.split_once("</h1>").unwrap_or(("", &body));
    html.push_str(title);
    html.push_str("</h1>\n");
    html.push_str(&toc(sections));
    html.push_str(rest);
    let mut n = 0;
    for (name, text) in sections {
        let _ = writeln!(html, "<section id=\"{name}\">");
        html.push_str(&render(text));
        for (f, title) in figures(out, name) {
            n += 1;
            let png = f.replace(".svg", ".png");
            let png = match out.join(name).join(&png).is_file() {
                true => format!(", <a href=\"{name}/{png}\">PNG</a>"),
                false => String::new(),
            };
            let _ = writeln!(
                html,
                "<figure id=\"{name}-{f}\">\n<img src=\"{name}/{f}\" alt=\"{}\" width=\"{}\" height=\"{}\">\n\
                 <figcaption>Figure {n}. {} (<a href=\"{name}/{f}\">SVG</a>{png})</figcaption>\n</figure>",
                escape(&title),
                crate::plot::WIDTH,
                crate::plot::HEIGHT,
                escape(&title)
            );
        }
        html.push_str("</section>\n");
    }
    html.push_str("</body>\n</html>\n");
    html
}

/// The table of contents: the scorecard, the run, each section by its title.
fn toc(sections: &[(&'static str, String)]) -> String {
    let mut t = String::from(
        "<nav aria-label=\"contents\"><strong>Contents</strong>\n<ol>\n\
         <li><a href=\"#scorecard\">Scorecard</a></li>\n<li><a href=\"#this-run\">This run</a></li>\n",
    );
    for (name, text) in sections {
        let title = text
            .lines()
            .find_map(|l| l.strip_prefix("## "))
            .unwrap_or(name);
        let _ = writeln!(t, "<li><a href=\"#{name}\">{}</a></li>", escape(title));
    }
    t.push_str("</ol></nav>\n");
    t
}

/// The experiment's plots with their titles, in the seed's figure order
/// (by the number in the title), then the others by file name.
fn figures(out: &Path, name: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = files(out, name)
        .into_iter()
        .filter(|f| f.ends_with(".svg"))
        .map(|f| {
            let svg = fs::read_to_string(out.join(name).join(&f)).unwrap_or_default();
            let title = svg_title(&svg).unwrap_or_else(|| f.clone());
            (f, title)
        })
        .collect();
    v.sort_by_key(|(f, title)| {
        (
            figure_number(title).is_none(),
            figure_number(title).map(|n| natural(&n)),
            natural(f),
        )
    });
    v
}

/// The first text of a plot's SVG: its title.
fn svg_title(svg: &str) -> Option<String> {
    let start = svg.find("<text")?;
    let body = &svg[start..];
    let open = body.find('>')? + 1;
    let close = body.find("</text>")?;
    let text = body[open..close].trim();
    // XML's entities, as SVG writers escape text (`&amp;` last).
    let plain = [
        ("&apos;", "'"),
        ("&quot;", "\""),
        ("&lt;", "<"),
        ("&gt;", ">"),
        ("&amp;", "&"),
    ]
    .iter()
    .fold(text.to_string(), |t, (e, c)| t.replace(e, c));
    Some(plain)
}

/// The figure number a title gives (`Figure 6.2: ...`, `seed Fig. 4a`).
fn figure_number(title: &str) -> Option<String> {
    let at = ["Figure ", "Fig. "]
        .iter()
        .find_map(|m| title.find(m).map(|i| i + m.len()))?;
    let n: String = title[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    let n = n.trim_end_matches('.').to_string();
    n.starts_with(|c: char| c.is_ascii_digit()).then_some(n)
}

/// Text safe in HTML.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Every relative link in `summary.md` and `index.html`, for tests.
pub fn links(text: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for (open, close) in [("](", ')'), ("href=\"", '"')] {
        for part in text.split(open).skip(1) {
            if let Some(end) = part.find(close) {
                let l = &part[..end];
                if !l.starts_with('#') && !l.contains("://") {
                    v.push(PathBuf::from(l));
                }
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_795_459_200 + 3600 + 120), "2026-11-23 19:42 UTC");
    }

    #[test]
    fn figures_sort_as_the_seeds_number_them() {
        let mut v = vec![
            "fig6_10-h3.svg",
            "fig6_2-h1.svg",
            "fig6_1-h1.svg",
            "fig6_11-b.svg",
        ];
        v.sort_by_key(|f| natural(f));
        assert_eq!(
            v,
            [
                "fig6_1-h1.svg",
                "fig6_2-h1.svg",
                "fig6_10-h3.svg",
                "fig6_11-b.svg"
            ]
        );
        assert_eq!(figure_number("Figure 6.10: H3").as_deref(), Some("6.10"));
        assert_eq!(
            figure_number("HeteroDrive SSD (seed Fig. 4b)").as_deref(),
            Some("4b")
        );
        assert_eq!(
            figure_number("The log's own HDD (the seed does not plot it)"),
            None
        );
        assert!(natural("6.2") < natural("6.10") && natural("4a") < natural("4b"));
        let svg = "<svg><rect/><text x=\"1\">\nFigure 6.2: Runtime\n</text><text>x</text></svg>";
        assert_eq!(svg_title(svg).as_deref(), Some("Figure 6.2: Runtime"));
        let svg = "<svg><text>The log&apos;s disk &amp;amp; more</text></svg>";
        assert_eq!(svg_title(svg).as_deref(), Some("The log's disk &amp; more"));
    }

    #[test]
    fn links_are_found_in_markdown_and_html() {
        let l = links("[a](x/a.svg) [t](#top) <a href=\"x/b.csv\">b</a> [w](https://e.org)");
        assert_eq!(l, [PathBuf::from("x/a.svg"), PathBuf::from("x/b.csv")]);
    }
}
