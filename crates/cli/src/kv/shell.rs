//! `kv shell`: many operations in one process, as sqlite3 or redis-cli
//! offer. On a terminal: a prompt, line editing and history (rustyline).
//! From a pipe: one command per line and one answer per command (a scan
//! answers with its pairs, then `end N`), flushed before the next line is
//! read, so a script can talk to it; no prompt. A failing command answers
//! `error: ...` and the shell goes on. The commands take the one-shot
//! commands' arguments and answer in their JSON shape.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use flashkv_engine::Db;
use rustyline::error::ReadlineError;
use serde_json::json;

use super::ops::{self, Out};
use super::words;
use super::Fail;

/// The shell's commands, parsed from the words of one line.
#[derive(Parser)]
#[command(
    multicall = true,
    help_template = "Commands (quote a key with spaces: \"my key\"; `help CMD` shows its options):\n{subcommands}"
)]
struct Line {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
#[command(help_template = "{about-with-newline}\n{usage-heading} {usage}\n\n{all-args}")]
enum Cmd {
    /// Set KEY to VALUE (the value is the rest of the line).
    Put(ops::PutArgs),
    /// Print the value of KEY; with several keys a key<TAB>value line each.
    Get(ops::GetArgs),
    /// Remove KEYs, or every key under --prefix or from --from to --to.
    Delete(ops::DeleteArgs),
    /// Print pairs in key order, then `end N`.
    Scan(ops::ScanArgs),
    /// Print how many keys there are (under PREFIX).
    Count(ops::CountArgs),
    /// Print what the store holds and this session's counters.
    Stats,
    /// Make every change so far durable.
    Flush,
    /// Leave the shell (also `exit`, or Ctrl-D); the store is flushed and closed.
    #[command(alias = "exit")]
    Quit,
}

/// Whether the shell goes on after a command.
#[derive(PartialEq, Eq)]
enum Flow {
    Go,
    Quit,
}

pub fn run(db: &Db, out: &mut Out, path: &Path) -> Result<bool, Fail> {
    out.shell = true;
    if std::io::stdin().is_terminal() {
        interactive(db, out, path)?;
    } else {
        for line in std::io::stdin().lock().split(b'\n') {
            let line = line?;
            if one_line(db, out, path, &String::from_utf8_lossy(&line))? == Flow::Quit {
                break;
            }
        }
    }
    db.flush()?;
    Ok(true)
}

/// Bytes of a command the history keeps: a long value is cut, so a 20 KB
/// put leaves a line, not 20 KB, in ~/.flashkv_history.
const HISTORY_LINE: usize = 200;

/// What the history keeps of `line`: nothing for a blank one, the first
/// [`HISTORY_LINE`] bytes (at a character boundary) and `…` for a long one.
fn history_entry(line: &str) -> Option<String> {
    if line.trim().is_empty() {
        return None;
    }
    if line.len() <= HISTORY_LINE {
        return Some(line.to_string());
    }
    let cut = (0..=HISTORY_LINE)
        .rev()
        .find(|&i| line.is_char_boundary(i))
        .unwrap_or(0);
    Some(format!("{}…", &line[..cut]))
}

/// A prompt with line editing and history kept in ~/.flashkv_history.
fn interactive(db: &Db, out: &mut Out, path: &Path) -> Result<(), Fail> {
    let mut ed = rustyline::DefaultEditor::new().map_err(|e| Fail::Run(e.to_string()))?;
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".flashkv_history"));
    if let Some(h) = &history {
        let _ = ed.load_history(h); // none yet on a first run
    }
    eprintln!(
        "flashkv kv shell on {}: `help` lists the commands, `quit` or Ctrl-D leaves",
        path.display()
    );
    loop {
        match ed.readline("flashkv> ") {
            Ok(line) => {
                if let Some(entry) = history_entry(&line) {
                    let _ = ed.add_history_entry(entry.as_str());
                }
                if one_line(db, out, path, &line)? == Flow::Quit {
                    break;
                }
            }
            // Ctrl-C drops the line being typed, as in other shells.
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(Fail::Run(e.to_string())),
        }
    }
    if let Some(h) = &history {
        if let Err(e) = ed.save_history(h) {
            eprintln!("warning: history not saved to {}: {e}", h.display());
        }
    }
    Ok(())
}

/// Runs one line and answers it (an error is an answer too).
fn one_line(db: &Db, out: &mut Out, path: &Path, line: &str) -> Result<Flow, Fail> {
    let line = line.trim_end_matches('\r');
    if line.trim().is_empty() {
        return Ok(Flow::Go);
    }
    let flow = match command(db, out, path, line) {
        Ok(flow) => flow,
        Err(Fail::Usage(e) | Fail::Run(e)) => {
            out.reply(&format!("error: {e}"), json!({"error": e}))?;
            Flow::Go
        }
    };
    out.finish()?;
    Ok(flow)
}

fn command(db: &Db, out: &mut Out, path: &Path, line: &str) -> Result<Flow, Fail> {
    let mut w = words::split(line).map_err(Fail::Usage)?;
    // `put K V`: the value is the rest of the line, spaces and all, unless
    // it is one word (which may be quoted).
    if w.len() > 3 && w[0].text == "put" {
        let rest = line[w[2].start..].trim_end().to_string();
        w.truncate(2);
        w.push(words::Word {
            text: rest,
            start: 0,
        });
    }
    let first = w[0].text.clone();
    let parsed = match Line::try_parse_from(w.into_iter().map(|w| w.text)) {
        Ok(p) => p,
        Err(e) => return help_or_error(out, &e, &first),
    };
    match parsed.cmd {
        Cmd::Put(a) => ops::put(db, out, &a)?,
        Cmd::Get(a) => ops::get(db, out, &a)?,
        Cmd::Delete(a) => ops::delete(db, out, &a)?,
        Cmd::Scan(a) => ops::scan(db, out, &a)?,
        Cmd::Count(a) => ops::count(db, out, &a)?,
        Cmd::Stats => ops::stats(db, out, path)?,
        Cmd::Flush => {
            db.flush()?;
            out.reply("ok", json!({"ok": true}))?;
            true
        }
        Cmd::Quit => return Ok(Flow::Quit),
    };
    Ok(Flow::Go)
}

/// `help` (or `help CMD`, `CMD --help`) prints the help; anything else
/// clap refuses is an error in one line.
fn help_or_error(out: &mut Out, e: &clap::Error, cmd: &str) -> Result<Flow, Fail> {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let text = e.render().to_string();
            let text = text.trim_end();
            if out.json {
                out.object(json!({"help": text}))?;
            } else {
                out.line(text)?;
            }
            Ok(Flow::Go)
        }
        ErrorKind::InvalidSubcommand => Err(Fail::Usage(format!(
            "unknown command {cmd:?} (put, get, delete, scan, count, stats, flush, help, quit)"
        ))),
        _ => {
            let line = crate::error::clap_line(e).replace("(see --help)", "(see help)");
            Err(Fail::Usage(format!("{cmd}: {line}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_keeps_a_long_command_cut() {
        assert_eq!(history_entry("  "), None);
        assert_eq!(history_entry("put a b").as_deref(), Some("put a b"));
        let long = format!("put k {}", "é".repeat(10_000));
        let kept = history_entry(&long).unwrap();
        assert!(
            kept.len() <= HISTORY_LINE + "…".len() && kept.ends_with('…'),
            "{}",
            kept.len()
        );
        assert!(long.starts_with(kept.trim_end_matches('…')));
    }
}
