//! `flashkv.Db`: the key-value store in a file or on a `Device`, its range
//! iterator and its write batches.

use std::collections::VecDeque;
use std::ops::Bound as Edge;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use flashkv_engine::{IplGeometry, Options, StoreKind, WriteBatch};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::convert::{bytes, nonzero_size, to_py};
use crate::device::Device;
use crate::errors::{self, invalid};

/// Pairs a range iterator reads at a time.
const CHUNK: usize = 64;

/// The store names `store=` takes, as `flashkv kv --store` does.
fn store_kind(name: &str) -> PyResult<StoreKind> {
    match name {
        "in-place" => Ok(StoreKind::InPlace),
        "ipl" => Ok(StoreKind::InPageLogging(IplGeometry::seed())),
        "ipl-shared" => Ok(StoreKind::InPageLogging(IplGeometry::shared())),
        _ => Err(invalid(format!(
            "unknown store '{name}' (in-place, ipl, ipl-shared)"
        ))),
    }
}

/// Clears its device's busy flag when the store closes or is dropped.
struct Lease(Option<Arc<AtomicBool>>);

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.store(false, Ordering::Release);
        }
    }
}

/// A key-value store: a B+-tree over a buffer pool and a page store, with a
/// write-ahead log. Keys and values are bytes (str is taken as UTF-8).
#[pyclass(module = "flashkv._native")]
pub struct Db {
    db: Option<flashkv_engine::Db>,
    lease: Lease,
}

impl Db {
    fn open_db(&self) -> PyResult<&flashkv_engine::Db> {
        self.db
            .as_ref()
            .ok_or_else(|| errors::raise("StoreError", "the store is closed"))
    }
}

#[allow(clippy::too_many_arguments)]
fn options(
    store: Option<&str>,
    buffer_pages: Option<usize>,
    policy: &str,
    wal: bool,
    sync: bool,
    max_size: Option<&Bound<'_, PyAny>>,
) -> PyResult<Options> {
    let policy = flashkv_engine::policy_by_name(policy).ok_or_else(|| {
        invalid(format!(
            "unknown policy {policy} ({})",
            flashkv_engine::POLICY_NAMES.join(", ")
        ))
    })?;
    let lab = flashkv_engine::LabOptions {
        wal,
        ..flashkv_engine::LabOptions::default()
    };
    let mut o = Options::builder().policy(policy).sync(sync).lab(lab);
    if let Some(n) = buffer_pages {
        o = o.buffer_pages(n);
    }
    if let Some(m) = max_size {
        o = o.max_size(nonzero_size("max_size", m)?);
    }
    if let Some(kind) = store.map(store_kind).transpose()? {
        o = o.store(kind);
    }
    o.build().map_err(errors::engine)
}

#[pymethods]
impl Db {
    /// Opens a store in a file (made if missing or empty, unless
    /// create=False) or on a `Device` (made if the device is blank).
    #[staticmethod]
    #[pyo3(signature = (target, *, store=None, create=true, read_only=false, buffer_pages=None, policy="clock", wal=true, sync=false, max_size=None))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        target: Bound<'_, PyAny>,
        store: Option<String>,
        create: bool,
        read_only: bool,
        buffer_pages: Option<usize>,
        policy: &str,
        wal: bool,
        sync: bool,
        max_size: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Db> {
        let opts = options(
            store.as_deref(),
            buffer_pages,
            policy,
            wal,
            sync,
            max_size.as_ref(),
        )?;
        if let Ok(dev) = target.cast::<Device>() {
            if read_only {
                return Err(invalid("read_only applies to a store in a file"));
            }
            let dev = dev.borrow();
            if dev.busy.swap(true, Ordering::AcqRel) {
                return Err(errors::raise(
                    "StoreError",
                    "the device already has an open Db",
                ));
            }
            let lease = Lease(Some(dev.busy.clone()));
            let handle = Box::new(dev.handle.clone());
            let db = py.detach(move || match create {
                true => flashkv_engine::Db::open(handle, opts),
                false => flashkv_engine::Db::open_existing(handle, opts),
            });
            return Ok(Db {
                db: Some(db.map_err(errors::engine)?),
                lease,
            });
        }
        let path: PathBuf = target
            .extract()
            .map_err(|_| invalid("target must be a path or a Device"))?;
        let db = py.detach(move || match (read_only, create) {
            (true, _) => flashkv_engine::Db::open_read_only(&path, opts),
            (false, true) => flashkv_engine::Db::open_or_create(&path, opts),
            (false, false) => flashkv_engine::Db::open_path(&path, opts),
        });
        Ok(Db {
            db: Some(db.map_err(errors::engine)?),
            lease: Lease(None),
        })
    }

