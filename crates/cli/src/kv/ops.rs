//! The one-shot kv subcommands and how they print: TSV-style text by
//! default, one JSON object per line with `--json`.

use super::pairs;
use std::io::{BufWriter, Stdout, Write};
use std::ops::Bound;
use std::path::Path;

use clap::{Args, ValueEnum};
use flashkv_engine::{Db, WriteBatch};
use serde_json::{json, Value};

use super::codec::{Codec, Format};
use super::Fail;

/// Text layouts of pairs for export and import.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TextFormat {
    /// key<TAB>value per line, escaped (see --key-format).
    Tsv,
    /// {"key": "...", "value": "..."} per line.
    Jsonl,
}

/// Text of keys and values on the command line: the form --key-format and
/// --value-format name (utf8 text by default; in `kv shell` with the TSV
/// escapes `\t`, `\xNN`).
#[derive(Args)]
pub struct PutArgs {
    /// The key.
    pub key: String,
    /// The value (in `kv shell`: the rest of the line).
    pub value: String,
}

#[derive(Args)]
pub struct GetArgs {
    /// The key, or several: then one key<TAB>value line per key found.
    #[arg(required = true, value_name = "KEY")]
    pub keys: Vec<String>,
}

#[derive(Args)]
#[command(group = clap::ArgGroup::new("what").required(true).multiple(true)
    .args(["keys", "prefix", "from", "to"]))]
pub struct DeleteArgs {
    /// The key, or several.
    #[arg(value_name = "KEY", conflicts_with_all = ["prefix", "from", "to"])]
    pub keys: Vec<String>,
    /// Delete every key starting with this.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub prefix: Option<String>,
    /// Delete keys from this one (inclusive) ...
    #[arg(long)]
    pub from: Option<String>,
    /// ... to this one (exclusive); either end may be left open.
    #[arg(long)]
    pub to: Option<String>,
}

#[derive(Args)]
pub struct ScanArgs {
    /// Only keys starting with this (the same as --prefix).
    #[arg(value_name = "PREFIX", conflicts_with_all = ["prefix", "from", "to"])]
    start: Option<String>,
    /// Only keys starting with this.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    prefix: Option<String>,
    /// First key (inclusive).
    #[arg(long)]
    from: Option<String>,
    /// Last key (exclusive).
    #[arg(long)]
    to: Option<String>,
    /// Descending order.
    #[arg(long)]
    reverse: bool,
    /// At most this many pairs.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
}

#[derive(Args)]
pub struct CountArgs {
    /// Only keys starting with this (the same as --prefix).
    #[arg(value_name = "PREFIX", conflicts_with = "prefix")]
    start: Option<String>,
    /// Only keys starting with this.
    #[arg(long)]
    prefix: Option<String>,
}

impl CountArgs {
    pub fn prefix(&self) -> Option<&str> {
        self.start.as_deref().or(self.prefix.as_deref())
    }
}

impl ScanArgs {
    pub fn check(&self, out: &Out) -> Result<(), Fail> {
        for k in [&self.start, &self.prefix, &self.from, &self.to]
            .into_iter()
            .flatten()
        {
            out.key(k)?;
        }
        Ok(())
    }
}

impl DeleteArgs {
    pub fn check(&self, out: &Out) -> Result<(), Fail> {
        for k in self
            .keys
            .iter()
            .chain([&self.prefix, &self.from, &self.to].into_iter().flatten())
        {
            out.key(k)?;
        }
        Ok(())
    }
}

/// Buffered stdout that knows how keys and values are written, and
/// whether it answers the shell (every command then answers on stdout and
/// arguments carry the TSV escapes) or a one-shot command.
pub struct Out {
    pub codec: Codec,
    pub json: bool,
    pub shell: bool,
    w: BufWriter<Stdout>,
}

impl Out {
    pub fn new(codec: Codec, json: bool) -> Out {
        Out {
            codec,
            json,
            shell: false,
            w: BufWriter::new(std::io::stdout()),
        }
    }

    pub fn key(&self, arg: &str) -> Result<Vec<u8>, Fail> {
        self.decode(self.codec.key, "key", arg)
    }

