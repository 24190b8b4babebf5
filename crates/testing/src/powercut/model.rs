//! What a power cut keeps: the file system as reads see it, the part of it
//! an `fsync` has made durable, and the changes in between.
//!
//! The model, stricter than ext4's ordered mode in three ways:
//! * a new name (create, rename, unlink) is durable only once its
//!   directory is synced (ext4 commits it with the file's own `fsync`);
//! * unsynced changes are lost in any subset, not in journal order;
//! * a kept write may lose any of its 512-byte sectors (ext4 keeps data
//!   blocks whole, 4 KiB).
//!
//! Looser in one: `fdatasync` is `fsync` (ext4's also writes a new length,
//! but not a changed mtime; nothing here reads times).

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};

use rand::rngs::SmallRng;
use rand::Rng;

/// The root directory's inode (FUSE's number for it).
pub const ROOT: u64 = 1;
/// The grain a kept write may be torn at.
const SECTOR: u64 = 512;

/// What a power cut drops of the changes no sync has covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// All of them: the disk as the last syncs left it.
    All,
    /// Each change, independently, with even odds.
    Some,
    /// As [`Loss::Some`], and each kept write keeps only some of its sectors.
    Torn,
}

/// A file's bytes or a directory's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    File(File),
    Dir(BTreeMap<OsString, u64>),
}

/// Bytes of a file's chunk: a file holds only the chunks written.
const CHUNK: u64 = 4096;

/// A sparse file: its length, and the chunks written (the rest reads as
/// zeros), so a store whose log sits near its 64 MiB end costs what it
/// wrote, not its length, to keep and to copy at a cut.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct File {
    len: u64,
    chunks: BTreeMap<u64, Box<[u8]>>,
}

impl File {
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Up to `size` bytes from `at` (fewer past the end).
    pub fn read(&self, at: u64, size: u64) -> Vec<u8> {
        let end = at.saturating_add(size).min(self.len);
        if end <= at {
            return Vec::new();
        }
        let mut out = vec![0; (end - at) as usize];
        for (&c, data) in self.chunks.range(at / CHUNK..end.div_ceil(CHUNK)) {
            let (from, to) = ((c * CHUNK).max(at), ((c + 1) * CHUNK).min(end));
            let src = &data[(from - c * CHUNK) as usize..(to - c * CHUNK) as usize];
            out[(from - at) as usize..(to - at) as usize].copy_from_slice(src);
        }
        out
    }

    fn write(&mut self, at: u64, data: &[u8]) {
        let end = at + data.len() as u64;
        let mut pos = at;
        while pos < end {
            let c = pos / CHUNK;
            let to = ((c + 1) * CHUNK).min(end);
            let chunk = self
                .chunks
                .entry(c)
                .or_insert_with(|| vec![0; CHUNK as usize].into());
            let within = (pos - c * CHUNK) as usize;
            chunk[within..within + (to - pos) as usize]
                .copy_from_slice(&data[(pos - at) as usize..(to - at) as usize]);
            pos = to;
        }
        self.len = self.len.max(end);
    }

    fn set_len(&mut self, len: u64) {
        if len < self.len {
            // What lay past the new end reads as zeros if the file grows again.
            self.chunks.retain(|&c, _| c * CHUNK < len);
            if let Some(last) = self.chunks.get_mut(&(len / CHUNK)) {
                last[(len % CHUNK) as usize..].fill(0);
            }
        }
        self.len = len;
    }
}

/// A change no sync has covered yet.
#[derive(Debug, Clone)]
enum Change {
    Write {
        ino: u64,
        at: u64,
        data: Vec<u8>,
    },
    SetLen {
        ino: u64,
        len: u64,
    },
    /// A name for a new file or directory (`dir` is that node's kind).
    Link {
        parent: u64,
        name: OsString,
        ino: u64,
        dir: bool,
    },
    Unlink {
        parent: u64,
        name: OsString,
    },
    Rename {
        from: (u64, OsString),
        to: (u64, OsString),
    },
}

impl Change {
    /// Whether a sync of `ino` (a file's data or a directory's names) covers it.
    fn synced_by(&self, ino: u64) -> bool {
        match self {
            Change::Write { ino: i, .. } | Change::SetLen { ino: i, .. } => *i == ino,
            Change::Link { parent, .. } | Change::Unlink { parent, .. } => *parent == ino,
            Change::Rename { from, to } => from.0 == ino || to.0 == ino,
        }
    }
}

/// A file system's nodes by inode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    nodes: HashMap<u64, Node>,
}

impl Tree {
    fn empty() -> Tree {
        Tree {
            nodes: HashMap::from([(ROOT, Node::Dir(BTreeMap::new()))]),
        }
    }

    pub fn node(&self, ino: u64) -> Option<&Node> {
        self.nodes.get(&ino)
    }

