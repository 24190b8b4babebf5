//! The one rule for files: a command writes only to a path it created or to
//! a flashkv file it recognises; anything else needs `--force`. Paths are
//! checked before anything is written, a file is only filled when the file
//! system has room, and a failed command removes what it created.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::error::CliError;
use crate::units::human;

/// What a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Nothing yet; its directory exists.
    Missing,
    /// A regular file of this many bytes.
    File(u64),
    BlockDevice,
}

/// Checks that `path` (given with `flag`) can be a file: a directory, a
/// missing parent directory or anything else than a file or block device is
/// a usage error.
pub fn inspect(flag: &str, path: &Path) -> Result<Found, CliError> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Found::File(m.len())),
        Ok(m) if m.file_type().is_block_device() => Ok(Found::BlockDevice),
        Ok(m) if m.is_dir() => Err(usage(format!("{flag} {shown}: is a directory"))),
        Ok(_) => Err(usage(format!(
            "{flag} {shown}: not a regular file or block device"
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = parent(path);
            if dir.is_dir() && on_devtmpfs(dir) {
                // `/dev/sdb` mistyped or absent: a file made there would be
                // taken for the device (and fill the RAM-backed /dev).
                Err(usage(format!(
                    "{flag} {shown}: no such device, and flashkv does not create files in {} (a device directory)",
                    dir.display()
                )))
            } else if dir.is_dir() {
                Ok(Found::Missing)
            } else {
                Err(usage(format!(
                    "{flag} {shown}: directory {} does not exist",
                    dir.display()
                )))
            }
        }
        Err(e) => Err(usage(format!("{flag} {shown}: {e}"))),
    }
}

/// Checks an output directory: it exists, or its parent does (it is then
/// created by the command); a file or a missing parent is a usage error.
pub fn check_out_dir(flag: &str, path: &Path) -> Result<(), CliError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(usage(format!(
            "{flag} {}: exists and is not a directory",
            path.display()
        ))),
        Err(_) if parent(path).is_dir() => Ok(()),
        Err(_) => Err(usage(format!(
            "{flag} {}: directory {} does not exist",
            path.display(),
            parent(path).display()
        ))),
    }
}

/// Whether `dir` is `/dev` or under it, or on a devtmpfs mount: where
/// device nodes live and no file should be created.
pub fn on_devtmpfs(dir: &Path) -> bool {
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return false;
    };
    if dir.starts_with("/dev") {
        return true;
    }
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    mount_fstype(&info, &dir).is_some_and(|t| t == "devtmpfs")
}

/// The file-system type of the mount that holds `dir` (the longest mount
/// point that is a prefix of it), from `/proc/self/mountinfo`'s text.
fn mount_fstype<'a>(mountinfo: &'a str, dir: &Path) -> Option<&'a str> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let point = fields.get(4)?.replace("\\040", " ");
            let dash = fields.iter().position(|f| *f == "-")?;
            let fstype = *fields.get(dash + 1)?;
            dir.starts_with(&point).then_some((point.len(), fstype))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, t)| t)
}

/// The directory a path lives in (`.` for a bare name).
pub fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

pub use flashkv_device::free_space;

/// Refuses to grow `path` by `need` bytes when its file system has less free.
pub fn ensure_room(flag: &str, path: &Path, need: u64) -> Result<(), CliError> {
    let dir = parent(path);
    let free = free_space(dir).map_err(|e| usage(format!("{flag} {}: {e}", path.display())))?;
    if need > free {
        return Err(usage(format!(
            "{flag} {}: needs {} but {} has {} free",
            path.display(),
            human(need),
            dir.display(),
            human(free)
        )));
    }
    Ok(())
}

/// Whether two paths name the same file, existing or not.
pub fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return x.dev() == y.dev() && x.ino() == y.ino();
    }
    match (absolute(a), absolute(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn absolute(p: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(parent(p)).ok()?;
    Some(dir.join(p.file_name()?))
}

/// Files this command created, removed again unless [`Created::keep`] is
/// called: a failed command leaves nothing behind.
#[derive(Default)]
pub struct Created(Vec<PathBuf>);

impl Created {
    pub fn add(&mut self, path: &Path) {
        self.0.push(path.to_path_buf());
    }

    /// The command succeeded: keep everything it created.
    pub fn keep(mut self) {
        self.0.clear();
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        for p in &self.0 {
            match std::fs::remove_file(p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    eprintln!("warning: could not remove {}: {e}", p.display())
                }
                _ => {}
            }
        }
    }
}

fn usage(m: String) -> CliError {
    CliError::Usage(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_classified_before_use() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"abc").unwrap();
        assert_eq!(inspect("--x", &f).ok(), Some(Found::File(3)));
        assert_eq!(
            inspect("--x", &dir.path().join("n")).ok(),
            Some(Found::Missing)
        );
        let msg = |r: Result<Found, CliError>| match r {
            Err(CliError::Usage(m)) => m,
            _ => panic!("not a usage error"),
        };
        assert!(msg(inspect("--x", dir.path())).ends_with("is a directory"));
        let deep = dir.path().join("no/such");
        assert!(msg(inspect("--x", &deep)).ends_with("/no does not exist"));
    }

    #[test]
    fn device_directories_are_recognised() {
        assert!(on_devtmpfs(Path::new("/dev")));
        let dir = tempfile::tempdir().unwrap();
        assert!(!on_devtmpfs(dir.path()));
        let info = "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n\
                    24 22 0:6 / /mnt/my\\040dev rw - devtmpfs devtmpfs rw\n";
        assert_eq!(
            mount_fstype(info, Path::new("/mnt/my dev/x")),
            Some("devtmpfs")
        );
        assert_eq!(mount_fstype(info, Path::new("/mnt/other")), Some("ext4"));
        let msg = match inspect("--path", Path::new("/dev/flashkv-no-such-device")) {
            Err(CliError::Usage(m)) => m,
            _ => panic!("a missing /dev path must be refused"),
        };
        assert!(msg.contains("no such device"), "{msg}");
    }

    #[test]
    fn same_file_sees_through_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let dotted = dir.path().join(".").join("a");
        assert!(same_file(&a, &dotted), "both missing");
        std::fs::write(&a, b"x").unwrap();
        assert!(same_file(&a, &dotted), "both existing");
        assert!(!same_file(&a, &dir.path().join("b")));
    }

    #[test]
    fn free_space_is_checked_and_created_files_are_removed_on_failure() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_space(dir.path()).unwrap();
        assert!(free > 0);
        let p = dir.path().join("big");
        // Twice the free space: other tests free files meanwhile, so
        // `free + 1` may fit by the time it is checked.
        assert!(ensure_room("--path", &p, free.saturating_mul(2)).is_err());
        assert!(ensure_room("--path", &p, 1).is_ok());
        std::fs::write(&p, b"x").unwrap();
        let mut c = Created::default();
        c.add(&p);
        drop(c);
        assert!(!p.exists());
        std::fs::write(&p, b"x").unwrap();
        let mut c = Created::default();
        c.add(&p);
        c.keep();
        assert!(p.exists());
    }
}
