//! The FUSE side: each request read from or applied to the [`Disk`], and
//! power cut at the request the test armed.
//!
//! Every open is direct I/O and every name and attribute is given with a
//! time-to-live of zero, so the kernel caches nothing a cut would make
//! stale: after a restart, reads see only what the cut kept.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner,
    OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use rand::rngs::SmallRng;

use super::model::{Disk, Loss, Node};

const TTL: Duration = Duration::ZERO;

/// The state the test and the file system share.
#[derive(Default)]
pub(crate) struct Inner {
    pub disk: Disk,
    /// Requests that change the disk or sync it, since mounting: the
    /// points where power may be cut.
    pub ops: u64,
    /// Power is cut at this request, as it runs.
    pub armed: Option<(u64, Loss, SmallRng)>,
    /// Power is off: every request fails until the test restarts it.
    pub dead: bool,
    /// Answer a directory sync with EINVAL, as some file systems do.
    pub refuse_dir_sync: bool,
}

impl Inner {
    /// Counts a request that may be cut; returns whether power fails now.
    fn tick(&mut self) -> bool {
        self.ops += 1;
        let at = self.ops;
        match self.armed.take() {
            Some((n, loss, mut rng)) if n == at => {
                self.disk.cut(loss, &mut rng);
                self.dead = true;
                true
            }
            other => {
                self.armed = other;
                false
            }
        }
    }
}

pub(crate) struct PowerCutFs {
    pub inner: Arc<Mutex<Inner>>,
    pub uid: u32,
    pub gid: u32,
}

fn eio() -> Errno {
    Errno::EIO
}

impl PowerCutFs {
    /// The shared state, or EIO while power is off.
    fn live(&self) -> Result<MutexGuard<'_, Inner>, Errno> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if g.dead {
            return Err(eio());
        }
        Ok(g)
    }

    /// Applies a change; power fails during it (what it wrote may or may
    /// not be kept) if the test armed this request.
    fn change<R>(&self, f: impl FnOnce(&mut Disk) -> Result<R, Errno>) -> Result<R, Errno> {
        let mut g = self.live()?;
        let r = f(&mut g.disk)?;
        if g.tick() {
            return Err(eio());
        }
        Ok(r)
    }

    /// A sync of `ino`; power fails before it if the test armed this request.
    fn sync(&self, ino: INodeNo) -> Result<(), Errno> {
        let mut g = self.live()?;
        if g.tick() {
            return Err(eio());
        }
        g.disk.sync(ino.0);
        Ok(())
    }

    fn attr(&self, disk: &Disk, ino: u64) -> Result<FileAttr, Errno> {
        let node = disk.now().node(ino).ok_or(Errno::ENOENT)?;
        let (kind, size, perm) = match node {
            Node::File(f) => (FileType::RegularFile, f.len(), 0o644),
            Node::Dir(d) => (FileType::Directory, d.len() as u64, 0o755),
        };
        Ok(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind,
            perm,
            nlink: 1,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
            flags: 0,
            blksize: 4096,
        })
    }

    fn entry(&self, parent: INodeNo, name: &OsStr, dir: bool) -> Result<FileAttr, Errno> {
        let mut ino = 0;
        self.change(|disk| {
            if disk.now().child(parent.0, name).is_some() {
                return Err(Errno::EEXIST);
            }
            if !matches!(disk.now().node(parent.0), Some(Node::Dir(_))) {
                return Err(Errno::ENOTDIR);
            }
            ino = disk.create(parent.0, name, dir);
            Ok(())
        })?;
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        self.attr(&g.disk, ino)
    }

    fn remove(&self, parent: INodeNo, name: &OsStr, dir: bool) -> Result<(), Errno> {
        self.change(|disk| {
            let ino = disk.now().child(parent.0, name).ok_or(Errno::ENOENT)?;
            match (disk.now().node(ino), dir) {
                (Some(Node::Dir(d)), true) if !d.is_empty() => return Err(Errno::ENOTEMPTY),
                (Some(Node::Dir(_)), false) => return Err(Errno::EISDIR),
                (Some(Node::File(_)), true) => return Err(Errno::ENOTDIR),
                _ => {}
            }
            disk.unlink(parent.0, name);
            Ok(())
        })
    }
}

/// Replies with `r`'s value through `ok`, or its error.
macro_rules! answer {
    ($reply:expr, $r:expr, |$v:ident| $ok:expr) => {
        match $r {
            Ok($v) => $ok,
            Err(e) => $reply.error(e),
        }
    };
}

impl Filesystem for PowerCutFs {
    fn lookup(&self, _: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let r = self.live().and_then(|g| {
            let ino = g.disk.now().child(parent.0, name).ok_or(Errno::ENOENT)?;
            self.attr(&g.disk, ino)
        });
        answer!(reply, r, |a| reply.entry(&TTL, &a, Generation(0)));
    }

    fn getattr(&self, _: &Request, ino: INodeNo, _: Option<FileHandle>, reply: ReplyAttr) {
        let r = self.live().and_then(|g| self.attr(&g.disk, ino.0));
        answer!(reply, r, |a| reply.attr(&TTL, &a));
    }

    fn setattr(
        &self,
        _: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<std::time::SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        // Only the length is kept: nothing here reads modes or times.
        let r = match size {
            Some(len) => self.change(|disk| {
                disk.set_len(ino.0, len);
                Ok(())
            }),
            None => self.live().map(drop),
        };
        let r = r.and_then(|()| {
            let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            self.attr(&g.disk, ino.0)
        });
        answer!(reply, r, |a| reply.attr(&TTL, &a));
    }