    /// The inode `name` names in directory `parent`.
    pub fn child(&self, parent: u64, name: &OsStr) -> Option<u64> {
        match self.nodes.get(&parent) {
            Some(Node::Dir(d)) => d.get(name).copied(),
            _ => None,
        }
    }

    fn dir(&mut self, ino: u64) -> Option<&mut BTreeMap<OsString, u64>> {
        match self.nodes.get_mut(&ino) {
            Some(Node::Dir(d)) => Some(d),
            _ => None,
        }
    }

    /// A file's bytes, created empty where this tree lacks the file (its
    /// data was synced before its name, or the other way round).
    fn file(&mut self, ino: u64) -> Option<&mut File> {
        match self.nodes.entry(ino).or_insert(Node::File(File::default())) {
            Node::File(f) => Some(f),
            Node::Dir(_) => None,
        }
    }

    /// Applies `c`; a change whose target a lost change would have made
    /// (a rename of a name never kept) does nothing.
    fn apply(&mut self, c: &Change) {
        match c {
            Change::Write { ino, at, data } => {
                if let Some(f) = self.file(*ino) {
                    f.write(*at, data);
                }
            }
            Change::SetLen { ino, len } => {
                if let Some(f) = self.file(*ino) {
                    f.set_len(*len);
                }
            }
            Change::Link {
                parent,
                name,
                ino,
                dir,
            } => {
                let node = if *dir {
                    Node::Dir(BTreeMap::new())
                } else {
                    Node::File(File::default())
                };
                self.nodes.entry(*ino).or_insert(node);
                if let Some(d) = self.dir(*parent) {
                    d.insert(name.clone(), *ino);
                }
            }
            Change::Unlink { parent, name } => {
                if let Some(d) = self.dir(*parent) {
                    d.remove(name);
                }
            }
            Change::Rename { from, to } => {
                let Some(ino) = self.dir(from.0).and_then(|d| d.remove(&from.1)) else {
                    return;
                };
                if let Some(d) = self.dir(to.0) {
                    d.insert(to.1.clone(), ino);
                }
            }
        }
    }

    /// Drops the nodes no name reaches (an unsynced file's data, an
    /// unlinked file's) as `fsck` would.
    fn collect(&mut self) {
        let mut seen = vec![ROOT];
        let mut i = 0;
        while i < seen.len() {
            if let Some(Node::Dir(d)) = self.nodes.get(&seen[i]) {
                seen.extend(d.values().copied());
            }
            i += 1;
        }
        self.nodes.retain(|ino, _| seen.contains(ino));
    }
}

/// The file system's state: what reads see, what is durable, and the
/// changes between them in the order they were made.
#[derive(Debug, Clone)]
pub struct Disk {
    now: Tree,
    durable: Tree,
    pending: Vec<Change>,
    next_ino: u64,
}

impl Default for Disk {
    fn default() -> Disk {
        Disk {
            now: Tree::empty(),
            durable: Tree::empty(),
            pending: Vec::new(),
            next_ino: ROOT + 1,
        }
    }
}

impl Disk {
    /// The tree reads see.
    pub fn now(&self) -> &Tree {
        &self.now
    }

    /// Changes made since their files' or directories' last sync.
    pub fn unsynced(&self) -> usize {
        self.pending.len()
    }

    fn change(&mut self, c: Change) {
        self.now.apply(&c);
        self.pending.push(c);
    }

    pub fn write(&mut self, ino: u64, at: u64, data: &[u8]) {
        self.change(Change::Write {
            ino,
            at,
            data: data.to_vec(),
        });
    }

    pub fn set_len(&mut self, ino: u64, len: u64) {
        self.change(Change::SetLen { ino, len });
    }

    /// A new file or directory named `name` in `parent`; returns its inode.
    pub fn create(&mut self, parent: u64, name: &OsStr, dir: bool) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        let name = name.to_os_string();
        self.change(Change::Link {
            parent,
            name,
            ino,
            dir,
        });
        ino
    }

    pub fn unlink(&mut self, parent: u64, name: &OsStr) {
        self.change(Change::Unlink {
            parent,
            name: name.to_os_string(),
        });
    }

    pub fn rename(&mut self, from: (u64, &OsStr), to: (u64, &OsStr)) {
        let (from, to) = ((from.0, from.1.to_os_string()), (to.0, to.1.to_os_string()));
        self.change(Change::Rename { from, to });
    }

    /// `fsync` of `ino`: its data (a file) or its names (a directory) are durable.
    pub fn sync(&mut self, ino: u64) {
        let (synced, rest): (Vec<Change>, Vec<Change>) =
            self.pending.drain(..).partition(|c| c.synced_by(ino));
        for c in &synced {
            self.durable.apply(c);
        }
        self.pending = rest;
    }

    /// Power is cut: the durable tree plus what `loss` keeps of the unsynced
    /// changes becomes the file system, as it reads after a restart.
    pub fn cut(&mut self, loss: Loss, rng: &mut SmallRng) {
        let mut kept = std::mem::take(&mut self.durable);
        for c in std::mem::take(&mut self.pending) {
            match (loss, c) {
                (Loss::All, _) => {}
                (_, _) if rng.gen_bool(0.5) => {}
                (Loss::Torn, Change::Write { ino, at, data }) => {
                    for part in torn(ino, at, &data, rng) {
                        kept.apply(&part);
                    }
                }
                (_, c) => kept.apply(&c),
            }
        }
        kept.collect();
        self.now = kept.clone();
        self.durable = kept;
    }
}

