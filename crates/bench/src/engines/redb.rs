//! redb: copy-on-write B-trees; every commit is durable by default
//! (`Durability::Immediate`). Default cache 1 GiB; the larger-than-memory
//! scale sets `Builder::set_cache_size`. Threads share the `Database`,
//! each read in its own read transaction; write transactions take turns.

use std::ops::Bound;
use std::path::Path;

use redb::{Builder, Database, ReadableDatabase, TableDefinition};

use crate::engine::{Client, Engine, Pair, Result, Setup};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

pub fn open(dir: &Path, setup: Setup) -> Result<Box<dyn Engine>> {
    let mut b = Builder::new();
    if let Some(bytes) = setup.cache_bytes {
        b.set_cache_size(usize::try_from(bytes)?);
    }
    let db = b.create(dir.join("redb.db"))?;
    Ok(Box::new(Redb { db }))
}

struct Redb {
    db: Database,
}

/// One write transaction on `db`, committed durably.
fn commit(
    db: &Database,
    f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> Result<()>,
) -> Result<()> {
    let tx = db.begin_write()?;
    {
        let mut table = tx.open_table(TABLE)?;
        f(&mut table)?;
    }
    Ok(tx.commit()?)
}

impl Engine for Redb {
    fn write_batch(&mut self, pairs: &[Pair<'_>]) -> Result<()> {
        commit(&self.db, |t| {
            for (k, v) in pairs {
                t.insert(*k, *v)?;
            }
            Ok(())
        })
    }

    fn delete_batch(&mut self, keys: &[&[u8]]) -> Result<()> {
        commit(&self.db, |t| {
            for k in keys {
                t.remove(*k)?;
            }
            Ok(())
        })
    }

    fn client(&self) -> Result<Box<dyn Client + '_>> {
        Ok(Box::new(RedbClient { db: &self.db }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self.db);
        Ok(())
    }
}

struct RedbClient<'a> {
    db: &'a Database,
}

impl Client for RedbClient<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        let table = self.db.begin_read()?.open_table(TABLE)?;
        Ok(table.get(key)?.map(|v| v.value().len()))
    }

    fn range(&mut self, start: &[u8], limit: usize) -> Result<usize> {
        let table = self.db.begin_read()?.open_table(TABLE)?;
        let mut n = 0;
        let from: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Included(start), Bound::Unbounded);
        for pair in table.range::<&[u8]>(from)?.take(limit) {
            let (_k, v) = pair?;
            n += usize::from(!v.value().is_empty());
        }
        Ok(n)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        commit(self.db, |t| {
            t.insert(key, value)?;
            Ok(())
        })
    }
}