    fn mkdir(&self, _: &Request, parent: INodeNo, name: &OsStr, _: u32, _: u32, reply: ReplyEntry) {
        let r = self.entry(parent, name, true);
        answer!(reply, r, |a| reply.entry(&TTL, &a, Generation(0)));
    }

    fn unlink(&self, _: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        answer!(reply, self.remove(parent, name, false), |_v| reply.ok());
    }

    fn rmdir(&self, _: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        answer!(reply, self.remove(parent, name, true), |_v| reply.ok());
    }

    fn rename(
        &self,
        _: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = self.change(|disk| {
            disk.now().child(parent.0, name).ok_or(Errno::ENOENT)?;
            if !flags.is_empty() {
                return Err(Errno::EINVAL);
            }
            disk.rename((parent.0, name), (newparent.0, newname));
            Ok(())
        });
        answer!(reply, r, |_v| reply.ok());
    }

    fn open(&self, _: &Request, _: INodeNo, _: OpenFlags, reply: ReplyOpen) {
        answer!(reply, self.live(), |_g| reply
            .opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO));
    }

    fn read(
        &self,
        _: &Request,
        ino: INodeNo,
        _: FileHandle,
        offset: u64,
        size: u32,
        _: OpenFlags,
        _: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let r = self.live().and_then(|g| match g.disk.now().node(ino.0) {
            Some(Node::File(f)) => Ok(f.read(offset, u64::from(size))),
            Some(Node::Dir(_)) => Err(Errno::EISDIR),
            None => Err(Errno::ENOENT),
        });
        answer!(reply, r, |data| reply.data(&data));
    }

    fn write(
        &self,
        _: &Request,
        ino: INodeNo,
        _: FileHandle,
        offset: u64,
        data: &[u8],
        _: WriteFlags,
        _: OpenFlags,
        _: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let r = self.change(|disk| {
            disk.write(ino.0, offset, data);
            Ok(data.len() as u32)
        });
        answer!(reply, r, |n| reply.written(n));
    }

    fn flush(&self, _: &Request, _: INodeNo, _: FileHandle, _: LockOwner, reply: ReplyEmpty) {
        // Nothing is buffered here: a close has nothing to write.
        reply.ok();
    }

    fn fsync(&self, _: &Request, ino: INodeNo, _: FileHandle, _: bool, reply: ReplyEmpty) {
        answer!(reply, self.sync(ino), |_v| reply.ok());
    }

    fn opendir(&self, _: &Request, _: INodeNo, _: OpenFlags, reply: ReplyOpen) {
        answer!(reply, self.live(), |_g| reply
            .opened(FileHandle(0), FopenFlags::empty()));
    }

    fn readdir(
        &self,
        _: &Request,
        ino: INodeNo,
        _: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let r = self.live().and_then(|g| match g.disk.now().node(ino.0) {
            Some(Node::Dir(d)) => Ok(listing(&g.disk, ino.0, d)),
            _ => Err(Errno::ENOTDIR),
        });
        match r {
            Ok(list) => {
                for (i, (child, kind, name)) in list.into_iter().enumerate().skip(offset as usize) {
                    if reply.add(INodeNo(child), i as u64 + 1, kind, &name) {
                        break;
                    }
                }
                reply.ok();
            }
            Err(e) => reply.error(e),
        }
    }

    fn fsyncdir(&self, _: &Request, ino: INodeNo, _: FileHandle, _: bool, reply: ReplyEmpty) {
        let refused = self
            .inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .refuse_dir_sync;
        if refused {
            return reply.error(Errno::EINVAL);
        }
        answer!(reply, self.sync(ino), |_v| reply.ok());
    }

    fn statfs(&self, _: &Request, _: INodeNo, reply: ReplyStatfs) {
        // Room enough for any test (the stores check free space before filling).
        let blocks = 1 << 24;
        reply.statfs(blocks, blocks, blocks, 1 << 20, 1 << 20, 4096, 255, 4096);
    }

    fn create(
        &self,
        _: &Request,
        parent: INodeNo,
        name: &OsStr,
        _: u32,
        _: u32,
        _: i32,
        reply: ReplyCreate,
    ) {
        let r = self.entry(parent, name, false);
        answer!(reply, r, |a| reply.created(
            &TTL,
            &a,
            Generation(0),
            FileHandle(0),
            FopenFlags::FOPEN_DIRECT_IO
        ));
    }

    fn fallocate(
        &self,
        _: &Request,
        _: INodeNo,
        _: FileHandle,
        _: u64,
        _: u64,
        _: i32,
        reply: ReplyEmpty,
    ) {
        // Callers that punch holes write zeros instead, as on a file
        // system without hole punching.
        reply.error(Errno::EOPNOTSUPP);
    }
}

/// A directory's entries, `.` and `..` first.
fn listing(
    disk: &Disk,
    ino: u64,
    d: &BTreeMap<std::ffi::OsString, u64>,
) -> Vec<(u64, FileType, std::ffi::OsString)> {
    let mut list = vec![
        (ino, FileType::Directory, ".".into()),
        (ino, FileType::Directory, "..".into()),
    ];
    for (name, &child) in d {
        let kind = match disk.now().node(child) {
            Some(Node::Dir(_)) => FileType::Directory,
            _ => FileType::RegularFile,
        };
        list.push((child, kind, name.clone()));
    }
    list
}
