//! flashkv on a file, with the in-place or the in-page-logging page store.
//!
//! Only [`open_store`] and [`FlashReader::range`] touch the parts of the
//! engine API that are changing (creation, iterators).

use std::ops::Bound;
use std::path::Path;

use flashkv_engine::{Db, IplGeometry, Options, StoreKind, WriteBatch};

use crate::engine::{Engine, Reader, Result, Writer};
use crate::workload::{Key, Value};

/// A batch must fit half the write-ahead log as whole page images (the
/// default 16 MiB log rejects a 300k-pair batch), so size it to the load.
const WAL_BYTES_PER_KEY: u64 = 2000;
const MIB: u64 = 1 << 20;
/// Buffer pool frames: 256 MiB of 4 KiB pages, a quarter of redb's
/// default 1 GiB cache (the engine's default is 256 frames; frames are only
/// allocated as pages are read, so a smaller store takes less).
const BUFFER_PAGES: usize = 64 << 10;
/// Percent of a leaf an ordered load fills (the engine's default is 90).
const APPEND_FILL: u8 = 70;

pub fn open_inplace(dir: &Path, keys: usize) -> Result<Box<dyn Engine>> {
    open_store(dir, keys, StoreKind::InPlace)
}

pub fn open_ipl(dir: &Path, keys: usize) -> Result<Box<dyn Engine>> {
    open_store(dir, keys, StoreKind::InPageLogging(IplGeometry::seed()))
}

/// Creates the store (the file grows as it fills).
fn open_store(dir: &Path, keys: usize, kind: StoreKind) -> Result<Box<dyn Engine>> {
    let wal = (keys as u64 * WAL_BYTES_PER_KEY)
        .next_multiple_of(MIB)
        .max(64 * MIB);
    let opts = Options::builder()
        .store(kind)
        .wal_size(wal)
        .buffer_pages(BUFFER_PAGES)
        .sync(true)
        // The bulk load arrives in key order (a batch applies in key order)
        // and the later phases insert at random among its keys: leave room
        // in its leaves, as a PostgreSQL fillfactor would.
        .append_fill(APPEND_FILL)
        .build()?;
    let db = Db::create(dir.join("flashkv.db"), opts)?;
    Ok(Box::new(Flashkv { db }))
}

struct Flashkv {
    db: Db,
}

impl Engine for Flashkv {
    fn write_batch(&mut self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut b = WriteBatch::default();
        for (k, v) in pairs {
            b.put(k, v);
        }
        Ok(self.db.write(b)?)
    }

    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        Ok(self.db.put(key, value)?)
    }

    fn delete_batch(&mut self, keys: &[(Key, Value)]) -> Result<()> {
        let mut b = WriteBatch::default();
        for (k, _) in keys {
            b.delete(k);
        }
        Ok(self.db.write(b)?)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(FlashReader { db: &self.db }))
    }

    fn writer(&self) -> Result<Box<dyn Writer + '_>> {
        Ok(Box::new(FlashReader { db: &self.db }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()?;
        Ok(())
    }
}

struct FlashReader<'a> {
    db: &'a Db,
}

impl Writer for FlashReader<'_> {
    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        Ok(self.db.put(key, value)?)
    }
}

impl Reader for FlashReader<'_> {
    fn get(&mut self, key: &Key) -> Result<Option<usize>> {
        // Lent from the buffer pool, as redb's and fjall's guards are.
        Ok(self.db.get_with(key, |v| v.map(<[u8]>::len))?)
    }

    fn range(&mut self, start: &Key, limit: usize) -> Result<usize> {
        // A range of known length: one bounded scan, values borrowed (as
        // redb's and fjall's guards are) and checked non-empty as theirs are.
        let from = (Bound::Included(&start[..]), Bound::Unbounded);
        let mut n = 0;
        self.db
            .scan_with(from, false, limit, |_k, v| n += usize::from(!v.is_empty()))?;
        Ok(n)
    }
}
