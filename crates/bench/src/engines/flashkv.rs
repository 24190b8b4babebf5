//! flashkv on a file, with the in-place or the in-page-logging page store,
//! opened with `Options::default()` plus `sync(true)` (every commit
//! durable), as every peer runs its defaults plus per-commit durability.
//! The larger-than-memory scale adds its cache budget
//! ([`super::cache_budget`]); nothing else is set, but for the labelled
//! tuned row `flashkv-no-memtable` (in place, `memtable(0)`: every write
//! goes to the tree), which shows what the memtable does.

use std::ops::Bound;
use std::path::Path;

use flashkv_engine::{Db, IplGeometry, Options, OptionsBuilder, StoreKind, WriteBatch};

use super::cache_budget;
use crate::engine::{Client, Engine, Pair, Result, Setup};

pub fn open_inplace(dir: &Path, setup: Setup) -> Result<Box<dyn Engine>> {
    open_store(dir, setup, StoreKind::InPlace)
}

pub fn open_ipl(dir: &Path, setup: Setup) -> Result<Box<dyn Engine>> {
    open_store(dir, setup, StoreKind::InPageLogging(IplGeometry::seed()))
}

pub fn open_no_memtable(dir: &Path, setup: Setup) -> Result<Box<dyn Engine>> {
    let opts = Options::builder().store(StoreKind::InPlace).memtable(0);
    open_with(dir, setup, opts)
}

/// Creates the store (the file grows as it fills) or opens the one there.
fn open_store(dir: &Path, setup: Setup, kind: StoreKind) -> Result<Box<dyn Engine>> {
    open_with(dir, setup, Options::builder().store(kind))
}

fn open_with(dir: &Path, setup: Setup, opts: OptionsBuilder) -> Result<Box<dyn Engine>> {
    let mut opts = opts.sync(true);
    if let Some(bytes) = setup.cache_bytes {
        opts = cache_budget::flashkv(opts, bytes);
    }
    let db = Db::open_or_create(dir.join("flashkv.db"), opts.build()?)?;
    Ok(Box::new(Flashkv { db }))
}

struct Flashkv {
    db: Db,
}

impl Engine for Flashkv {
    fn write_batch(&mut self, pairs: &[Pair<'_>]) -> Result<()> {
        let mut b = WriteBatch::default();
        for (k, v) in pairs {
            b.put(k, v);
        }
        Ok(self.db.write(b)?)
    }

    fn delete_batch(&mut self, keys: &[&[u8]]) -> Result<()> {
        let mut b = WriteBatch::default();
        for k in keys {
            b.delete(k);
        }
        Ok(self.db.write(b)?)
    }

    fn client(&self) -> Result<Box<dyn Client + '_>> {
        // `Db` is `Sync`: threads share one handle.
        Ok(Box::new(FlashClient { db: &self.db }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()?;
        Ok(())
    }
}

struct FlashClient<'a> {
    db: &'a Db,
}

impl Client for FlashClient<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        // Lent from the buffer pool, as redb's and fjall's guards are.
        Ok(self.db.get_with(key, |v| v.map(<[u8]>::len))?)
    }

    fn range(&mut self, start: &[u8], limit: usize) -> Result<usize> {
        // The iterator and `take`, as every peer's range is read.
        let mut n = 0;
        let from = (Bound::Included(start), Bound::Unbounded);
        for pair in self
            .db
            .range::<(Bound<&[u8]>, Bound<&[u8]>)>(from)
            .take(limit)
        {
            n += usize::from(!pair?.value().is_empty());
        }
        Ok(n)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put(key, value)?)
    }
}