    /// The value of `key`, or None.
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let (db, key) = (self.open_db()?, bytes("key", &key)?);
        let v = py.detach(|| db.get(&key)).map_err(errors::engine)?;
        Ok(v.map(|v| PyBytes::new(py, &v)))
    }

    fn put(&self, py: Python<'_>, key: Bound<'_, PyAny>, value: Bound<'_, PyAny>) -> PyResult<()> {
        let (db, key, value) = (
            self.open_db()?,
            bytes("key", &key)?,
            bytes("value", &value)?,
        );
        py.detach(|| db.put(&key, &value)).map_err(errors::engine)
    }

    /// Deletes `key`; whether it was there.
    fn delete(&self, py: Python<'_>, key: Bound<'_, PyAny>) -> PyResult<bool> {
        let (db, key) = (self.open_db()?, bytes("key", &key)?);
        py.detach(|| db.delete(&key)).map_err(errors::engine)
    }

    /// A batch of puts and deletes applied atomically by `commit()`, or at
    /// the end of a `with` block that raised nothing.
    fn batch(slf: Bound<'_, Self>) -> PyResult<Batch> {
        slf.borrow().open_db()?;
        Ok(Batch {
            db: slf.unbind(),
            ops: Some(WriteBatch::default()),
        })
    }

    /// Pairs with `start <= key < end` (either None for no bound; `prefix`
    /// for keys starting with it), in key order or `reverse`, read
    /// `CHUNK` pairs at a time.
    #[pyo3(signature = (start=None, end=None, *, prefix=None, reverse=false))]
    fn range(
        slf: Bound<'_, Self>,
        start: Option<Bound<'_, PyAny>>,
        end: Option<Bound<'_, PyAny>>,
        prefix: Option<Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<RangeIter> {
        slf.borrow().open_db()?;
        let bound =
            |b: Option<Bound<'_, PyAny>>, what: &str, incl: bool| -> PyResult<Edge<Vec<u8>>> {
                Ok(match b {
                    None => Edge::Unbounded,
                    Some(k) if incl => Edge::Included(bytes(what, &k)?),
                    Some(k) => Edge::Excluded(bytes(what, &k)?),
                })
            };
        let (lo, hi) = match prefix {
            Some(p) if start.is_none() && end.is_none() => {
                let p = bytes("prefix", &p)?;
                (Edge::Included(p.clone()), prefix_end(&p))
            }
            Some(_) => return Err(invalid("give a prefix or start/end, not both")),
            None => (bound(start, "start", true)?, bound(end, "end", false)?),
        };
        Ok(RangeIter {
            db: slf.unbind(),
            lo,
            hi,
            reverse,
            pairs: VecDeque::new(),
            done: false,
        })
    }

    /// Makes every write so far durable.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.open_db()?;
        py.detach(|| db.flush()).map_err(errors::engine)
    }

    /// Writes every dirty page back and empties the write-ahead log.
    fn checkpoint(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.open_db()?;
        py.detach(|| db.checkpoint()).map_err(errors::engine)
    }

    /// Counters since open: buffer, page store, I/O per region, device.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.open_db()?.stats())
    }

    /// Makes every write durable and closes the store (its device can then
    /// be reopened; an in-place store leaves its log to that open).
    /// Closing twice does nothing.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(db) = self.db.take() else {
            return Ok(());
        };
        let r = py.detach(move || db.close().map(drop));
        // The device is free again, whether or not the checkpoint succeeded.
        drop(std::mem::replace(&mut self.lease, Lease(None)));
        r.map_err(errors::engine)
    }

    #[getter]
    fn closed(&self) -> bool {
        self.db.is_none()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    #[pyo3(signature = (_exc_type=None, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        _exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

/// The first key after every key starting with `p` (none if `p` is all 0xff).
fn prefix_end(p: &[u8]) -> Edge<Vec<u8>> {
    let mut end = p.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Edge::Excluded(end);
        }
    }
    Edge::Unbounded
}

