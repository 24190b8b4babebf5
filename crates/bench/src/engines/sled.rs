//! sled 0.34: a write is durable after `flush()` (an fsync of its log).

use std::path::Path;

use crate::engine::{Engine, Reader, Result, Writer};
use crate::workload::{Key, Value};

pub fn open(dir: &Path, _keys: usize) -> Result<Box<dyn Engine>> {
    let db = sled::Config::new().path(dir.join("sled")).open()?;
    Ok(Box::new(Sled { db }))
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
    fn write_batch(&mut self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut b = sled::Batch::default();
        for (k, v) in pairs {
            b.insert(&k[..], &v[..]);
        }
        self.apply(b)
    }

    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        self.db.insert(key, &value[..])?;
        self.db.flush()?;
        Ok(())
    }

    fn delete_batch(&mut self, keys: &[(Key, Value)]) -> Result<()> {
        let mut b = sled::Batch::default();
        for (k, _) in keys {
            b.remove(&k[..]);
        }
        self.apply(b)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(SledReader { db: &self.db }))
    }

    fn writer(&self) -> Result<Box<dyn Writer + '_>> {
        Ok(Box::new(SledReader { db: &self.db }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.flush()?;
        Ok(())
    }
}

struct SledReader<'a> {
    db: &'a sled::Db,
}

impl Writer for SledReader<'_> {
    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        self.db.insert(key, &value[..])?;
        self.db.flush()?;
        Ok(())
    }
}

impl Reader for SledReader<'_> {
    fn get(&mut self, key: &Key) -> Result<Option<usize>> {
        Ok(self.db.get(key)?.map(|v| v.len()))
    }

    fn range(&mut self, start: &Key, limit: usize) -> Result<usize> {
        let mut n = 0;
        for pair in self.db.range(&start[..]..).take(limit) {
            let (_k, v) = pair?;
            n += usize::from(!v.is_empty());
        }
        Ok(n)
    }
}
