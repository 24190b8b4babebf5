//! What the experiment needs from the machine: root (to mount FUSE file
//! systems for another user and to run PostgreSQL as `postgres`), the
//! `postgres` user, /dev/fuse, PostgreSQL's programs, libnbd's nbdcopy and
//! nbdfuse, fuse2fs, mkfs.ext4, and the `flashkv` program that serves the
//! drives. What is missing is listed, so the experiment can say why it
//! skipped.

use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Where everything was found.
#[derive(Debug, Clone)]
pub struct Host {
    pub flashkv: PathBuf,
    /// PostgreSQL's bin folder (initdb, postgres, pg_ctl).
    pub pg_bin: PathBuf,
    pub pgbench: PathBuf,
    pub psql: PathBuf,
    pub nbdcopy: PathBuf,
    pub nbdfuse: PathBuf,
    pub fuse2fs: PathBuf,
    pub mkfs: PathBuf,
    /// The `postgres` user's uid and gid.
    pub uid: u32,
    pub gid: u32,
}

/// `name` in $PATH (or the usual sbin folders, which a non-login root shell
/// may lack).
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// PostgreSQL's server programs: $FLASHKV_PG_BIN, else the newest
/// /usr/lib/postgresql/N/bin holding initdb (Debian's layout), else the
/// folder of an `initdb` in $PATH.
pub fn pg_bin() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("FLASHKV_PG_BIN") {
        let d = PathBuf::from(d);
        return is_executable(&d.join("initdb")).then_some(d);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            is_executable(&bin.join("initdb")).then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, b)| b)
        .or_else(|| which("initdb").and_then(|p| p.parent().map(Path::to_path_buf)))
}

/// The program that serves drives: $FLASHKV_BIN, else this program when it
/// is `flashkv`, else `flashkv` in $PATH.
fn flashkv() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FLASHKV_BIN") {
        return Some(PathBuf::from(p));
    }
    std::env::current_exe()
        .ok()
        .filter(|p| p.file_name().is_some_and(|n| n == "flashkv"))
        .or_else(|| which("flashkv"))
}

/// The uid and gid of `user`.
fn user(name: &str) -> Option<(u32, u32)> {
    let c = CString::new(name).ok()?;
    // SAFETY: getpwnam returns null or a pointer to a static record, read
    // at once (the lab does not call it from two threads).
    let pw = unsafe { libc::getpwnam(c.as_ptr()) };
    if pw.is_null() {
        return None;
    }
    // SAFETY: checked non-null above.
    let pw = unsafe { &*pw };
    Some((pw.pw_uid, pw.pw_gid))
}

impl Host {
    /// Everything found, or what is missing (one item per line's worth).
    pub fn find() -> Result<Host, Vec<String>> {
        let mut missing = Vec::new();
        let mut need = |what: Option<PathBuf>, says: &str| {
            if what.is_none() {
                missing.push(says.to_string());
            }
            what.unwrap_or_default()
        };
        let pg_bin = need(
            pg_bin(),
            "PostgreSQL's server programs (initdb, postgres; Debian: postgresql; or set FLASHKV_PG_BIN)",
        );
        let host = Host {
            flashkv: need(flashkv(), "the flashkv program (set FLASHKV_BIN)"),
            pgbench: need(
                which("pgbench")
                    .or_else(|| Some(pg_bin.join("pgbench")).filter(|p| is_executable(p))),
                "pgbench (Debian: postgresql-client or postgresql-contrib)",
            ),
            psql: need(
                which("psql").or_else(|| Some(pg_bin.join("psql")).filter(|p| is_executable(p))),
                "psql (Debian: postgresql-client)",
            ),
            nbdcopy: need(which("nbdcopy"), "nbdcopy (Debian: libnbd-bin)"),
            nbdfuse: need(which("nbdfuse"), "nbdfuse (Debian: nbdfuse)"),
            fuse2fs: need(which("fuse2fs"), "fuse2fs (Debian: fuse2fs)"),
            mkfs: need(which("mkfs.ext4"), "mkfs.ext4 (Debian: e2fsprogs)"),
            pg_bin,
            uid: 0,
            gid: 0,
        };
        // SAFETY: geteuid only reads the process's credentials.
        if unsafe { libc::geteuid() } != 0 {
            missing.push(
                "root (to mount FUSE file systems for the postgres user and run PostgreSQL as it)"
                    .into(),
            );
        }
        if !Path::new("/dev/fuse").exists() {
            missing.push("/dev/fuse (FUSE)".into());
        }
        let (uid, gid) = user("postgres").unwrap_or_else(|| {
            missing.push("the postgres user (Debian: postgresql)".into());
            (0, 0)
        });
        if missing.is_empty() {
            Ok(Host { uid, gid, ..host })
        } else {
            Err(missing)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_finds_a_shell_and_not_nonsense() {
        assert!(which("sh").is_some());
        assert!(which("no-such-program-flashkv").is_none());
    }
}
