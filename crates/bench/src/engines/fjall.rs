//! fjall 3: an LSM tree; each batch is committed with `PersistMode::SyncData`
//! (an fdatasync of its journal), like the other engines' commits.

use std::path::Path;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::engine::{Engine, Reader, Result, Writer};
use crate::workload::{Key, Value};

pub fn open(dir: &Path, _keys: usize) -> Result<Box<dyn Engine>> {
    let db = Database::builder(dir.join("fjall")).open()?;
    let ks = db.keyspace("kv", KeyspaceCreateOptions::default)?;
    Ok(Box::new(Fjall { db, ks }))
}

struct Fjall {
    db: Database,
    ks: Keyspace,
}

impl Fjall {
    fn batch(&self) -> fjall::OwnedWriteBatch {
        self.db.batch().durability(Some(PersistMode::SyncData))
    }
}

impl Engine for Fjall {
    fn write_batch(&mut self, pairs: &[(Key, Value)]) -> Result<()> {
        let mut b = self.batch();
        for (k, v) in pairs {
            b.insert(&self.ks, &k[..], &v[..]);
        }
        Ok(b.commit()?)
    }

    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        self.write_batch(&[(*key, *value)])
    }

    fn delete_batch(&mut self, keys: &[(Key, Value)]) -> Result<()> {
        let mut b = self.batch();
        for (k, _) in keys {
            b.remove(&self.ks, &k[..]);
        }
        Ok(b.commit()?)
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(FjallReader { ks: &self.ks }))
    }

    fn writer(&self) -> Result<Box<dyn Writer + '_>> {
        Ok(Box::new(FjallWriter { fjall: self }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(PersistMode::SyncAll)?;
        Ok(())
    }
}

struct FjallWriter<'a> {
    fjall: &'a Fjall,
}

impl Writer for FjallWriter<'_> {
    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        let mut b = self.fjall.batch();
        b.insert(&self.fjall.ks, &key[..], &value[..]);
        Ok(b.commit()?)
    }
}

struct FjallReader<'a> {
    ks: &'a Keyspace,
}

impl Reader for FjallReader<'_> {
    fn get(&mut self, key: &Key) -> Result<Option<usize>> {
        Ok(self.ks.get(key)?.map(|v| v.len()))
    }

    fn range(&mut self, start: &Key, limit: usize) -> Result<usize> {
        let mut n = 0;
        for guard in self.ks.range(&start[..]..).take(limit) {
            let (_k, v) = guard.into_inner()?;
            n += usize::from(!v.is_empty());
        }
        Ok(n)
    }
}
