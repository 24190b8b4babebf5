//! redb: copy-on-write B-trees; every commit is durable by default
//! (`Durability::Immediate`). Each read opens its own read transaction.

use std::path::Path;

use redb::{Database, ReadableDatabase, TableDefinition};

use crate::engine::{Engine, Reader, Result, Writer};
use crate::workload::{Key, Value};

const TABLE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("kv");

pub fn open(dir: &Path, _keys: usize) -> Result<Box<dyn Engine>> {
    let db = Database::create(dir.join("redb.db"))?;
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

impl Redb {
    fn commit(&self, f: impl FnOnce(&mut redb::Table<&[u8], &[u8]>) -> Result<()>) -> Result<()> {
        commit(&self.db, f)
    }
}

impl Engine for Redb {
    fn write_batch(&mut self, pairs: &[(Key, Value)]) -> Result<()> {
        self.commit(|t| {
            for (k, v) in pairs {
                t.insert(&k[..], &v[..])?;
            }
            Ok(())
        })
    }

    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        self.commit(|t| {
            t.insert(&key[..], &value[..])?;
            Ok(())
        })
    }

    fn delete_batch(&mut self, keys: &[(Key, Value)]) -> Result<()> {
        self.commit(|t| {
            for (k, _) in keys {
                t.remove(&k[..])?;
            }
            Ok(())
        })
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(RedbReader { db: &self.db }))
    }

    fn writer(&self) -> Result<Box<dyn Writer + '_>> {
        Ok(Box::new(RedbReader { db: &self.db }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self.db);
        Ok(())
    }
}

struct RedbReader<'a> {
    db: &'a Database,
}

/// Write transactions are serialised: `begin_write` waits for the one open.
impl Writer for RedbReader<'_> {
    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        commit(self.db, |t| {
            t.insert(&key[..], &value[..])?;
            Ok(())
        })
    }
}

impl Reader for RedbReader<'_> {
    fn get(&mut self, key: &Key) -> Result<Option<usize>> {
        let table = self.db.begin_read()?.open_table(TABLE)?;
        Ok(table.get(&key[..])?.map(|v| v.value().len()))
    }

    fn range(&mut self, start: &Key, limit: usize) -> Result<usize> {
        let table = self.db.begin_read()?.open_table(TABLE)?;
        let mut n = 0;
        for pair in table.range(&start[..]..)?.take(limit) {
            let (_k, v) = pair?;
            n += usize::from(!v.value().is_empty());
        }
        Ok(n)
    }
}
