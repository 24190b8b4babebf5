//! sled 0.34: a write is durable after `flush()` (an fsync of its log).
//! Default cache 1 GiB (`cache_capacity`), which the larger-than-memory
//! scale sets. Threads share the `Db`.

use std::path::Path;

use crate::engine::{Client, Engine, Pair, Result, Setup};

pub fn open(dir: &Path, setup: Setup) -> Result<Box<dyn Engine>> {
    let mut c = sled::Config::new().path(dir.join("sled"));
    if let Some(bytes) = setup.cache_bytes {
        c = c.cache_capacity(bytes);
    }
    Ok(Box::new(Sled { db: c.open()? }))
}

struct Sled {
    db: sled::Db,
}

impl Sled {
    fn apply(&self, batch: sled::Batch) -> Result<()> {
        self.db.apply_batch(batch)?;
        self.db.flush()?;
        Ok(())
    }
}

impl Engine for Sled {
    fn write_batch(&mut self, pairs: &[Pair<'_>]) -> Result<()> {
        let mut b = sled::Batch::default();
        for (k, v) in pairs {
            b.insert(*k, *v);
        }
        self.apply(b)
    }

    fn delete_batch(&mut self, keys: &[&[u8]]) -> Result<()> {
        let mut b = sled::Batch::default();
        for k in keys {
            b.remove(*k);
        }
        self.apply(b)
    }

    fn client(&self) -> Result<Box<dyn Client + '_>> {
        Ok(Box::new(SledClient { db: &self.db }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.flush()?;
        Ok(())
    }
}

struct SledClient<'a> {
    db: &'a sled::Db,
}

impl Client for SledClient<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.db.get(key)?.map(|v| v.len()))
    }

    fn range(&mut self, start: &[u8], limit: usize) -> Result<usize> {
        let mut n = 0;
        for pair in self.db.range(start..).take(limit) {
            let (_k, v) = pair?;
            n += usize::from(!v.is_empty());
        }
        Ok(n)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.insert(key, value)?;
        self.db.flush()?;
        Ok(())
    }
}
