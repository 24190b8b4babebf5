//! SQLite (bundled) in WAL mode with `synchronous=FULL`: every commit is
//! durable. One `WITHOUT ROWID` table keyed by the key. Each reader or writer thread
//! opens its own connection, as SQLite shares nothing across threads.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

use crate::engine::{Engine, Reader, Result, Writer};
use crate::workload::{Key, Value};

pub fn open(dir: &Path, _keys: usize) -> Result<Box<dyn Engine>> {
    let path = dir.join("sqlite.db");
    let conn = connect(&path)?;
    conn.execute_batch("CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID")?;
    Ok(Box::new(Sqlite { conn, path }))
}

fn connect(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("SQLite refused WAL mode (got {mode})").into());
    }
    conn.execute_batch("PRAGMA synchronous=FULL")?;
    Ok(conn)
}

struct Sqlite {
    conn: Connection,
    path: PathBuf,
}

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

const UPSERT: &str = "INSERT OR REPLACE INTO kv (k, v) VALUES (?1, ?2)";

impl Engine for Sqlite {
    fn write_batch(&mut self, pairs: &[(Key, Value)]) -> Result<()> {
        self.each(UPSERT, pairs, |(k, v)| vec![&k[..], &v[..]])
    }

    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        let mut st = self.conn.prepare_cached(UPSERT)?;
        st.execute(params![&key[..], &value[..]])?;
        Ok(())
    }

    fn delete_batch(&mut self, keys: &[(Key, Value)]) -> Result<()> {
        self.each("DELETE FROM kv WHERE k = ?1", keys, |(k, _)| vec![&k[..]])
    }

    fn reader(&self) -> Result<Box<dyn Reader + '_>> {
        Ok(Box::new(SqliteReader {
            conn: connect(&self.path)?,
        }))
    }

    fn writer(&self) -> Result<Box<dyn Writer + '_>> {
        let conn = connect(&self.path)?;
        // One writer at a time: the others wait for the write lock.
        conn.busy_timeout(std::time::Duration::from_secs(600))?;
        Ok(Box::new(SqliteReader { conn }))
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.conn.close().map_err(|(_, e)| e)?;
        Ok(())
    }
}

struct SqliteReader {
    conn: Connection,
}

impl Writer for SqliteReader {
    fn put(&mut self, key: &Key, value: &Value) -> Result<()> {
        let mut st = self.conn.prepare_cached(UPSERT)?;
        st.execute(params![&key[..], &value[..]])?;
        Ok(())
    }
}

impl Reader for SqliteReader {
    fn get(&mut self, key: &Key) -> Result<Option<usize>> {
        let mut st = self.conn.prepare_cached("SELECT v FROM kv WHERE k = ?1")?;
        let len = st.query_row([&key[..]], |r| Ok(r.get_ref(0)?.as_blob()?.len()));
        Ok(len.optional()?)
    }

    fn range(&mut self, start: &Key, limit: usize) -> Result<usize> {
        let mut st = self
            .conn
            .prepare_cached("SELECT k, v FROM kv WHERE k >= ?1 ORDER BY k LIMIT ?2")?;
        let mut rows = st.query(params![&start[..], limit as i64])?;
        let mut n = 0;
        while let Some(row) = rows.next()? {
            n += usize::from(!row.get_ref(1)?.as_blob()?.is_empty());
        }
        Ok(n)
    }
}
