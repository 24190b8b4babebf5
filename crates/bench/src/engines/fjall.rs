//! fjall 3: an LSM tree; each batch is committed with `PersistMode::SyncData`
//! (an fdatasync of its journal), like the other engines' commits. Default
//! cache 32 MiB; the larger-than-memory scale sets `cache_size`. Threads
//! share the `Keyspace`.

use std::path::Path;

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use crate::engine::{Client, Engine, Pair, Result, Setup};

pub fn open(dir: &Path, setup: Setup) -> Result<Box<dyn Engine>> {
    let mut b = Database::builder(dir.join("fjall"));
    if let Some(bytes) = setup.cache_bytes {
        b = b.cache_size(bytes);
    }
    let db = b.open()?;
    let ks = db.keyspace("kv", KeyspaceCreateOptions::default)?;
    Ok(Box::new(Fjall { db, ks }))
}

struct Fjall {
    db: Database,
    ks: Keyspace,
}

fn batch(db: &Database) -> fjall::OwnedWriteBatch {
    db.batch().durability(Some(PersistMode::SyncData))
}

impl Engine for Fjall {
    fn write_batch(&mut self, pairs: &[Pair<'_>]) -> Result<()> {
        let mut b = batch(&self.db);
        for (k, v) in pairs {
            b.insert(&self.ks, *k, *v);
        }
        Ok(b.commit()?)
    }

    fn delete_batch(&mut self, keys: &[&[u8]]) -> Result<()> {
        let mut b = batch(&self.db);
        for k in keys {
            b.remove(&self.ks, *k);
        }
        Ok(b.commit()?)
    }

    fn client(&self) -> Result<Box<dyn Client + '_>> {
        Ok(Box::new(FjallClient { fjall: self }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(PersistMode::SyncAll)?;
        Ok(())
    }
}

struct FjallClient<'a> {
    fjall: &'a Fjall,
}

impl Client for FjallClient<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.fjall.ks.get(key)?.map(|v| v.len()))
    }

    fn range(&mut self, start: &[u8], limit: usize) -> Result<usize> {
        let mut n = 0;
        for guard in self.fjall.ks.range(start..).take(limit) {
            let (_k, v) = guard.into_inner()?;
            n += usize::from(!v.is_empty());
        }
        Ok(n)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut b = batch(&self.fjall.db);
        b.insert(&self.fjall.ks, key, value);
        Ok(b.commit()?)
    }
}
