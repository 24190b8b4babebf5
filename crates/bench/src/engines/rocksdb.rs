//! RocksDB: the LSM reference, with its default options (Snappy, 64 MiB
//! memtables, leveled compaction, a 32 MiB block cache) and
//! `create_if_missing`; every write goes with `WriteOptions::set_sync(true)`
//! (its write-ahead log synced per commit). The larger-than-memory scale
//! sets the block cache to the budget. Threads share the `DB`.

use std::path::Path;

use rocksdb::{BlockBasedOptions, Cache, Options, WriteBatch, WriteOptions, DB};

use crate::engine::{Client, Engine, Pair, Result, Setup};

pub fn open(dir: &Path, setup: Setup) -> Result<Box<dyn Engine>> {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    if let Some(bytes) = setup.cache_bytes {
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&Cache::new_lru_cache(usize::try_from(bytes)?));
        opts.set_block_based_table_factory(&table);
    }
    let db = DB::open(&opts, dir.join("rocksdb"))?;
    Ok(Box::new(Rocks { db }))
}

struct Rocks {
    db: DB,
}

fn synced() -> WriteOptions {
    let mut w = WriteOptions::default();
    w.set_sync(true);
    w
}

impl Engine for Rocks {
    fn write_batch(&mut self, pairs: &[Pair<'_>]) -> Result<()> {
        let mut b = WriteBatch::default();
        for (k, v) in pairs {
            b.put(k, v);
        }
        Ok(self.db.write_opt(b, &synced())?)
    }

    fn delete_batch(&mut self, keys: &[&[u8]]) -> Result<()> {
        let mut b = WriteBatch::default();
        for k in keys {
            b.delete(k);
        }
        Ok(self.db.write_opt(b, &synced())?)
    }

    fn client(&self) -> Result<Box<dyn Client + '_>> {
        Ok(Box::new(RocksClient { db: &self.db }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.flush_wal(true)?;
        drop(self.db);
        Ok(())
    }
}

struct RocksClient<'a> {
    db: &'a DB,
}

impl Client for RocksClient<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        // Pinned in the block cache, as the other engines' guards lend.
        Ok(self.db.get_pinned(key)?.map(|v| v.len()))
    }

    fn range(&mut self, start: &[u8], limit: usize) -> Result<usize> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        let mut n = 0;
        for _ in 0..limit {
            if !it.valid() {
                break;
            }
            n += usize::from(it.value().is_some_and(|v| !v.is_empty()));
            it.next();
        }
        it.status()?;
        Ok(n)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_opt(key, value, &synced())?)
    }
}