/// Puts and deletes applied together.
#[pyclass(module = "flashkv._native")]
pub struct Batch {
    db: Py<Db>,
    /// None once committed or discarded.
    ops: Option<WriteBatch>,
}

impl Batch {
    fn ops(&mut self) -> PyResult<&mut WriteBatch> {
        self.ops.as_mut().ok_or_else(|| {
            errors::raise("StoreError", "the batch was already committed or discarded")
        })
    }
}

#[pymethods]
impl Batch {
    fn put(&mut self, key: Bound<'_, PyAny>, value: Bound<'_, PyAny>) -> PyResult<()> {
        let (k, v) = (bytes("key", &key)?, bytes("value", &value)?);
        self.ops()?.put(&k, &v);
        Ok(())
    }

    fn delete(&mut self, key: Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes("key", &key)?;
        self.ops()?.delete(&k);
        Ok(())
    }

    fn __len__(&self) -> usize {
        self.ops.as_ref().map_or(0, WriteBatch::len)
    }

    /// Applies every operation atomically.
    fn commit(&mut self, py: Python<'_>) -> PyResult<()> {
        let ops = std::mem::take(self.ops()?);
        self.ops = None;
        let db = self.db.borrow(py);
        let db = db.open_db()?;
        py.detach(|| db.write(ops)).map_err(errors::engine)
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Commits when the block raised nothing, else discards the batch.
    #[pyo3(signature = (exc_type, _exc=None, _tb=None))]
    fn __exit__(
        &mut self,
        py: Python<'_>,
        exc_type: Option<Bound<'_, PyAny>>,
        _exc: Option<Bound<'_, PyAny>>,
        _tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        match exc_type {
            None => self.commit(py)?,
            Some(_) => self.ops = None,
        }
        Ok(false)
    }
}

/// Pairs of a range, read a chunk at a time: keys come in order and never
/// twice; writes between chunks are seen as they are when their chunk is read.
#[pyclass(module = "flashkv._native")]
pub struct RangeIter {
    db: Py<Db>,
    /// What is left to read.
    lo: Edge<Vec<u8>>,
    hi: Edge<Vec<u8>>,
    reverse: bool,
    pairs: VecDeque<(Vec<u8>, Vec<u8>)>,
    done: bool,
}

impl RangeIter {
    /// Reads the next chunk and moves the bound it started from past it.
    fn fill(&mut self, py: Python<'_>) -> PyResult<()> {
        let db = self.db.borrow(py);
        let db = db.open_db()?;
        let range = (self.lo.clone(), self.hi.clone());
        let (reverse, pairs) = (self.reverse, &mut self.pairs);
        let n = py
            .detach(|| {
                let bounds = (
                    range.0.as_ref().map(Vec::as_slice),
                    range.1.as_ref().map(Vec::as_slice),
                );
                db.scan_with(bounds, reverse, CHUNK, |k, v| {
                    pairs.push_back((k.to_vec(), v.to_vec()))
                })
            })
            .map_err(errors::engine)?;
        self.done = n < CHUNK;
        if let Some((k, _)) = self.pairs.back() {
            let next = Edge::Excluded(k.clone());
            if self.reverse {
                self.hi = next;
            } else {
                self.lo = next;
            }
        }
        Ok(())
    }
}

#[pymethods]
impl RangeIter {
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        if self.pairs.is_empty() && !self.done {
            self.fill(py)?;
        }
        let Some((k, v)) = self.pairs.pop_front() else {
            return Ok(None);
        };
        PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)]).map(Some)
    }
}
