//! A tiny NBD client for the tests, written from the protocol document, and
//! a helper that runs `flashkv serve` on a Unix socket.

#![allow(dead_code)] // each test file uses part of it

use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_ERR_UNSUP: u32 = (1 << 31) | 1;
pub const REP_ERR_UNKNOWN: u32 = (1 << 31) | 6;
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub const FLAG_FUA: u16 = 1;
pub const FLAG_NO_HOLE: u16 = 2;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes(b[i..i + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_be_bytes(b[i..i + 8].try_into().unwrap())
}

/// Connects to a socket that exists, retrying while the server has bound
/// it but not yet called listen.
pub fn connect(path: &Path) -> io::Result<UnixStream> {
    let began = Instant::now();
    loop {
        match UnixStream::connect(path) {
            Err(e)
                if e.kind() == io::ErrorKind::ConnectionRefused
                    && began.elapsed() < Duration::from_secs(5) =>
            {
                std::thread::sleep(Duration::from_millis(10))
            }
            other => return other,
        }
    }
}

/// Reads the greeting and sends the client flags; returns the server's flags.
pub fn greet(s: &mut UnixStream, client_flags: u32) -> io::Result<u16> {
    let mut g = [0u8; 18];
    s.read_exact(&mut g)?;
    assert_eq!(&g[..8], b"NBDMAGIC");
    assert_eq!(u64_at(&g, 8), IHAVEOPT);
    s.write_all(&client_flags.to_be_bytes())?;
    Ok(u16::from_be_bytes([g[16], g[17]]))
}

pub fn send_option(s: &mut UnixStream, option: u32, data: &[u8]) -> io::Result<()> {
    let mut b = IHAVEOPT.to_be_bytes().to_vec();
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b)
}

/// One option reply: (option, type, payload).
pub fn option_reply(s: &mut UnixStream) -> io::Result<(u32, u32, Vec<u8>)> {
    let mut h = [0u8; 20];
    s.read_exact(&mut h)?;
    assert_eq!(u64_at(&h, 0), 0x0003_e889_0455_65a9, "option reply magic");
    let mut data = vec![0u8; u32_at(&h, 16) as usize];
    s.read_exact(&mut data)?;
    Ok((u32_at(&h, 8), u32_at(&h, 12), data))
}

/// The payload of NBD_OPT_INFO / NBD_OPT_GO asking for `types`.
pub fn info_request(name: &str, types: &[u16]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(types.len() as u16).to_be_bytes());
    for t in types {
        d.extend_from_slice(&t.to_be_bytes());
    }
    d
}

/// What NBD_OPT_GO told the client.
#[derive(Debug, Default)]
pub struct Go {
    pub size: u64,
    pub flags: u16,
    /// (minimum, preferred, maximum) when the server sent block sizes.
    pub block: Option<(u32, u32, u32)>,
}

pub struct Client {
    pub s: UnixStream,
    next: u64,
}

impl Client {
    /// Connects, negotiates with NBD_OPT_GO (asking for block sizes).
    pub fn go(path: &Path) -> io::Result<(Client, Go)> {
        let mut s = connect(path)?;
        greet(&mut s, 3)?;
        send_option(&mut s, OPT_GO, &info_request("", &[3]))?;
        let mut go = Go::default();
        loop {
            let (opt, kind, d) = option_reply(&mut s)?;
            assert_eq!(opt, OPT_GO);
            if kind == REP_ACK {
                break;
            }
            match (kind, u16::from_be_bytes([d[0], d[1]])) {
                (REP_INFO, 0) => {
                    go.size = u64_at(&d, 2);
                    go.flags = u16::from_be_bytes([d[10], d[11]]);
                }
                (REP_INFO, 3) => go.block = Some((u32_at(&d, 2), u32_at(&d, 6), u32_at(&d, 10))),
                other => panic!("unexpected reply to GO: {other:?}"),
            }
        }
        Ok((Client { s, next: 1 }, go))
    }

    /// Sends a request; returns its reply's error and a read's data.
    pub fn cmd(
        &mut self,
        kind: u16,
        offset: u64,
        len: u32,
        payload: &[u8],
    ) -> io::Result<(u32, Vec<u8>)> {
        self.cmd_flags(0, kind, offset, len, payload)
    }