    pub fn value(&self, arg: &str) -> Result<Vec<u8>, Fail> {
        self.decode(self.codec.value, "value", arg)
    }

    fn decode(&self, f: Format, what: &str, arg: &str) -> Result<Vec<u8>, Fail> {
        match self.shell {
            true => f.decode_tsv(arg.as_bytes()),
            false => f.decode_arg(arg),
        }
        .map_err(|e| Fail::Usage(format!("{what} {arg:?}: {e}")))
    }

    /// A key as output shows it (escaped text, or a JSON string's content).
    pub fn show_key(&self, k: &[u8]) -> Result<String, Fail> {
        show(self.codec.key, k, self.json)
    }

    /// Prints `text`, or `j` with --json: the shell's and a command's answer.
    pub fn reply(&mut self, text: &str, j: Value) -> Result<(), Fail> {
        match self.json {
            true => self.object(j),
            false => self.line(text),
        }
    }

    pub fn line(&mut self, s: &str) -> Result<(), Fail> {
        writeln!(self.w, "{s}")?;
        Ok(())
    }

    pub fn object(&mut self, v: Value) -> Result<(), Fail> {
        self.line(&v.to_string())
    }

    /// One value in the output form (escaped text, or a JSON string).
    pub fn show_value(&self, v: &[u8]) -> Result<String, Fail> {
        show(self.codec.value, v, self.json)
    }

    /// One pair: a TSV line, or a JSON object with `jsonl`.
    pub fn pair(&mut self, k: &[u8], v: &[u8], jsonl: bool) -> Result<(), Fail> {
        if jsonl {
            let (k, v) = (
                show(self.codec.key, k, true)?,
                show(self.codec.value, v, true)?,
            );
            return self.object(json!({"key": k, "value": v}));
        }
        let mut s = String::with_capacity(k.len() + v.len() + 1);
        self.codec.key.encode_tsv(k, &mut s);
        s.push('\t');
        self.codec.value.encode_tsv(v, &mut s);
        self.line(&s)
    }

    pub fn finish(&mut self) -> Result<(), Fail> {
        self.w.flush()?;
        Ok(())
    }
}

fn show(f: Format, b: &[u8], json: bool) -> Result<String, Fail> {
    if json {
        f.encode_json(b).map_err(Fail::Run)
    } else {
        let mut s = String::new();
        f.encode_tsv(b, &mut s);
        Ok(s)
    }
}

pub fn put(db: &Db, out: &mut Out, a: &PutArgs) -> Result<bool, Fail> {
    let k = out.key(&a.key)?;
    db.put(&k, &out.value(&a.value)?)?;
    let j = json!({"op": "put", "key": out.show_key(&k)?, "ok": true});
    if out.json || out.shell {
        out.reply("ok", j)?;
    }
    Ok(true)
}

/// One key: its value (shell: or `not found`). Several: a key<TAB>value
/// line per key found and, for one that is not, `not found: KEY` (on
/// stderr outside the shell). With --json one object per key. False if any
/// key is absent.
pub fn get(db: &Db, out: &mut Out, a: &GetArgs) -> Result<bool, Fail> {
    let mut all = true;
    for arg in &a.keys {
        let k = out.key(arg)?;
        let v = db.get(&k)?;
        all &= v.is_some();
        let key = out.show_key(&k)?;
        match (v, out.json) {
            (Some(v), true) => {
                let v = out.show_value(&v)?;
                out.object(json!({"key": key, "found": true, "value": v}))?
            }
            (None, true) => out.object(json!({"key": key, "found": false}))?,
            (Some(v), false) if a.keys.len() == 1 => {
                let v = out.show_value(&v)?;
                out.line(&v)?
            }
            (Some(v), false) => out.pair(&k, &v, false)?,
            (None, false) if out.shell && a.keys.len() == 1 => out.line("not found")?,
            (None, false) if out.shell => out.line(&format!("not found: {key}"))?,
            (None, false) => eprintln!("not found: {key}"),
        }
    }
    Ok(all)
}

