//! Where the server listens: a TCP address (loopback unless the user says
//! otherwise) or a Unix socket file, which it creates and removes again.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::CliError;
use crate::files::{self, Created};

pub enum Listener {
    Tcp(TcpListener),
    /// The socket file is removed when the listener is dropped.
    Unix {
        l: UnixListener,
        path: PathBuf,
        _socket: Created,
    },
}

/// An accepted connection's two directions.
pub struct Conn {
    pub r: Box<dyn Read + Send>,
    pub w: Box<dyn Write + Send>,
}

fn usage(m: String) -> CliError {
    CliError::Usage(m)
}

/// The TCP address to listen on; anything but loopback needs `allow_remote`
/// (NBD has no authentication: whoever connects may read and write).
pub fn tcp_address(arg: &str, allow_remote: bool) -> Result<SocketAddr, CliError> {
    let addr = arg
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| usage(format!("--listen {arg}: not an address:port")))?;
    if !addr.ip().is_loopback() && !allow_remote {
        return Err(usage(format!(
            "--listen {arg}: not a loopback address; NBD has no authentication, pass --allow-remote to serve other hosts"
        )));
    }
    Ok(addr)
}

/// Checks a Unix socket path before anything is opened: its directory
/// exists, and nothing is there but a stale socket nobody listens on.
pub fn check_socket(path: &Path) -> Result<(), CliError> {
    let shown = path.display();
    let dir = files::parent(path);
    if !dir.is_dir() {
        return Err(usage(format!(
            "--socket {shown}: directory {} does not exist",
            dir.display()
        )));
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Err(usage(format!(
            "--socket {shown}: exists and is not a socket; refusing to replace it"
        )));
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(usage(format!(
            "--socket {shown}: another server is listening on it"
        ))),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(()),
        Err(e) => Err(usage(format!("--socket {shown}: {e}"))),
    }
}

impl Listener {
    pub fn tcp(addr: SocketAddr) -> Result<Self, CliError> {
        let l = TcpListener::bind(addr).map_err(|e| usage(format!("--listen {addr}: {e}")))?;
        l.set_nonblocking(true)
            .map_err(|e| CliError::Failed(e.to_string()))?;
        Ok(Listener::Tcp(l))
    }

    /// Binds the socket checked by [`check_socket`].
    pub fn unix(path: &Path) -> Result<Self, CliError> {
        if std::fs::symlink_metadata(path).is_ok() {
            // A stale socket (check_socket found nobody listening).
            std::fs::remove_file(path)
                .map_err(|e| usage(format!("--socket {}: {e}", path.display())))?;
        }
        let l = UnixListener::bind(path)
            .map_err(|e| usage(format!("--socket {}: {e}", path.display())))?;
        let mut created = Created::default();
        created.add(path);
        l.set_nonblocking(true)
            .map_err(|e| CliError::Failed(e.to_string()))?;
        Ok(Listener::Unix {
            l,
            path: path.to_path_buf(),
            _socket: created,
        })
    }

    /// The address as qemu spells it.
    pub fn uri(&self) -> String {
        match self {
            Listener::Tcp(l) => match l.local_addr() {
                Ok(SocketAddr::V6(a)) => format!("nbd://[{}]:{}", a.ip(), a.port()),
                Ok(a) => format!("nbd://{a}"),
                Err(_) => "nbd://?".into(),
            },
            Listener::Unix { path, .. } => format!("nbd+unix:///?socket={}", path.display()),
        }
    }

    fn fd(&self) -> RawFd {
        match self {
            Listener::Tcp(l) => l.as_raw_fd(),
            Listener::Unix { l, .. } => l.as_raw_fd(),
        }
    }

    /// Waits up to `timeout` for a client; `None` when none came (or a
    /// signal interrupted the wait).
    pub fn accept(&self, timeout: Duration) -> io::Result<Option<Conn>> {
        let mut p = libc::pollfd {
            fd: self.fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd, for the duration of the call.
        if unsafe { libc::poll(&mut p, 1, ms) } <= 0 {
            return Ok(None);
        }
        let got = match self {
            Listener::Tcp(l) => l.accept().and_then(|(s, _)| {
                s.set_nonblocking(false)?;
                // Replies are small and timed: do not let Nagle hold them.
                s.set_nodelay(true)?;
                Ok(Conn {
                    r: Box::new(s.try_clone()?),
                    w: Box::new(s),
                })
            }),
            Listener::Unix { l, .. } => l.accept().and_then(|(s, _)| {
                s.set_nonblocking(false)?;
                Ok(Conn {
                    r: Box::new(s.try_clone()?),
                    w: Box::new(s),
                })
            }),
        };
        match got {
            Ok(c) => Ok(Some(c)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_unless_allowed() {
        assert!(tcp_address("127.0.0.1:10809", false).is_ok());
        assert!(tcp_address("[::1]:0", false).is_ok());
        assert!(tcp_address("0.0.0.0:10809", false).is_err());
        assert!(tcp_address("0.0.0.0:10809", true).is_ok());
        assert!(tcp_address("nonsense", false).is_err());
    }

    #[test]
    fn a_file_in_the_way_is_refused_and_a_stale_socket_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"keep").unwrap();
        assert!(check_socket(&f).is_err());
        assert_eq!(std::fs::read(&f).unwrap(), b"keep");
        let s = dir.path().join("s");
        let Ok(live) = Listener::unix(&s) else {
            panic!("bind {}", s.display())
        };
        assert!(check_socket(&s).is_err(), "someone is listening");
        // A server killed without cleaning up leaves its socket behind.
        let Listener::Unix { l, _socket, .. } = live else {
            unreachable!()
        };
        drop(l);
        _socket.keep();
        assert!(s.exists() && check_socket(&s).is_ok(), "stale");
        let Ok(again) = Listener::unix(&s) else {
            panic!("the stale socket is not replaced")
        };
        drop(again);
        assert!(!s.exists(), "removed when the server ends");
    }
}
