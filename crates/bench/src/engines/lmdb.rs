//! LMDB through heed: a copy-on-write B-tree in a memory map; a write
//! transaction's commit syncs (LMDB's default flags). It has no cache of
//! its own: reads go through the OS page cache, which the
//! larger-than-memory scale bounds with a cgroup where it can. Threads
//! share the `Env`, each read in its own read transaction; write
//! transactions take turns on LMDB's writer lock.

use std::ops::Bound;
use std::path::Path;

use heed::types::Bytes;
use heed::{Database, Env, EnvOpenOptions};

use crate::engine::{Client, Engine, Pair, Result, Setup};

/// The most the map (and the file) may grow to: LMDB needs a bound, and
/// reserves only address space for it.
const MAP_SIZE: usize = 64 << 30;

type Db = Database<Bytes, Bytes>;

pub fn open(dir: &Path, _setup: Setup) -> Result<Box<dyn Engine>> {
    let path = dir.join("lmdb");
    std::fs::create_dir_all(&path)?;
    // SAFETY: the benchmark opens this directory in one Env at a time and
    // never maps the file otherwise.
    let env = unsafe { EnvOpenOptions::new().map_size(MAP_SIZE).open(&path)? };
    let mut w = env.write_txn()?;
    let db: Db = env.create_database(&mut w, None)?;
    w.commit()?;
    Ok(Box::new(Lmdb { env, db }))
}

struct Lmdb {
    env: Env,
    db: Db,
}

/// One write transaction, committed (and synced).
fn commit(env: &Env, f: impl FnOnce(&mut heed::RwTxn) -> Result<()>) -> Result<()> {
    let mut w = env.write_txn()?;
    f(&mut w)?;
    Ok(w.commit()?)
}

impl Engine for Lmdb {
    fn write_batch(&mut self, pairs: &[Pair<'_>]) -> Result<()> {
        commit(&self.env, |w| {
            for (k, v) in pairs {
                self.db.put(w, k, v)?;
            }
            Ok(())
        })
    }

    fn delete_batch(&mut self, keys: &[&[u8]]) -> Result<()> {
        commit(&self.env, |w| {
            for k in keys {
                self.db.delete(w, k)?;
            }
            Ok(())
        })
    }

    fn client(&self) -> Result<Box<dyn Client + '_>> {
        Ok(Box::new(LmdbClient { lmdb: self }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        let Lmdb { env, db: _ } = *self;
        env.force_sync()?;
        // The environment closes once the last handle is gone.
        env.prepare_for_closing().wait();
        Ok(())
    }
}

struct LmdbClient<'a> {
    lmdb: &'a Lmdb,
}

impl Client for LmdbClient<'_> {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        let r = self.lmdb.env.read_txn()?;
        Ok(self.lmdb.db.get(&r, key)?.map(<[u8]>::len))
    }

    fn range(&mut self, start: &[u8], limit: usize) -> Result<usize> {
        let r = self.lmdb.env.read_txn()?;
        let from: (Bound<&[u8]>, Bound<&[u8]>) = (Bound::Included(start), Bound::Unbounded);
        let mut n = 0;
        for pair in self.lmdb.db.range(&r, &from)?.take(limit) {
            let (_k, v) = pair?;
            n += usize::from(!v.is_empty());
        }
        Ok(n)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        commit(&self.lmdb.env, |w| Ok(self.lmdb.db.put(w, key, value)?))
    }
}