/// Keys named one by one (false if any was absent), or a prefix or range.
pub fn delete(db: &Db, out: &mut Out, a: &DeleteArgs) -> Result<bool, Fail> {
    if a.keys.is_empty() {
        let bounds = bounds(out, a.prefix.as_deref(), &a.from, &a.to)?;
        let n = delete_range(db, &bounds)?;
        let j =
            json!({"op": "delete", "prefix": a.prefix, "from": a.from, "to": a.to, "deleted": n});
        if out.json || out.shell {
            out.reply(&format!("deleted {n}"), j)?;
        } else {
            eprintln!("deleted {}", pairs(n));
        }
        return Ok(true);
    }
    let mut all = true;
    for arg in &a.keys {
        let k = out.key(arg)?;
        let deleted = db.delete(&k)?;
        all &= deleted;
        let key = out.show_key(&k)?;
        let j = json!({"op": "delete", "key": key, "deleted": deleted});
        match (deleted, out.json || out.shell) {
            (_, true) if a.keys.len() == 1 => {
                out.reply(if deleted { "ok" } else { "not found" }, j)?
            }
            (true, true) => out.reply(&format!("deleted: {key}"), j)?,
            (false, true) => out.reply(&format!("not found: {key}"), j)?,
            (false, false) => eprintln!("not found: {key}"),
            (true, false) => {}
        }
    }
    Ok(all)
}

/// Keys deleted per commit by a range delete: each batch is atomic, the
/// whole range is not (a failure leaves the batches before it deleted).
const DELETE_BATCH: usize = 1000;

/// Deletes every key in `bounds` in batches, holding one batch of keys in
/// memory at a time; the number deleted.
fn delete_range(db: &Db, bounds: &Range) -> Result<u64, Fail> {
    let mut n = 0;
    loop {
        let mut batch = WriteBatch::default();
        let got = each_pair(db, bounds, false, DELETE_BATCH, |k, _| {
            batch.delete(k);
            Ok(())
        })?;
        if got == 0 {
            return Ok(n);
        }
        db.write(batch)?;
        n += got;
    }
}

/// The range a prefix, or --from and --to, name.
fn bounds(
    out: &Out,
    prefix: Option<&str>,
    from: &Option<String>,
    to: &Option<String>,
) -> Result<Range, Fail> {
    if let Some(p) = prefix {
        return Ok(prefix_bounds(&out.key(p)?));
    }
    let dec = |s: &Option<String>| s.as_deref().map(|s| out.key(s)).transpose();
    let lo = dec(from)?.map_or(Bound::Unbounded, Bound::Included);
    let hi = dec(to)?.map_or(Bound::Unbounded, Bound::Excluded);
    Ok((lo, hi))
}

/// The first key after every key starting with `p` (none if `p` is all 0xff).
pub fn prefix_end(p: &[u8]) -> Bound<Vec<u8>> {
    let mut end = p.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Bound::Excluded(end);
        }
    }
    Bound::Unbounded
}

/// A range of keys: the lower and the upper bound.
pub type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn prefix_bounds(p: &[u8]) -> Range {
    (Bound::Included(p.to_vec()), prefix_end(p))
}

/// Pairs in (lo, hi), streamed: memory stays bounded however many there are.
pub fn each_pair(
    db: &Db,
    (lo, hi): &Range,
    reverse: bool,
    limit: usize,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<(), Fail>,
) -> Result<u64, Fail> {
    let r = (bound_ref(lo), bound_ref(hi));
    let it = if reverse {
        db.range_rev(r)
    } else {
        db.range(r)
    };
    let mut n = 0;
    for pair in it.take(limit) {
        let pair = pair?;
        f(pair.key(), pair.value())?;
        n += 1;
    }
    Ok(n)
}

fn bound_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(|v| v.as_slice())
}

/// The pairs in order (shell: then `end N`).
pub fn scan(db: &Db, out: &mut Out, a: &ScanArgs) -> Result<bool, Fail> {
    let prefix = a.start.as_deref().or(a.prefix.as_deref());
    let bounds = bounds(out, prefix, &a.from, &a.to)?;
    let jsonl = out.json;
    let limit = a.limit.unwrap_or(usize::MAX);
    let n = each_pair(db, &bounds, a.reverse, limit, |k, v| out.pair(k, v, jsonl))?;
    if out.shell {
        out.reply(&format!("end {n}"), json!({"end": n}))?;
    }
    Ok(true)
}

