//! `kv shell`: many operations in one process. One command per stdin line,
//! one result line per command (a scan prints its pairs, then `end N`);
//! a failing command prints `error: ...` and the shell goes on. Arguments
//! use the TSV escapes (`\x20` for a space in a key), as the output does.

use std::io::BufRead;

use flashkv_engine::Db;
use serde_json::json;

use super::ops::{count_keys, each_pair, prefix_end, Out};
use super::Fail;

pub fn run(db: &Db, out: &mut Out) -> Result<bool, Fail> {
    let stdin = std::io::stdin().lock();
    for line in stdin.split(b'\n') {
        let line = line?;
        let line = String::from_utf8_lossy(&line);
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        if let Err(Fail::Usage(e) | Fail::Run(e)) = command(db, out, line) {
            if out.json {
                out.object(json!({"error": e}))?;
            } else {
                out.line(&format!("error: {e}"))?;
            }
        }
        // Scripts wait for each answer before sending more.
        out.finish()?;
    }
    db.flush()?;
    Ok(true)
}

fn command(db: &Db, out: &mut Out, line: &str) -> Result<(), Fail> {
    let mut words = line.trim_start().splitn(3, char::is_whitespace);
    let cmd = words.next().unwrap_or_default();
    let (a, b) = (words.next(), words.next());
    let args = |n: usize| -> Result<(), Fail> {
        let got = [a, b].iter().filter(|w| w.is_some()).count();
        if got != n && !(cmd == "scan" && got == 0) {
            return Err(Fail::Usage(format!(
                "{cmd}: takes {n} argument(s), got {got}"
            )));
        }
        Ok(())
    };
    match cmd {
        "put" => {
            args(2)?;
            let (k, v) = (a.unwrap_or_default(), b.unwrap_or_default());
            db.put(&out.escaped(true, k)?, &out.escaped(false, v)?)?;
            reply(out, "ok", json!({"ok": true}))
        }
        "get" => {
            args(1)?;
            match db.get(&out.escaped(true, a.unwrap_or_default())?)? {
                Some(v) => {
                    let v = out.show_value(&v)?;
                    reply(out, &v, json!({"found": true, "value": v}))
                }
                None => reply(out, "not found", json!({"found": false})),
            }
        }
        "delete" => {
            args(1)?;
            let d = db.delete(&out.escaped(true, a.unwrap_or_default())?)?;
            reply(
                out,
                if d { "ok" } else { "not found" },
                json!({"deleted": d}),
            )
        }
        "scan" => {
            args(1)?;
            let p = a
                .map(|p| out.escaped(true, p))
                .transpose()?
                .unwrap_or_default();
            let bounds = (std::ops::Bound::Included(p.clone()), prefix_end(&p));
            let jsonl = out.json;
            let n = each_pair(db, &bounds, false, usize::MAX, |k, v| out.pair(k, v, jsonl))?;
            reply(out, &format!("end {n}"), json!({"end": n}))
        }
        "count" => {
            args(0)?;
            let n = count_keys(db, b"")?;
            reply(out, &n.to_string(), json!({"count": n}))
        }
        "flush" => {
            args(0)?;
            db.flush()?;
            reply(out, "ok", json!({"ok": true}))
        }
        c => Err(Fail::Usage(format!(
            "unknown command {c:?} (put, get, delete, scan, count, flush)"
        ))),
    }
}

fn reply(out: &mut Out, text: &str, j: serde_json::Value) -> Result<(), Fail> {
    if out.json {
        out.object(j)
    } else {
        out.line(text)
    }
}
