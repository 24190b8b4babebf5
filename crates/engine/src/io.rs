//! The device as the engine sees it: I/O counted per region, so page-store
//! traffic can be reported apart from the write-ahead log and checkpoints.

use std::sync::Arc;

use flashkv_device::{BlockDevice, DeviceError, Geometry, Nanos};

use crate::error::Result;
use crate::group::{LogSync, Mark};
use crate::wal::Wal;

/// Reads the device from any thread, outside the store's lock (a file's
/// `pread`): `Ok` fills the buffer, zeros past the end of the file.
pub(crate) type ReadAt = Arc<dyn Fn(u64, &mut [u8]) -> std::io::Result<()> + Send + Sync>;

/// Where on the device an operation went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// Superblocks / checkpoints.
    Meta,
    /// Write-ahead log.
    Wal,
    /// Pages and in-page logs (the page store).
    Data,
}

/// Whether `len` bytes at `off` are whole sectors of a device of `geo`.
fn aligned(geo: Geometry, off: u64, len: usize) -> bool {
    let s = u64::from(geo.sector_size);
    off % s == 0 && len as u64 % s == 0
}

/// Host operations on one region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RegionStats {
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Erase units erased (or ranges trimmed where there are none).
    pub erases: u64,
    /// Read-erase-rewrites of a whole erase unit (in-place updates on raw NAND).
    pub unit_rewrites: u64,
}

pub(crate) struct Disk {
    pub dev: Box<dyn BlockDevice>,
    pub geo: Geometry,
    /// A device of its own for the write-ahead log, if the store has one.
    pub log: Option<Box<dyn BlockDevice>>,
    /// Geometry of the device holding the log (`geo` without a log device).
    pub log_geo: Geometry,
    pub meta: RegionStats,
    pub wal: RegionStats,
    pub data: RegionStats,
    pub flushes: u64,
    /// Records appended to the write-ahead log so far, and how many of them
    /// a device flush made durable: a page must not reach the page store
    /// before the record holding its image is durable.
    pub logged: u64,
    synced: u64,
    /// How far the log is durable, shared with committers that flush
    /// outside the store's lock (group commit).
    pub sync: Arc<LogSync>,
    /// The write-ahead log, where page stores record what must survive a
    /// crash before they destroy older data (erase-unit map switches).
    pub journal: Option<Wal>,
}

impl Disk {
    pub fn new(dev: Box<dyn BlockDevice>, log: Option<Box<dyn BlockDevice>>) -> Disk {
        let geo = dev.geometry();
        let log_geo = log.as_ref().map_or(geo, |l| l.geometry());
        let syncer = log.as_ref().map_or_else(|| dev.syncer(), |l| l.syncer());
        Disk {
            sync: Arc::new(LogSync::new(syncer)),
            dev,
            geo,
            log,
            log_geo,
            meta: RegionStats::default(),
            wal: RegionStats::default(),
            data: RegionStats::default(),
            flushes: 0,
            logged: 0,
            synced: 0,
            journal: None,
        }
    }

    fn region(&mut self, r: Region) -> &mut RegionStats {
        match r {
            Region::Meta => &mut self.meta,
            Region::Wal => &mut self.wal,
            Region::Data => &mut self.data,
        }
    }

    /// The host's clock: the store's device's, or with a log device the
    /// later of the two, since the host waits for each operation (for
    /// simulated devices, whose clocks are their own).
    pub fn now(&self) -> Nanos {
        let c = self.dev.clock();
        self.log.as_ref().map_or(c, |l| c.max(l.clock()))
    }

    /// The device holding region `r`, its geometry, and the time to issue
    /// an operation at.
    fn device(&mut self, r: Region) -> (&mut dyn BlockDevice, Geometry, Nanos) {
        let now = self.now();
        match (r, &mut self.log) {
            (Region::Wal, Some(log)) => (&mut **log, self.log_geo, now),
            _ => (&mut *self.dev, self.geo, now),
        }
    }

    pub fn read(&mut self, r: Region, off: u64, buf: &mut [u8]) -> Result<()> {
        let (dev, geo, at) = self.device(r);
        debug_assert!(
            aligned(geo, off, buf.len()),
            "read of {} bytes at {off} is sector-aligned",
            buf.len()
        );
        dev.read_at(at, off, buf)?;
        let s = self.region(r);
        s.reads += 1;
        s.read_bytes += buf.len() as u64;
        Ok(())
    }

    pub fn write(&mut self, r: Region, off: u64, buf: &[u8]) -> Result<()> {
        assert!(!buf.is_empty(), "a write writes something");
        let (dev, geo, at) = self.device(r);
        debug_assert!(
            aligned(geo, off, buf.len()),
            "write of {} bytes at {off} is sector-aligned",
            buf.len()
        );
        dev.write_at(at, off, buf)?;
        let s = self.region(r);
        s.writes += 1;
        s.write_bytes += buf.len() as u64;
        Ok(())
    }

