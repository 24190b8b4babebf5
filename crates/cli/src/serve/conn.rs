//! One client connection: the handshake, then requests read and served in
//! order on this thread while a second thread writes each reply when due.

use std::io::{self, Read, Write};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, MutexGuard, PoisonError};

use flashkv_device::Completion;

use super::export::{join, Errno, Export};
use super::handshake::{negotiate, ExportInfo, Outcome};
use super::nbd::*;
use super::pace::{Clock, Reply};
use super::stats::Stats;

/// What every connection shares.
pub struct Shared {
    pub export: Mutex<Export>,
    pub stats: Mutex<Stats>,
    pub clock: Clock,
    pub info: ExportInfo,
}

impl Shared {
    pub fn stats(&self) -> MutexGuard<'_, Stats> {
        // Counters stay meaningful even if a thread died while holding them.
        self.stats.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The device, or EIO when a thread panicked while using it (its state
    /// may be half-updated, so it is not served again).
    fn export(&self) -> Result<MutexGuard<'_, Export>, Errno> {
        self.export.lock().map_err(|_| Errno(EIO))
    }
}

/// Serves one connection (`r` and `w` are its two directions) until the
/// client disconnects; an error means the connection was cut short.
pub fn serve(
    mut r: impl Read,
    mut w: impl Write + Send,
    shared: &Shared,
) -> Result<(), ProtocolError> {
    if negotiate(&mut r, &mut w, &shared.info)? == Outcome::Aborted {
        return Ok(());
    }
    shared.stats().counters.connections += 1;
    let (tx, rx) = channel::<Reply>();
    std::thread::scope(|s| {
        let writer = s.spawn(move || {
            let mut late = || shared.stats().counters.late_replies += 1;
            super::pace::deliver(&rx, &mut w, &mut late)
        });
        let read = requests(&mut r, &tx, shared);
        drop(tx);
        let wrote = writer.join().expect("the reply writer does not panic");
        read?;
        Ok(wrote?)
    })
}

/// Reads and serves requests until NBD_CMD_DISC or the client goes away.
fn requests(r: &mut impl Read, tx: &Sender<Reply>, shared: &Shared) -> Result<(), ProtocolError> {
    while let Some(req) = read_request(r)? {
        if req.kind == CMD_DISC {
            return Ok(());
        }
        let reply = serve_one(r, req, shared)?;
        if tx.send(reply).is_err() {
            // The writer stopped: the client is gone.
            return Ok(());
        }
    }
    Ok(())
}

/// Serves one request: its reply, with the time it may leave.
fn serve_one(r: &mut impl Read, req: Request, shared: &Shared) -> Result<Reply, ProtocolError> {
    let len = u64::from(req.len);
    let mut data = Vec::new();
    if req.kind == CMD_WRITE {
        if req.len > MAX_REQUEST {
            // Too big to hold: drain the payload to stay in step.
            io::copy(&mut r.take(len), &mut io::sink())?;
            return Ok(failed(shared, req, Errno(EINVAL)));
        }
        data.resize(req.len as usize, 0);
        r.read_exact(&mut data)?;
    }
    let fua = req.flags & CMD_FLAG_FUA != 0;
    let done = match req.kind {
        _ if req.flags & !allowed_flags(req.kind) != 0 => Err(Errno(EINVAL)),
        // No payload bounds a trim or write-zeroes: any length is served
        // (nbdfuse passes the kernel's fallocate on whole).
        CMD_READ | CMD_WRITE if req.len > MAX_REQUEST => Err(Errno(EINVAL)),
        CMD_READ => {
            data.resize(req.len as usize, 0);
            run(shared, false, |e, at| e.read(at, req.offset, &mut data))
        }
        CMD_WRITE => run(shared, fua, |e, at| e.write(at, req.offset, &data)),
        CMD_FLUSH => run(shared, false, |e, at| e.flush(at)),
        CMD_TRIM => run(shared, fua, |e, at| e.trim(at, req.offset, len)),
        CMD_WRITE_ZEROES => {
            let allocate = req.flags & CMD_FLAG_NO_HOLE != 0;
            run(shared, fua, |e, at| e.zero(at, req.offset, len, allocate))
        }
        _ => Err(Errno(EINVAL)),
    };
    let (at, c) = match done {
        Ok(v) => v,
        Err(e) => return Ok(failed(shared, req, e)),
    };
    shared
        .stats()
        .served(req.kind, len, c.end.saturating_sub(at));
    if req.kind != CMD_READ {
        data = Vec::new();
    }
    assert_eq!(
        data.len(),
        if req.kind == CMD_READ {
            req.len as usize
        } else {
            0
        },
        "a reply carries exactly the bytes read"
    );
    Ok(Reply {
        due: shared.clock.due(c.end),
        handle: req.handle,
        error: 0,
        data,
    })
}

/// The command flags a request of `kind` may carry (the protocol asks for
/// EINVAL on any other).
fn allowed_flags(kind: u16) -> u16 {
    match kind {
        CMD_WRITE | CMD_TRIM => CMD_FLAG_FUA,
        CMD_WRITE_ZEROES => CMD_FLAG_FUA | CMD_FLAG_NO_HOLE,
        _ => 0,
    }
}

/// Runs `op` on the export at the virtual time the request is issued;
/// with `fua`, the device is flushed before the request completes.
fn run(
    shared: &Shared,
    fua: bool,
    op: impl FnOnce(&mut Export, u64) -> Result<Completion, Errno>,
) -> Result<(u64, Completion), Errno> {
    let mut e = shared.export()?;
    let at = shared.clock.issue(e.clock());
    let mut c = op(&mut e, at)?;
    if fua {
        c = join(c, e.flush(c.end)?);
    }
    Ok((at, c))
}

fn failed(shared: &Shared, req: Request, e: Errno) -> Reply {
    shared.stats().counters.errors += 1;
    Reply {
        due: shared.clock.due(0),
        handle: req.handle,
        error: e.0,
        data: Vec::new(),
    }
}