    /// A request with command flags.
    pub fn cmd_flags(
        &mut self,
        flags: u16,
        kind: u16,
        offset: u64,
        len: u32,
        payload: &[u8],
    ) -> io::Result<(u32, Vec<u8>)> {
        let handle = self.next;
        self.next += 1;
        let mut b = 0x2560_9513u32.to_be_bytes().to_vec();
        b.extend_from_slice(&flags.to_be_bytes());
        b.extend_from_slice(&kind.to_be_bytes());
        b.extend_from_slice(&handle.to_be_bytes());
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(payload);
        self.s.write_all(&b)?;
        let mut r = [0u8; 16];
        self.s.read_exact(&mut r)?;
        assert_eq!(u32_at(&r, 0), 0x6744_6698, "simple reply magic");
        assert_eq!(u64_at(&r, 8), handle, "the reply answers this request");
        let error = u32_at(&r, 4);
        let mut data = Vec::new();
        if kind == CMD_READ && error == 0 {
            data.resize(len as usize, 0);
            self.s.read_exact(&mut data)?;
        }
        Ok((error, data))
    }

    pub fn read(&mut self, offset: u64, len: u32) -> (u32, Vec<u8>) {
        self.cmd(CMD_READ, offset, len, &[]).unwrap()
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) -> u32 {
        self.cmd(CMD_WRITE, offset, data.len() as u32, data)
            .unwrap()
            .0
    }

    pub fn flush(&mut self) -> u32 {
        self.cmd(CMD_FLUSH, 0, 0, &[]).unwrap().0
    }

    pub fn trim(&mut self, offset: u64, len: u32) -> u32 {
        self.cmd(CMD_TRIM, offset, len, &[]).unwrap().0
    }

    /// NBD_CMD_DISC: no reply; the server closes the connection.
    pub fn disconnect(mut self) {
        let mut b = 0x2560_9513u32.to_be_bytes().to_vec();
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&CMD_DISC.to_be_bytes());
        b.extend_from_slice(&[0u8; 20]);
        self.s.write_all(&b).unwrap();
        let mut rest = Vec::new();
        self.s.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty(), "nothing follows a disconnect");
    }
}

/// `flashkv serve ... --socket DIR/s --json`, running; killed if a failing
/// test drops it.
pub struct Server {
    child: Option<Child>,
    pub socket: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Server {
    /// Starts the server and waits until it accepts connections.
    pub fn start(dir: &Path, args: &[&str]) -> Server {
        let socket = dir.join("s");
        let mut child = Command::new(env!("CARGO_BIN_EXE_flashkv"))
            .arg("serve")
            .args(args)
            .arg("--socket")
            .arg(&socket)
            .arg("--json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let began = Instant::now();
        // No probe connection: with --once it would be the one client.
        while !socket.exists() {
            if let Some(status) = child.try_wait().unwrap() {
                let o = child.wait_with_output().unwrap();
                panic!(
                    "serve {args:?} exited ({status}): {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            assert!(
                began.elapsed() < Duration::from_secs(30),
                "serve never listened"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Server {
            child: Some(child),
            socket,
        }
    }

    pub fn signal(&self, sig: i32) {
        let pid = self.child.as_ref().expect("running").id() as i32;
        // SAFETY: a signal to our own child process.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
    }

    /// Kills the server as a power cut would, and reaps it.
    pub fn kill(mut self) {
        self.signal(libc::SIGKILL);
        self.child.take().expect("running").wait().unwrap();
    }

    /// Ends the server with SIGTERM (unless it already ended) and returns
    /// its last report and its stderr.
    pub fn stop(self) -> (serde_json::Value, String) {
        self.signal(libc::SIGTERM);
        self.wait()
    }

    /// Waits for the server to end by itself.
    pub fn wait(mut self) -> (serde_json::Value, String) {
        let child = self.child.take().expect("running");
        let o: Output = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(o.status.success(), "serve failed: {err}");
        let out = String::from_utf8(o.stdout).unwrap();
        let last = out
            .lines()
            .last()
            .unwrap_or_else(|| panic!("no report: {err}"));
        (serde_json::from_str(last).unwrap(), err)
    }
}
