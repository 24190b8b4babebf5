//! The docs as a reader uses them: every shell command in README.md and
//! docs/*.md (```sh blocks) runs as written, with the exit code it says
//! (0, or 1 where its comment says "exits 1"), except the few listed in
//! [`EXCEPTIONS`] and [`SECTIONS`] with the reason. Commands run in a scratch folder that
//! holds `traces/` and `docs/` of this checkout, with the `flashkv` under
//! test first on PATH; `/tmp/` and `/var/tmp/` in a command stand for that
//! folder, so runs never meet each other's files. Each page runs in a test
//! of its own (`page_tests!`), so the test runner runs pages side by side;
//! a command over two seconds prints its time. The README stays a front
//! page: at most 250 lines, no dated history.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Commands not run here: (how the command starts, why).
const EXCEPTIONS: &[(&str, &str)] = &[
    ("./scripts/test", "the test command: it runs this test"),
    (
        "cargo install --locked --path crates/cli",
        "a release build of minutes; `install_line_installs_flashkv` checks its path",
    ),
    (
        "flashkv lab  ",
        "the full lab, minutes; `flashkv lab --quick` runs",
    ),
    (
        "cargo run --release -p flashkv-bench",
        "a release build of the benchmark, then long runs (the peers come from crates.io); .ci/run runs `--ycsb --quick`",
    ),
    (
        "flashkv lab pgbench",
        "root, the postgres user, FUSE and PostgreSQL, and minutes; .ci/run runs `lab pgbench --quick`, crates/cli/tests/lab_pgbench.rs its skip",
    ),
    ("python3 -m venv", "needs PyPI; scripts/test makes the venv"),
    (
        "pip install",
        "needs PyPI; scripts/test installs the packages",
    ),
    (
        "flashkv profile --path /dev/sdb",
        "needs a block device and root",
    ),
    (
        "fio ",
        "fio is not installed by CI (crates/cli/tests/fio.rs compares when it is)",
    ),
    (
        "flashkv serve ",
        "a server in the background; crates/cli/tests/serve.rs drives it",
    ),
    (
        "qemu-",
        "qemu clients of the server above (crates/cli/tests/serve.rs runs qemu-io)",
    ),
    ("kill ", "signals to the server above"),
];

/// Whole sections not run here: (page, heading, why).
const SECTIONS: &[(&str, &str, &str)] = &[(
    "serving.md",
    "Step by step",
    "nbdinfo, nbdfuse, mkfs.ext4 and fuse2fs on the server of step 1, as root with /dev/fuse; crates/cli/tests/libnbd.rs runs these steps where they are installed",
)];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn docs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    v.sort();
    v.insert(0, root().join("README.md"));
    v
}

/// The commands of a Markdown file's ```sh blocks, continuation lines
/// joined, comment lines and blank lines left out.
fn commands(md: &str) -> Vec<String> {
    commands_by_section(md)
        .into_iter()
        .map(|(_, c)| c)
        .collect()
}

/// The same, each with the heading of the section it is in.
fn commands_by_section(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut heading, mut cmd) = (String::new(), String::new());
    // Inside a fence: whether it is a ```sh block.
    let mut fence: Option<bool> = None;
    for line in md.lines() {
        let t = line.trim_end();
        if let Some(info) = t.trim_start().strip_prefix("```") {
            fence = match fence {
                None => Some(info.trim() == "sh"),
                Some(_) => None,
            };
            continue;
        }
        match fence {
            None => {
                if t.starts_with('#') {
                    heading = t.trim_start_matches('#').trim().to_string();
                }
            }
            Some(false) => {}
            Some(true) => {
                if cmd.is_empty() && (t.trim().is_empty() || t.trim_start().starts_with('#')) {
                    continue;
                }
                let t = if cmd.is_empty() { t.trim_start() } else { t };
                match t.strip_suffix('\\') {
                    Some(part) => {
                        cmd.push_str(part);
                        cmd.push(' ');
                    }
                    None => {
                        cmd.push_str(t);
                        out.push((heading.clone(), std::mem::take(&mut cmd)));
                    }
                }
            }
        }
    }
    out
}

