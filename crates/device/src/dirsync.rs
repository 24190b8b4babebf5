//! A new file's name is durable only once its directory is synced: POSIX
//! promises no more, and a power cut can take a file created and written
//! (its data synced) together with its name. ext4 in ordered mode happens
//! to commit the name with the file's own `fsync`; other file systems and
//! other modes do not (ALICE, Pillai et al., OSDI 2014, found this in
//! LevelDB, SQLite and others).

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Once;

/// Syncs the directory holding `path`, so a file created (or renamed or
/// removed) there keeps its name across a power cut. Where the file
/// system refuses to sync a directory, says so once per process on stderr
/// and returns `Ok`: the name is as durable as that file system makes it.
pub fn sync_parent(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let synced = File::open(dir).and_then(|d| d.sync_all());
    match synced {
        Err(e) if refused(&e) => {
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "flashkv: warning: {} cannot be synced ({e}); a new file's name there may not survive a power cut",
                    dir.display()
                );
            });
            Ok(())
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("syncing {}: {e}", dir.display()),
        )),
        Ok(()) => Ok(()),
    }
}

/// Errors by which a file system says it does not sync directories.
fn refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::EOPNOTSUPP | libc::ENOSYS | libc::EBADF)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_in_a_directory_has_its_directory_synced() {
        let dir = std::env::temp_dir().join(format!("flashkv-dirsync-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(sync_parent(&file).is_ok());
        // A bare name's directory is the current one.
        assert!(sync_parent(Path::new("no-such-file-needed")).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
        // A directory that does not exist is an error naming it.
        let e = sync_parent(&dir.join("f")).unwrap_err();
        assert!(e.to_string().contains("flashkv-dirsync"), "{e}");
    }
}
