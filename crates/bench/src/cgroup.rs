//! A memory limit for one engine's process: a cgroup of its own under this
//! process's memory cgroup (v1 `memory.limit_in_bytes` or v2
//! `memory.max`), which bounds its page cache as well as its heap, so
//! engines that rely on the OS page cache (LMDB, SQLite) see the same
//! memory as those with a cache of their own.

use std::path::{Path, PathBuf};

/// One cgroup, removed when dropped.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
    v2: bool,
}

/// This process's memory cgroup directory, and whether it is cgroup v2.
fn own_memory_cgroup() -> Result<(PathBuf, bool), String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next(), f.next(), f.next());
        let path = path.unwrap_or("/").trim_start_matches('/');
        if controllers.is_some_and(|c| c.split(',').any(|c| c == "memory")) {
            return Ok((Path::new("/sys/fs/cgroup/memory").join(path), false));
        }
    }
    let unified = text.lines().find_map(|l| l.strip_prefix("0::"));
    match unified {
        Some(path) => {
            let dir = Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
            let ctl = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
            if ctl.split_whitespace().any(|c| c == "memory") {
                Ok((dir, true))
            } else {
                Err("the memory controller is not enabled for this cgroup".into())
            }
        }
        None => Err("no memory cgroup in /proc/self/cgroup".into()),
    }
}

impl Cgroup {
    /// A new cgroup named `name` limited to `bytes`, or why there cannot be
    /// one (not root, no memory controller, a read-only cgroup file system).
    pub fn create(name: &str, bytes: u64) -> Result<Cgroup, String> {
        let (parent, v2) = own_memory_cgroup()?;
        if v2 {
            // Children get the memory controller only if the parent hands it on.
            let ctl = parent.join("cgroup.subtree_control");
            let on = std::fs::read_to_string(&ctl).unwrap_or_default();
            if !on.split_whitespace().any(|c| c == "memory") {
                std::fs::write(&ctl, "+memory").map_err(|e| format!("{}: {e}", ctl.display()))?;
            }
        }
        let dir = parent.join(name);
        std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let cg = Cgroup { dir, v2 };
        let limit = cg.file(if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        });
        std::fs::write(&limit, bytes.to_string())
            .map_err(|e| format!("{}: {e}", limit.display()))?;
        let set = cg.read_u64(if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        });
        // v1 rounds the limit down to whole pages.
        if set.is_none_or(|s| s > bytes || s + 4096 < bytes) {
            return Err(format!("{} did not take the limit", limit.display()));
        }
        Ok(cg)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn read_u64(&self, name: &str) -> Option<u64> {
        std::fs::read_to_string(self.file(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// The file a process writes its pid to, to join.
    pub fn procs(&self) -> PathBuf {
        self.file("cgroup.procs")
    }

    /// The most memory the cgroup's processes and page cache held.
    pub fn peak(&self) -> Option<u64> {
        self.read_u64(if self.v2 {
            "memory.peak"
        } else {
            "memory.max_usage_in_bytes"
        })
    }

    /// Processes the kernel killed for memory in this cgroup.
    pub fn oom_kills(&self) -> Option<u64> {
        let name = if self.v2 {
            "memory.events"
        } else {
            "memory.oom_control"
        };
        let text = std::fs::read_to_string(self.file(name)).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse().ok())
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is `procs`.
pub fn join(procs: &Path) -> Result<(), String> {
    std::fs::write(procs, std::process::id().to_string())
        .map_err(|e| format!("cannot join {}: {e}", procs.display()))
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Its processes have exited; what page cache it still holds moves
        // to the parent.
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            eprintln!("warning: cannot remove {}: {e}", self.dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_takes_its_limit_or_says_why_not() {
        let name = format!("flashkv-bench-test-{}", std::process::id());
        match Cgroup::create(&name, 96 << 20) {
            Ok(cg) => {
                assert!(cg.procs().ends_with("cgroup.procs"));
                assert_eq!(cg.oom_kills().unwrap_or(0), 0);
                assert!(cg.dir.is_dir());
                let dir = cg.dir.clone();
                drop(cg);
                assert!(!dir.exists());
            }
            Err(why) => {
                assert!(!why.is_empty());
                eprintln!("no cgroup here: {why}");
            }
        }
    }
}