/// The parts of a write of `data` at `at` to `ino` that a torn write
/// keeps: each 512-byte sector (aligned in the file) with even odds.
fn torn(ino: u64, at: u64, data: &[u8], rng: &mut SmallRng) -> Vec<Change> {
    let end = at + data.len() as u64;
    let mut parts = Vec::new();
    let mut from = at;
    while from < end {
        let to = ((from / SECTOR + 1) * SECTOR).min(end);
        if rng.gen_bool(0.5) {
            let data = data[(from - at) as usize..(to - at) as usize].to_vec();
            parts.push(Change::Write {
                ino,
                at: from,
                data,
            });
        }
        from = to;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn bytes(d: &Disk, parent: u64, name: &str) -> Option<Vec<u8>> {
        let ino = d.now().child(parent, OsStr::new(name))?;
        match d.now().node(ino)? {
            Node::File(f) => Some(f.read(0, f.len())),
            Node::Dir(_) => None,
        }
    }

    #[test]
    fn a_file_synced_without_its_directory_loses_its_name() {
        let mut d = Disk::default();
        let f = d.create(ROOT, OsStr::new("f"), false);
        d.write(f, 0, b"hello");
        d.sync(f);
        let mut kept = d.clone();
        kept.cut(Loss::All, &mut SmallRng::seed_from_u64(0));
        assert_eq!(bytes(&kept, ROOT, "f"), None, "the name was never synced");
        d.sync(ROOT);
        d.write(f, 5, b" world");
        d.cut(Loss::All, &mut SmallRng::seed_from_u64(0));
        assert_eq!(bytes(&d, ROOT, "f").as_deref(), Some(&b"hello"[..]));
        assert_eq!(d.unsynced(), 0);
    }

    #[test]
    fn a_synced_removal_stays_removed_and_an_unsynced_one_may_not() {
        let mut d = Disk::default();
        let f = d.create(ROOT, OsStr::new("f"), false);
        d.write(f, 0, b"x");
        d.sync(f);
        d.sync(ROOT);
        d.unlink(ROOT, OsStr::new("f"));
        let mut lost = d.clone();
        lost.cut(Loss::All, &mut SmallRng::seed_from_u64(0));
        assert_eq!(bytes(&lost, ROOT, "f").as_deref(), Some(&b"x"[..]));
        d.sync(ROOT);
        d.cut(Loss::All, &mut SmallRng::seed_from_u64(0));
        assert_eq!(bytes(&d, ROOT, "f"), None);
    }

    #[test]
    fn a_torn_write_keeps_whole_sectors_only() {
        for seed in 0..50 {
            let mut d = Disk::default();
            let f = d.create(ROOT, OsStr::new("f"), false);
            d.sync(ROOT);
            d.write(f, 0, &[7; 4096]);
            d.cut(Loss::Torn, &mut SmallRng::seed_from_u64(seed));
            let got = bytes(&d, ROOT, "f").expect("the name was synced");
            assert!(
                got.len() <= 4096 && got.len() % 512 == 0,
                "seed {seed}: {}",
                got.len()
            );
            for s in got.chunks(512) {
                assert!(
                    s == [0; 512] || s == [7; 512],
                    "seed {seed}: a sector torn inside"
                );
            }
        }
    }

    #[test]
    fn a_sparse_file_reads_zeros_where_nothing_was_written() {
        let mut f = File::default();
        f.write(10_000, b"abc");
        assert_eq!(f.len(), 10_003);
        assert_eq!(f.read(9_998, 10), vec![0, 0, b'a', b'b', b'c']);
        assert!(f.read(20_000, 10).is_empty(), "nothing past the end");
        assert_eq!(f.chunks.len(), 1, "one chunk written");
        f.set_len(10_001);
        f.set_len(20_000);
        assert_eq!(
            f.read(10_000, 3),
            vec![b'a', 0, 0],
            "a cut end reads zeros once regrown"
        );
        f.set_len(0);
        assert!(f.is_empty() && f.chunks.is_empty());
    }
}
