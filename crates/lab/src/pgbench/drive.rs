//! One emulated drive as PostgreSQL sees it: `flashkv serve --pace real`
//! on a Unix socket, the file system image copied onto it with nbdcopy,
//! nbdfuse showing the export as a file, and fuse2fs mounting the ext4 in
//! it with `direct_io` (no kernel page cache above fuse2fs). Below fuse2fs,
//! nbdfuse 1.14 cannot open its file with direct_io, so a thread drops that
//! file's page cache every millisecond (posix_fadvise DONTNEED).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::host::Host;
use super::procs::{self, Stack};
use crate::lab::LabError;

fn failed(what: &str, e: impl std::fmt::Display) -> LabError {
    LabError::Run(format!("{what}: {e}"))
}

/// A log file for a child's output.
fn log(path: &Path) -> Result<File, LabError> {
    File::create(path).map_err(|e| failed(&path.display().to_string(), e))
}

/// Runs `cmd` to its end (killed if the lab is interrupted); its output goes
/// to `out`. Fails with the output's last lines when it exits non-zero.
pub fn run(mut cmd: Command, what: &str, out: &Path) -> Result<(), LabError> {
    let f = log(out)?;
    let g = f.try_clone().map_err(|e| failed(what, e))?;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(f)
        .stderr(g)
        .spawn()
        .map_err(|e| failed(what, e))?;
    let status = loop {
        if procs::check().is_err() {
            procs::stop(&mut child, libc::SIGTERM, Duration::from_secs(5));
            return Err(LabError::Interrupted);
        }
        match child.try_wait().map_err(|e| failed(what, e))? {
            Some(s) => break s,
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    if status.success() {
        return Ok(());
    }
    let text = std::fs::read_to_string(out).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(5).collect();
    Err(failed(
        what,
        format!(
            "{status}: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ),
    ))
}

/// A running `flashkv serve` and the JSON reports it printed.
pub struct Server {
    index: usize,
    pub socket: PathBuf,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Serves `target` (serve's own arguments) at the model's real speed.
    pub fn start(
        stack: &mut Stack,
        host: &Host,
        target: &[&str],
        socket: &Path,
        err: &Path,
    ) -> Result<Server, LabError> {
        let mut child = procs::command(&host.flashkv)
            .arg("serve")
            .args(target)
            .args(["--pace", "real", "--json", "--socket"])
            .arg(socket)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log(err)?)
            .spawn()
            .map_err(|e| failed("flashkv serve", e))?;
        let out = child.stdout.take().expect("stdout is piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&lines);
        // Ends when the server closes its stdout (it exits).
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                keep.lock().unwrap_or_else(|p| p.into_inner()).push(l);
            }
        });
        let index = stack.process(child, libc::SIGTERM);
        let s = Server {
            index,
            socket: socket.to_path_buf(),
            lines,
        };
        procs::wait_for("flashkv serve", Duration::from_secs(30), || {
            if let Ok(Some(st)) = stack.child(index).try_wait() {
                let e = std::fs::read_to_string(err).unwrap_or_default();
                return Err(failed("flashkv serve", format!("{st}: {}", e.trim())));
            }
            Ok(socket.exists())
        })?;
        Ok(s)
    }

    pub fn uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.socket.display())
    }

    fn count(&self) -> usize {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn last(&self) -> Result<Value, LabError> {
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let l = lines
            .last()
            .ok_or_else(|| LabError::Run("flashkv serve printed no report".into()))?;
        serde_json::from_str(l).map_err(|e| failed("flashkv serve's report", e))
    }

    /// The report SIGUSR2 prints; the server then counts a new interval.
    pub fn interval(&self, stack: &mut Stack) -> Result<Value, LabError> {
        let n = self.count();
        procs::signal(stack.child(self.index), libc::SIGUSR2);
        procs::wait_for("a serve report", Duration::from_secs(30), || {
            Ok(self.count() > n)
        })?;
        self.last()
    }

    /// Ends the server; its last report (with a hybrid's write-back).
    pub fn finish(&self, stack: &mut Stack) -> Result<Value, LabError> {
        let n = self.count();
        procs::stop(
            stack.child(self.index),
            libc::SIGTERM,
            Duration::from_secs(60),
        );
        // The reader thread takes the last line as the pipe closes.
        procs::wait_for("the final serve report", Duration::from_secs(10), || {
            Ok(self.count() > n)
        })?;
        self.last()
    }

    /// Copies a file system image onto the drive (holes become zeroes).
    pub fn load(&self, host: &Host, image: &Path, out: &Path) -> Result<(), LabError> {
        let mut c = procs::command(&host.nbdcopy);
        c.arg("--flush").arg(image).arg(self.uri());
        run(c, "nbdcopy", out)
    }
}

