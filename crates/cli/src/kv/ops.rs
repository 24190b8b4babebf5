//! The one-shot kv subcommands and how they print: TSV-style text by
//! default, one JSON object per line with `--json`.

use std::io::{BufWriter, Stdout, Write};
use std::ops::Bound;
use std::path::Path;

use clap::{Args, ValueEnum};
use flashkv_engine::Db;
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

#[derive(Args)]
pub struct ScanArgs {
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
    #[arg(long)]
    limit: Option<usize>,
}

impl ScanArgs {
    pub fn check(&self, out: &Out) -> Result<(), Fail> {
        for k in [&self.prefix, &self.from, &self.to].into_iter().flatten() {
            out.key(k)?;
        }
        Ok(())
    }
}

/// Buffered stdout that knows how keys and values are written.
pub struct Out {
    pub codec: Codec,
    pub json: bool,
    w: BufWriter<Stdout>,
}

impl Out {
    pub fn new(codec: Codec, json: bool) -> Out {
        Out {
            codec,
            json,
            w: BufWriter::new(std::io::stdout()),
        }
    }

    pub fn key(&self, arg: &str) -> Result<Vec<u8>, Fail> {
        decode(self.codec.key, "key", arg)
    }

    pub fn value(&self, arg: &str) -> Result<Vec<u8>, Fail> {
        decode(self.codec.value, "value", arg)
    }

    /// A key or value written as in TSV (escapes undone), as the shell reads them.
    pub fn escaped(&self, is_key: bool, s: &str) -> Result<Vec<u8>, Fail> {
        let (f, what) = if is_key {
            (self.codec.key, "key")
        } else {
            (self.codec.value, "value")
        };
        f.decode_tsv(s.as_bytes())
            .map_err(|e| Fail::Usage(format!("{what} {s:?}: {e}")))
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

fn decode(f: Format, what: &str, arg: &str) -> Result<Vec<u8>, Fail> {
    f.decode_arg(arg)
        .map_err(|e| Fail::Usage(format!("{what} {arg:?}: {e}")))
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

pub fn put(db: &Db, out: &mut Out, key: &str, value: &str) -> Result<bool, Fail> {
    db.put(&out.key(key)?, &out.value(value)?)?;
    if out.json {
        out.object(json!({"op": "put", "key": key, "ok": true}))?;
    }
    Ok(true)
}

pub fn get(db: &Db, out: &mut Out, key: &str) -> Result<bool, Fail> {
    let v = db.get(&out.key(key)?)?;
    match (&v, out.json) {
        (Some(v), true) => {
            let v = out.show_value(v)?;
            out.object(json!({"key": key, "found": true, "value": v}))?
        }
        (None, true) => out.object(json!({"key": key, "found": false}))?,
        (Some(v), false) => {
            let v = out.show_value(v)?;
            out.line(&v)?
        }
        (None, false) => eprintln!("not found: {key}"),
    }
    Ok(v.is_some())
}

pub fn delete(db: &Db, out: &mut Out, key: &str) -> Result<bool, Fail> {
    let deleted = db.delete(&out.key(key)?)?;
    if out.json {
        out.object(json!({"op": "delete", "key": key, "deleted": deleted}))?;
    } else if !deleted {
        eprintln!("not found: {key}");
    }
    Ok(deleted)
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

fn prefix_bounds(p: &[u8]) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    (Bound::Included(p.to_vec()), prefix_end(p))
}

/// Pairs in (lo, hi), streamed: memory stays bounded however many there are.
pub fn each_pair(
    db: &Db,
    (lo, hi): &(Bound<Vec<u8>>, Bound<Vec<u8>>),
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
        let (k, v) = pair?;
        f(&k, &v)?;
        n += 1;
    }
    Ok(n)
}

fn bound_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    b.as_ref().map(|v| v.as_slice())
}

pub fn scan(db: &Db, out: &mut Out, a: &ScanArgs) -> Result<bool, Fail> {
    let bounds = match &a.prefix {
        Some(p) => prefix_bounds(&out.key(p)?),
        None => {
            let dec = |s: &Option<String>| s.as_deref().map(|s| out.key(s)).transpose();
            let lo = dec(&a.from)?.map_or(Bound::Unbounded, Bound::Included);
            let hi = dec(&a.to)?.map_or(Bound::Unbounded, Bound::Excluded);
            (lo, hi)
        }
    };
    let jsonl = out.json;
    each_pair(
        db,
        &bounds,
        a.reverse,
        a.limit.unwrap_or(usize::MAX),
        |k, v| out.pair(k, v, jsonl),
    )?;
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

pub fn count(db: &Db, out: &mut Out, prefix: Option<&str>) -> Result<bool, Fail> {
    let p = prefix.map(|p| out.key(p)).transpose()?.unwrap_or_default();
    let n = count_keys(db, &p)?;
    if out.json {
        out.object(json!({"count": n, "prefix": prefix}))?;
    } else {
        out.line(&n.to_string())?;
    }
    Ok(true)
}

pub fn export(db: &Db, out: &mut Out, prefix: Option<&str>, f: TextFormat) -> Result<bool, Fail> {
    let p = prefix.map(|p| out.key(p)).transpose()?.unwrap_or_default();
    let jsonl = out.json || f == TextFormat::Jsonl;
    let n = each_pair(db, &prefix_bounds(&p), false, usize::MAX, |k, v| {
        out.pair(k, v, jsonl)
    })?;
    eprintln!("exported {n} pairs");
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
    };
    let io = |r: flashkv_engine::RegionStats| json!([r.reads, r.writes, r.erases]);
    let v = json!({
        "store": s.store_kind,
        "policy": s.policy,
        "layout": layout,
        "file_bytes": file_bytes,
        "keys": shape.keys,
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
