//! `kv import`: TSV or JSON Lines into the store in batched commits, then
//! one flush. A malformed line stops the import with its line number; every
//! line before it is committed.

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use flashkv_engine::{Db, WriteBatch};
use indicatif::ProgressBar;
use serde_json::{json, Value};

use super::codec::Codec;
use super::ops::{Out, TextFormat};
use super::Fail;

#[derive(Args)]
pub struct ImportArgs {
    /// File to read; `-` or nothing reads stdin.
    file: Option<PathBuf>,
    /// Layout of the input: tsv (key<TAB>value lines, escaped as scan
    /// prints them) or jsonl ({"key": ..., "value": ...} lines).
    #[arg(
        long,
        value_enum,
        default_value = "tsv",
        hide_possible_values = true,
        value_name = "tsv|jsonl"
    )]
    input_format: TextFormat,
    /// Pairs per atomic commit (1 to 10,000,000).
    #[arg(long, default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    batch: u64,
}

/// The opened input, its name for messages and its size when known.
pub struct Input {
    reader: Box<dyn BufRead>,
    name: String,
    len: Option<u64>,
}

/// Opens the input before the store, so a missing file creates nothing.
pub fn open_input(a: &ImportArgs) -> Result<Input, Fail> {
    let cap = 1 << 20;
    match a.file.as_deref().filter(|p| p.as_os_str() != "-") {
        None => Ok(Input {
            reader: Box::new(BufReader::with_capacity(cap, std::io::stdin())),
            name: "stdin".into(),
            len: None,
        }),
        Some(p) => {
            let bad = |e: std::io::Error| Fail::Usage(format!("import {}: {e}", p.display()));
            let f = File::open(p).map_err(bad)?;
            let m = f.metadata().map_err(bad)?;
            if m.is_dir() {
                return Err(Fail::Usage(format!(
                    "import {}: is a directory",
                    p.display()
                )));
            }
            Ok(Input {
                reader: Box::new(BufReader::with_capacity(cap, f)),
                name: p.display().to_string(),
                len: Some(m.len()),
            })
        }
    }
}

/// Progress on stderr: over the bytes of a file (a bar with percent and
/// ETA on a terminal, a line per tenth otherwise); over stdin, whose size
/// is unknown, a spinner or a line per 100,000 pairs.
enum Progress {
    Bytes(crate::progress::Progress),
    Spinner(ProgressBar),
    Lines,
}

impl Progress {
    fn new(len: Option<u64>) -> Progress {
        match len {
            Some(n) => Progress::Bytes(crate::progress::Progress::new(
                "import",
                n,
                crate::progress::Unit::Bytes,
            )),
            None if std::io::stderr().is_terminal() => {
                Progress::Spinner(ProgressBar::new_spinner())
            }
            None => Progress::Lines,
        }
    }

    /// Called per pair; shows something every 1,024 pairs.
    fn tick(&self, bytes: u64, pairs: u64) {
        if pairs % 1024 != 0 && !matches!(self, Progress::Lines) {
            return;
        }
        match self {
            Progress::Bytes(p) => {
                p.start(&format!("{pairs} pairs"));
                p.advance_to(bytes, &format!(" ({pairs} pairs)"));
            }
            Progress::Spinner(b) => b.set_message(format!("{pairs} pairs")),
            Progress::Lines if pairs.is_multiple_of(100_000) => eprintln!("import: {pairs} pairs"),
            Progress::Lines => {}
        }
    }

    fn finish(self) {
        match self {
            Progress::Bytes(p) => p.finish(),
            Progress::Spinner(b) => b.finish_and_clear(),
            Progress::Lines => {}
        }
    }
}

pub fn run(db: &Db, out: &mut Out, a: &ImportArgs, mut input: Input) -> Result<bool, Fail> {
    let start = Instant::now();
    let progress = Progress::new(input.len);
    let (mut batch, mut line, mut bytes, mut pairs, mut batches) =
        (WriteBatch::default(), Vec::new(), 0u64, 0u64, 0u64);
    let mut lineno = 0u64;
    let result = loop {
        line.clear();
        let n = match input.reader.read_until(b'\n', &mut line) {
            Ok(0) => break Ok(()),
            Ok(n) => n,
            Err(e) => break Err(Fail::Run(format!("{}: {e}", input.name))),
        };
        lineno += 1;
        bytes += n as u64;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        match parse(&line, a.input_format, out.codec) {
            Ok((k, v)) => batch.put(&k, &v),
            Err(e) => {
                let msg = format!("{}:{lineno}: {e}", input.name);
                break Err(Fail::Usage(msg));
            }
        };
        pairs += 1;
        if batch.len() as u64 >= a.batch {
            db.write(std::mem::take(&mut batch))?;
            batches += 1;
        }
        progress.tick(bytes, pairs);
    };
    // What parsed before a failure is committed too, then made durable.
    let pending = batch.len() as u64;
    if pending > 0 {
        db.write(batch)?;
        batches += 1;
    }
    db.flush()?;
    progress.finish();
    let imported = pairs;
    if let Err(Fail::Usage(m)) = result {
        return Err(Fail::Usage(format!(
            "{m} ({imported} pairs before it were imported)"
        )));
    }
    result?;
    let secs = start.elapsed().as_secs_f64();
    if out.json {
        out.object(
            json!({"imported": imported, "lines": lineno, "batches": batches, "seconds": secs}),
        )?;
    } else {
        eprintln!(
            "imported {} from {} in {batches} batches, {secs:.2} s",
            super::pairs(imported),
            input.name
        );
    }
    Ok(true)
}

/// One line as a (key, value) pair.
fn parse(line: &[u8], f: TextFormat, c: Codec) -> Result<(Vec<u8>, Vec<u8>), String> {
    match f {
        TextFormat::Tsv => {
            let tab = line
                .iter()
                .position(|&b| b == b'\t')
                .ok_or("no tab between key and value")?;
            let (k, v) = (&line[..tab], &line[tab + 1..]);
            if v.contains(&b'\t') {
                return Err("more than one tab (write a tab in a key or value as \\t)".into());
            }
            let k = c.key.decode_tsv(k).map_err(|e| format!("key: {e}"))?;
            let v = c.value.decode_tsv(v).map_err(|e| format!("value: {e}"))?;
            Ok((k, v))
        }
        TextFormat::Jsonl => {
            let obj: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
            let field = |name: &str| {
                obj.get(name)
                    .and_then(Value::as_str)
                    .ok_or(format!("no string \"{name}\" field"))
            };
            let k = c
                .key
                .decode_arg(field("key")?)
                .map_err(|e| format!("key: {e}"))?;
            let v = c
                .value
                .decode_arg(field("value")?)
                .map_err(|e| format!("value: {e}"))?;
            Ok((k, v))
        }
    }
}