fn exception(cmd: &str) -> Option<&'static (&'static str, &'static str)> {
    // `flashkv lab` alone (with a comment), not `flashkv lab --quick`.
    let padded = format!("{cmd}  ");
    EXCEPTIONS
        .iter()
        .find(|(start, _)| padded.starts_with(start))
}

/// The exit code a command's comment promises.
fn expected(cmd: &str) -> i32 {
    match cmd.split_once(" # ").map(|(_, c)| c) {
        Some(c) if c.contains("exits 1") => 1,
        _ => 0,
    }
}

/// The pages whose commands run, each in a test of its own so that the
/// test runner runs them side by side; every page of `docs/` with a ```sh
/// block must be listed (`every_page_with_commands_has_its_test`).
macro_rules! page_tests {
    ($($name:ident => $page:literal),* $(,)?) => {
        const PAGES: &[&str] = &[$($page),*];
        $(
            #[test]
            fn $name() {
                run_page($page);
            }
        )*
    };
}

page_tests! {
    commands_of_the_readme_run_as_written => "README.md",
    commands_of_devices_md_run_as_written => "devices.md",
    commands_of_engine_md_run_as_written => "engine.md",
    commands_of_hybrid_md_run_as_written => "hybrid.md",
    commands_of_lab_md_run_as_written => "lab.md",
    commands_of_profiler_md_run_as_written => "profiler.md",
    commands_of_seed000_md_run_as_written => "seed000.md",
}

fn page_path(page: &str) -> PathBuf {
    match page {
        "README.md" => root().join(page),
        _ => root().join("docs").join(page),
    }
}

/// Why a command of `page` under `heading` is not run here: its section
/// (an index into [`SECTIONS`]) or the command (into [`EXCEPTIONS`]).
enum Skip {
    Section(usize),
    Exception(usize),
}

fn skip(page: &str, heading: &str, cmd: &str) -> Option<Skip> {
    if let Some(k) = SECTIONS
        .iter()
        .position(|(p, h, _)| *p == page && *h == heading)
    {
        return Some(Skip::Section(k));
    }
    let e = exception(cmd)?;
    Some(Skip::Exception(
        EXCEPTIONS
            .iter()
            .position(|x| x == e)
            .expect("an exception's own entry"),
    ))
}