/// A mounted drive: the nbdfuse file and the ext4 in it.
pub struct Mounted {
    nbdfuse: usize,
    fuse2fs: usize,
    pub file: PathBuf,
    pub dir: PathBuf,
    nbd_dir: PathBuf,
}

fn spawn(cmd: &mut Command, what: &str, err: &Path) -> Result<Child, LabError> {
    cmd.stdin(Stdio::null())
        .stdout(log(err)?)
        .stderr(log(&err.with_extension("err"))?)
        .spawn()
        .map_err(|e| failed(what, e))
}

/// Mounts the drive's ext4 at `dir` (an empty folder), through nbdfuse at
/// `nbd_dir`.
pub fn mount(
    stack: &mut Stack,
    host: &Host,
    server: &Server,
    nbd_dir: &Path,
    dir: &Path,
) -> Result<Mounted, LabError> {
    std::fs::create_dir_all(nbd_dir).map_err(|e| failed("mkdir", e))?;
    let mut c = procs::command(&host.nbdfuse);
    c.arg(nbd_dir).arg("--unix").arg(&server.socket);
    let child = spawn(&mut c, "nbdfuse", &nbd_dir.with_extension("log"))?;
    let nbdfuse = stack.process(child, libc::SIGTERM);
    stack.mount(nbd_dir);
    let file = nbd_dir.join("nbd");
    alive_until(stack, nbdfuse, "nbdfuse", || file.exists())?;
    let mut c = procs::command(&host.fuse2fs);
    c.arg(&file)
        .arg(dir)
        .args(["-f", "-o", "allow_other,direct_io"]);
    let child = spawn(&mut c, "fuse2fs", &dir.with_extension("log"))?;
    let fuse2fs = stack.process(child, libc::SIGTERM);
    stack.mount(dir);
    alive_until(stack, fuse2fs, "fuse2fs", || procs::is_mount(dir))?;
    Ok(Mounted {
        nbdfuse,
        fuse2fs,
        file,
        dir: dir.to_path_buf(),
        nbd_dir: nbd_dir.to_path_buf(),
    })
}

/// Waits for `ready` while the child at `index` runs.
fn alive_until(
    stack: &mut Stack,
    index: usize,
    what: &str,
    ready: impl Fn() -> bool,
) -> Result<(), LabError> {
    procs::wait_for(what, Duration::from_secs(30), || {
        if let Ok(Some(st)) = stack.child(index).try_wait() {
            return Err(failed(what, format!("exited before mounting ({st})")));
        }
        Ok(ready())
    })
}

impl Mounted {
    /// Unmounts the ext4, then the nbdfuse file, and reaps both daemons.
    pub fn unmount(&self, stack: &mut Stack) {
        procs::unmount(&self.dir);
        procs::stop(
            stack.child(self.fuse2fs),
            libc::SIGTERM,
            Duration::from_secs(20),
        );
        procs::unmount(&self.nbd_dir);
        procs::stop(
            stack.child(self.nbdfuse),
            libc::SIGTERM,
            Duration::from_secs(20),
        );
    }
}

/// Drops the page cache of `files` every millisecond until stopped.
pub fn keep_uncached(stack: &mut Stack, files: &[&Path]) -> Result<Arc<AtomicBool>, LabError> {
    let fds: Vec<File> = files
        .iter()
        .map(|p| File::open(p).map_err(|e| failed(&p.display().to_string(), e)))
        .collect::<Result<_, _>>()?;
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let h = std::thread::spawn(move || {
        while !flag.load(Ordering::SeqCst) {
            for f in &fds {
                // SAFETY: an open descriptor; DONTNEED only drops clean pages.
                unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    stack.thread(Arc::clone(&stop), h);
    Ok(stop)
}