pub fn count_keys(db: &Db, prefix: &[u8]) -> Result<u64, Fail> {
    let mut n = 0;
    for pair in db.prefix(prefix) {
        pair?;
        n += 1;
    }
    Ok(n)
}

pub fn count(db: &Db, out: &mut Out, a: &CountArgs) -> Result<bool, Fail> {
    let prefix = a.prefix();
    let p = prefix.map(|p| out.key(p)).transpose()?.unwrap_or_default();
    let n = count_keys(db, &p)?;
    let shown = prefix.map(|_| out.show_key(&p)).transpose()?;
    out.reply(&n.to_string(), json!({"count": n, "prefix": shown}))?;
    Ok(true)
}

pub fn export(db: &Db, out: &mut Out, prefix: Option<&str>, f: TextFormat) -> Result<bool, Fail> {
    let p = prefix.map(|p| out.key(p)).transpose()?.unwrap_or_default();
    let jsonl = out.json || f == TextFormat::Jsonl;
    let n = each_pair(db, &prefix_bounds(&p), false, usize::MAX, |k, v| {
        out.pair(k, v, jsonl)
    })?;
    eprintln!("exported {}", pairs(n as u64));
    Ok(true)
}

pub fn stats(db: &Db, out: &mut Out, path: &Path) -> Result<bool, Fail> {
    let file_bytes = std::fs::metadata(path)?.len();
    let shape = db.shape()?;
    let s = db.stats();
    let layout = match db.store_kind() {
        flashkv_engine::StoreKind::InPlace => "pages written in place".to_string(),
        flashkv_engine::StoreKind::InPageLogging(g) => format!(
            "erase units of {} x {} B pages + {} log sectors of 512 B ({})",
            g.pages_per_unit,
            g.page_size,
            g.log_sectors,
            match g.sectors_per_page {
                Some(k) => format!("{k} per page"),
                None => "shared".into(),
            }
        ),
        // A file is one device: no pair to place pages across.
        flashkv_engine::StoreKind::TwoDevice(p) => {
            format!("pages placed across two devices ({})", p.name())
        }
    };
    let io = |r: flashkv_engine::RegionStats| json!([r.reads, r.writes, r.erases]);
    let v = json!({
        "store": s.store_kind,
        "policy": s.policy,
        "layout": layout,
        "file_bytes": file_bytes,
        // Live keys, as `count` counts them: the tree's and the memtable's.
        "keys": count_keys(db, b"")?,
        "tree_keys": shape.keys,
        // Changes not yet in the tree (a store a close left them in).
        "memtable_keys": s.memtable_keys,
        "tree_height": shape.height,
        "leaf_pages": shape.leaf_pages,
        "internal_pages": shape.internal_pages,
        "overflow_pages": shape.overflow_pages,
        "free_pages": shape.free_pages,
        "leaf_fill": (shape.leaf_fill * 1000.0).round() / 1000.0,
        "pages_allocated": s.pages_allocated,
        "resident_pages": s.resident_pages,
        "buffer_hits": s.buffer.hits,
        "buffer_misses": s.buffer.misses,
        "dirty_evictions": s.buffer.dirty_evictions,
        "clean_evictions": s.buffer.clean_evictions,
        "page_reads": s.store.page_reads,
        "page_writes": s.store.page_writes,
        "log_reads": s.store.log_reads,
        "log_writes": s.store.log_writes,
        "merges": s.store.merges,
        "erases": s.store.erases,
        "data_io_reads_writes_erases": io(s.data_io),
        "wal_io_reads_writes_erases": io(s.wal_io),
        "meta_io_reads_writes_erases": io(s.meta_io),
        "device_reads": s.device.host_reads,
        "device_writes": s.device.host_writes,
        "device_erases": s.device.block_erases,
    });
    if out.json {
        return out.object(v).map(|_| true);
    }
    for (name, val) in v.as_object().expect("built as an object") {
        let val = match val {
            Value::String(s) => s.clone(),
            Value::Array(a) => a
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" / "),
            v => v.to_string(),
        };
        out.line(&format!("{name}\t{val}"))?;
    }
    Ok(true)
}