/// Runs every command of one page in a scratch folder of its own (its
/// blocks build on each other) and fails naming each that exited other
/// than documented. Commands over two seconds print their time.
fn run_page(page: &str) {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_flashkv"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let dir = tempfile::tempdir().unwrap();
    for sub in ["traces", "docs"] {
        std::os::unix::fs::symlink(root().join(sub), dir.path().join(sub)).unwrap();
    }
    let scratch = format!("{}/", dir.path().display());
    let text = std::fs::read_to_string(page_path(page)).unwrap();
    let (mut failures, mut ran) = (Vec::new(), 0);
    for (heading, cmd) in commands_by_section(&text) {
        if skip(page, &heading, &cmd).is_some() {
            continue;
        }
        let run = cmd
            .replace("/var/tmp/", "\u{0}")
            .replace("/tmp/", &scratch)
            .replace('\u{0}', &scratch);
        let started = std::time::Instant::now();
        let o = Command::new("timeout")
            .args(["300", "bash", "-o", "pipefail", "-c", &run])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("HOME", dir.path())
            .output()
            .unwrap();
        let took = started.elapsed().as_secs_f64();
        if took > 2.0 {
            eprintln!("{page}: {took:.1} s: {cmd}");
        }
        ran += 1;
        let code = o.status.code().unwrap_or(-1);
        if code != expected(&cmd) {
            let err = String::from_utf8_lossy(&o.stderr);
            let tail: Vec<&str> = err.lines().rev().take(3).collect();
            failures.push(format!(
                "{page}: `{cmd}` exited {code}: {}",
                tail.join(" / ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} commands failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran > 0, "{page} is listed but runs no command");
}

/// Every page with commands has its test; the pages together run at least
/// 40 commands; every exception and excepted section is still needed.
#[test]
fn every_page_with_commands_has_its_test() {
    let mut used = vec![false; EXCEPTIONS.len()];
    let mut used_sections = vec![false; SECTIONS.len()];
    let mut runnable = 0;
    for doc in docs() {
        let page = doc.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut here = 0;
        for (heading, cmd) in commands_by_section(&text) {
            match skip(&page, &heading, &cmd) {
                Some(Skip::Section(k)) => used_sections[k] = true,
                Some(Skip::Exception(k)) => used[k] = true,
                None => here += 1,
            }
        }
        runnable += here;
        assert_eq!(
            PAGES.contains(&page.as_str()),
            here > 0,
            "{page}: {here} commands run, but the page is {}listed in page_tests!",
            if PAGES.contains(&page.as_str()) {
                ""
            } else {
                "not "
            }
        );
    }
    assert!(runnable >= 40, "only {runnable} commands run");
    let stale: Vec<&str> = EXCEPTIONS
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(e, _)| e.0)
        .collect();
    assert!(stale.is_empty(), "exceptions no command needs: {stale:?}");
    let stale: Vec<&str> = SECTIONS
        .iter()
        .zip(&used_sections)
        .filter(|(_, u)| !**u)
        .map(|(e, _)| e.1)
        .collect();
    assert!(
        stale.is_empty(),
        "sections excepted that hold no command: {stale:?}"
    );
}

/// The README's install line names the crate that builds `flashkv`.
#[test]
fn install_line_installs_flashkv() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    // --locked: the install builds the versions in Cargo.lock, the ones tested.
    assert!(readme.contains("cargo install --locked --path crates/cli"));
    let manifest = std::fs::read_to_string(root().join("crates/cli/Cargo.toml")).unwrap();
    assert!(
        manifest.contains("[[bin]]\nname = \"flashkv\""),
        "{manifest}"
    );
    // .ci/run runs the README's two commands.
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.contains("./scripts/test") && ci.contains("lab --quick"));
    for cmd in ["flashkv lab ", "./scripts/test "] {
        assert!(
            commands(&readme).iter().any(|c| c.starts_with(cmd)),
            "README lacks {cmd}"
        );
    }
}

/// A front page: short, and its dated history lives in docs/.
#[test]
fn the_readme_is_a_front_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.lines().count() <= 250,
        "{} lines",
        readme.lines().count()
    );
    let dated = readme
        .split(|c: char| !c.is_ascii_digit() && c != '-')
        .any(|w| {
            w.len() == 10
                && w.as_bytes()[4] == b'-'
                && w.as_bytes()[7] == b'-'
                && w.starts_with("20")
        });
    assert!(!dated, "the README holds a date: history goes to docs/");
    for page in [
        "engine",
        "devices",
        "profiler",
        "hybrid",
        "serving",
        "lab",
        "python",
        "benchmarks",
    ] {
        let link = format!("(docs/{page}.md)");
        assert!(readme.contains(&link), "README does not link {link}");
        assert!(root().join(format!("docs/{page}.md")).is_file());
    }
}

#[test]
fn commands_are_split_and_exit_codes_read_as_documented() {
    let md = "x\n```sh\n# a comment\nflashkv a \\\n    --b\n\nflashkv c   # exits 1 (absent)\n```\n```rust\nno\n```\n";
    assert_eq!(
        commands(md),
        ["flashkv a      --b", "flashkv c   # exits 1 (absent)"]
    );
    // Blocks in list items are indented; sections are named by their heading.
    let md = "## One\n```text\n# not a heading\n```\n1. Run:\n\n   ```sh\n   flashkv d &\n   ```\n### Two\n```sh\nflashkv e\n```\n";
    assert_eq!(
        commands_by_section(md),
        [
            ("One".to_string(), "flashkv d &".to_string()),
            ("Two".to_string(), "flashkv e".to_string())
        ]
    );
    assert_eq!(expected("flashkv c   # exits 1 (absent)"), 1);
    assert_eq!(expected("flashkv c"), 0);
    assert!(exception("flashkv lab                 # every experiment").is_some());
    assert!(exception("flashkv lab --quick --out x").is_none());
    assert!(exception("flashkv lab").is_some());
}