    /// Erases the erase unit holding `[off, off+len)` on devices that have
    /// them; elsewhere tells the device the range is free (trim), ignoring
    /// devices that cannot trim. Counted as one erase either way.
    pub fn erase(&mut self, r: Region, off: u64, len: u64) -> Result<()> {
        assert!(len > 0, "an erase covers something");
        let (dev, geo, at) = self.device(r);
        match geo.erase_unit {
            Some(eu) => {
                let mut u = off / eu;
                let mut at = at;
                while u * eu < off + len {
                    at = dev.erase_at(at, u)?.end;
                    u += 1;
                }
            }
            None => match dev.trim_at(at, off, len) {
                Ok(_) | Err(DeviceError::Unsupported(_)) => {}
                Err(e) => return Err(e.into()),
            },
        }
        self.region(r).erases += 1;
        Ok(())
    }

    /// True where the device is program-once and some sector of the range
    /// was written since its unit's last erase.
    pub fn programmed(&self, off: u64, len: u64) -> bool {
        self.geo.program_once && self.dev.is_programmed(off, len)
    }

    /// [`Disk::programmed`] for a range of the log.
    pub fn log_programmed(&self, off: u64, len: u64) -> bool {
        match &self.log {
            Some(log) => self.log_geo.program_once && log.is_programmed(off, len),
            None => self.programmed(off, len),
        }
    }

    /// Makes everything written so far durable: the log device first, so
    /// a record is never behind the pages it allows to be written.
    pub fn flush(&mut self) -> Result<()> {
        let now = self.now();
        let mut at = now;
        if let Some(log) = &mut self.log {
            at = log.flush_at(now)?.end;
        }
        self.dev.flush_at(at)?;
        self.log_durable();
        debug_assert_eq!(
            self.synced, self.logged,
            "a flush makes every record durable"
        );
        Ok(())
    }

    /// A flush completed: every record appended so far is durable.
    fn log_durable(&mut self) {
        debug_assert!(
            self.synced <= self.logged,
            "no more records durable than appended"
        );
        self.flushes += 1;
        self.synced = self.logged;
        if let Some(w) = &mut self.journal {
            w.flushed();
        }
        self.sync.flushed();
    }

    /// A record's write completed: `seq` is its sequence number.
    pub fn appended(&mut self, seq: u64) {
        self.logged += 1;
        self.sync.appended(Mark {
            logged: self.logged,
            seq,
        });
    }

    /// Takes in what committers made durable outside the lock since.
    pub fn catch_up(&mut self) {
        let d = self.sync.durable();
        debug_assert!(d.logged <= self.logged, "no more durable than appended");
        if d.logged > self.synced {
            self.synced = d.logged;
            if let Some(w) = &mut self.journal {
                w.durable_to(d.seq);
            }
        }
    }

    /// Makes the log durable (all records appended so far), and nothing
    /// else where the log has a device of its own.
    pub fn flush_log(&mut self) -> Result<()> {
        let now = self.now();
        let Some(log) = &mut self.log else {
            return self.flush();
        };
        log.flush_at(now)?;
        self.log_durable();
        debug_assert!(
            self.synced == self.logged,
            "every record appended is durable"
        );
        Ok(())
    }

    /// Appends a record to the write-ahead log, not yet durable; a no-op
    /// without a log.
    pub fn append(&mut self, kind: u8, payload: &[u8]) -> Result<()> {
        let Some(mut wal) = self.journal.take() else {
            return Ok(());
        };
        let before = self.logged;
        let r = wal.append(self, kind, payload);
        debug_assert!(
            r.is_err() || self.logged == before + 1,
            "an append counts one record"
        );
        self.journal = Some(wal);
        r
    }

    /// Appends a record to the write-ahead log and makes it durable; a no-op
    /// without a log (non-durable mode).
    pub fn journal(&mut self, kind: u8, payload: &[u8]) -> Result<()> {
        let Some(mut wal) = self.journal.take() else {
            return Ok(());
        };
        // What the record points to must be durable before the record is.
        let r = self.flush().and_then(|_| {
            wal.flushed();
            wal.append(self, kind, payload)
        });
        self.journal = Some(wal);
        r?;
        self.flush()?;
        debug_assert!(self.synced == self.logged, "a journalled record is durable");
        Ok(())
    }

    /// Whether record `lsn` (a count of appends) is durable.
    pub fn is_durable(&self, lsn: u64) -> bool {
        lsn <= self.synced
    }

    /// Makes the log durable up to record `lsn` (a count of appends).
    pub fn barrier(&mut self, lsn: u64) -> Result<()> {
        assert!(
            lsn <= self.logged,
            "record {lsn} was appended (of {})",
            self.logged
        );
        if lsn > self.synced {
            self.flush()?;
        }
        Ok(())
    }
}
