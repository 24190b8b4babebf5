//! SQLite (bundled) in WAL mode with `synchronous=FULL`: every commit is
//! durable. One `WITHOUT ROWID` table keyed by the key. Each client thread
//! opens its own connection, as SQLite shares nothing across threads;
//! writers wait for the write lock. Its page cache stays at the default
//! (2 MB): SQLite relies on the OS page cache, which the larger-than-memory
//! scale bounds with a cgroup where it can.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

use crate::engine::{Client, Engine, Pair, Result, Setup};

pub fn open(dir: &Path, _setup: Setup) -> Result<Box<dyn Engine>> {
    let path = dir.join("sqlite.db");
    let conn = connect(&path)?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID",
    )?;
    Ok(Box::new(Sqlite { conn, path }))
}

fn connect(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("SQLite refused WAL mode (got {mode})").into());
    }
    conn.execute_batch("PRAGMA synchronous=FULL")?;
    // Other connections may hold the write lock: wait for it.
    conn.busy_timeout(std::time::Duration::from_secs(600))?;
    Ok(conn)
}

struct Sqlite {
    conn: Connection,
    path: PathBuf,
}

const UPSERT: &str = "INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)";

impl Sqlite {
    /// Runs `sql` once per item in one transaction.
    fn each<T>(&mut self, sql: &str, items: &[T], bind: impl Fn(&T) -> Vec<&[u8]>) -> Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut st = tx.prepare_cached(sql)?;
            for it in items {
                st.execute(rusqlite::params_from_iter(bind(it)))?;
            }
        }
        Ok(tx.commit()?)
    }
}

impl Engine for Sqlite {
    fn write_batch(&mut self, pairs: &[Pair<'_>]) -> Result<()> {
        self.each(UPSERT, pairs, |(k, v)| vec![*k, *v])
    }

    fn delete_batch(&mut self, keys: &[&[u8]]) -> Result<()> {
        self.each("DELETE FROM kv WHERE k = ?1", keys, |k| vec![*k])
    }

    fn client(&self) -> Result<Box<dyn Client + '_>> {
        Ok(Box::new(SqliteClient {
            conn: connect(&self.path)?,
        }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.conn.close().map_err(|(_, e)| e)?;
        Ok(())
    }
}

struct SqliteClient {
    conn: Connection,
}

impl Client for SqliteClient {
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        let mut st = self.conn.prepare_cached("SELECT v FROM kv WHERE k = ?1")?;
        let len = st.query_row([key], |r| Ok(r.get_ref(0)?.as_blob()?.len()));
        Ok(len.optional()?)
    }

    fn range(&mut self, start: &[u8], limit: usize) -> Result<usize> {
        let mut st = self
            .conn
            .prepare_cached("SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2")?;
        let mut rows = st.query(params![start, limit as i64])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            n += usize::from(!row.get_ref(1)?.as_blob()?.is_empty());
        }
        Ok(n)
    }

    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut st = self.conn.prepare_cached(UPSERT)?;
        st.execute(params![key, value])?;
        Ok(())
    }
}
