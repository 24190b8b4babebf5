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
            Some("svg" | "csv" | "json" | "md")
        );
        if ours && p.is_file() {
            fs::remove_file(&p).map_err(|e| LabError::Output(p.clone(), e))?;
        }
    }
    Ok(())
}

/// Files in the experiment's folder, sorted, without the section file.
fn files(out: &Path, name: &str) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(out.join(name))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|f| f != SECTION_FILE)
        .collect();
    v.sort();
    v
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
    let files = files(out, s.name);
    for (what, ext) in [("Plots", ".svg"), ("Data", ".csv"), ("JSON", ".json")] {
        let links: Vec<String> = files
            .iter()
            .filter(|f| f.ends_with(ext))
            .map(|f| format!("[{f}]({}/{f})", s.name))
            .collect();
        if !links.is_empty() {
            let _ = writeln!(md, "{what}: {}\n", links.join(" · "));
        }
    }
    let path = out.join(s.name).join(SECTION_FILE);
    fs::create_dir_all(out.join(s.name)).map_err(|e| LabError::Output(path.clone(), e))?;
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
    let mut md = String::from("# flashkv lab summary\n\n");
    let _ = writeln!(md, "| | |\n|---|---|");
    let _ = writeln!(md, "| version | flashkv {} |", run.version);
    let _ = writeln!(md, "| commit | {} |", run.commit);
    let _ = writeln!(md, "| date | {} |", run.date);
    let _ = writeln!(md, "| options | {} |", run.options());
    let _ = writeln!(md, "| seed | {} |", run.seed);
    let _ = writeln!(md, "| ran | {} |\n", ran.join(", "));
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

/// The summary as HTML with every plot inline after its section.
fn index_html(out: &Path, md: &str, sections: &[(&'static str, String)]) -> String {
    let render = |m: &str| {
        let mut h = String::new();
        let opts = pulldown_cmark::Options::ENABLE_TABLES;
        pulldown_cmark::html::push_html(&mut h, pulldown_cmark::Parser::new_ext(m, opts));
        h
    };
    let head = md.split("\n<a id=").next().unwrap_or(md);
    let mut html = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>flashkv lab summary</title>\n<style>\n\
         body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}\n\
         table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px}\n\
         td{text-align:right}figure{margin:1em 0}figure svg{max-width:100%;height:auto}\n\
         </style>\n</head>\n<body>\n",
    );
    html.push_str(&render(head));
    for (name, text) in sections {
        let _ = writeln!(html, "<section id=\"{name}\">");
        html.push_str(&render(text));
        for f in files(out, name).iter().filter(|f| f.ends_with(".svg")) {
            let svg = fs::read_to_string(out.join(name).join(f)).unwrap_or_default();
            let _ = writeln!(
                html,
                "<figure id=\"{name}-{f}\">\n{}\n<figcaption><a href=\"{name}/{f}\">{f}</a></figcaption>\n</figure>",
                svg.trim()
            );
        }
        html.push_str("</section>\n");
    }
    html.push_str("</body>\n</html>\n");
    html
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
    fn links_are_found_in_markdown_and_html() {
        let l = links("[a](x/a.svg) [t](#top) <a href=\"x/b.csv\">b</a> [w](https://e.org)");
        assert_eq!(l, [PathBuf::from("x/a.svg"), PathBuf::from("x/b.csv")]);
    }
}
