//! flashkv's embedded key-value engine.
//!
//! Layers, top to bottom (seed 001, chapters 4–5, grown into an engine):
//!
//! * [`Db`]: `get` / `put` / `delete` / `update` / `insert_auto` / ordered
//!   `scan` both ways / atomic [`WriteBatch`] / `flush`.
//! * A B+-tree whose nodes are slotted pages (module `btree`, `page`).
//! * A buffer pool with a pluggable replacement [`Policy`] (CLOCK,
//!   [`policies::Clock`], by default; seed 001's [`Lru`], CFLRU, CFDC,
//!   LRU-WSR, FAB and ARC in [`policies`]).
//! * A page store chosen in [`Options`]: [`StoreKind::InPlace`] or
//!   [`StoreKind::InPageLogging`] (erase units of data pages + log sectors,
//!   "bomb" pages, out-of-place merges).
//! * A write-ahead log and double-buffered checkpoints for durability.
//!
//! # Durability
//!
//! A batch is one checksummed, sequence-numbered log record holding the
//! tree's root / page counter / key counter and, for every page it changed,
//! the page's whole image when this is the page's first change since the
//! last checkpoint (or the page was rewritten whole, as by a split), and
//! otherwise just the operations applied to it (insert, update, delete of a
//! cell, a sibling link). Recovery rebuilds every page changed since the
//! checkpoint from its image and the operations after it, never from the
//! page store's copy, which may be torn or newer. The record is written
//! before any of those pages may reach the page store (each buffered page
//! remembers the record holding its latest change, and the log is flushed
//! up to it before the page is written), and it is durable once the device
//! is flushed ([`Db::flush`], or every write with [`OptionsBuilder::sync`]). A
//! batch's pages stay in the buffer pool until its record is written. Page
//! stores only ever overwrite pages whose state the log can rebuild; the
//! in-page-logging store logs each erase-unit map
//! switch (after flushing the new unit) before erasing the old unit, and the
//! in-place store on raw NAND stages each read-erase-rewrite in a scratch
//! unit and logs it before erasing.
//!
//! Opening reads the newest valid checkpoint (two alternating copies),
//! replays the log records of its epoch in order, stopping at the first torn,
//! missing or out-of-sequence one, copies what it found into one record of a
//! new epoch in the other half of the log (so a crash during recovery loses
//! nothing), and checkpoints. With the log off ([`LabOptions::wal`], the
//! `lab` feature) nothing is durable before [`Db::flush`] and a crash may
//! leave the store unreadable: that mode exists to count page-store I/O
//! alone, as seed 001 did.
//!
//! # Device layout
//!
//! `[checkpoint slot A][checkpoint slot B][write-ahead log: two halves][page store]`,
//! each region aligned to the erase unit. Device I/O is counted per region
//! ([`Stats::data_io`], [`Stats::wal_io`], [`Stats::meta_io`]; the in-place
//! store's scratch units count as meta), so page-store I/O can be reported
//! the way seed 001 does. For seed 001's setting use `buffer_pages(1)`,
//! [`LabOptions::index_in_memory`] and, to count the page store alone,
//! [`LabOptions::wal`] off (the `lab` feature).
//!
//! # Request sizes
//!
//! By default every page is read and written on its own. With
//! [`OptionsBuilder::io_profile`] and an [`IoProfile`] (the lab's advisor,
//! `flashkv advise`, derives one from a device profile: its best
//! sequential-read and sequential-write block sizes and seed 002's
//! scan-versus-random breakeven), an unlimited range scan whose range the
//! tree's separators put above the breakeven fraction of the leaves reads
//! the page store in runs of `scan_read_bytes` (whole erase units for
//! in-page logging, log sectors included) instead of leaf by leaf, decoding
//! the leaves it needs without admitting them to the buffer pool; a page in
//! the pool is always taken from there, as it may be newer. Runs are read
//! once each in the order the leaf chain first reaches them, and leaves read
//! ahead wait in memory until the chain reaches them: on a store filled in
//! random key order that is up to the leaves the scan returns. Overflow
//! values are still read page by page. The in-place store writes
//! consecutive new pages of one erase unit in requests of up to
//! `seq_write_bytes`.
//!
//! # Limits
//!
//! A leaf emptied by deletes leaves the tree and its page is reused; a leaf
//! under a quarter full merges with a sibling under the same parent when
//! both fit one page, but internal nodes are never merged (one may be left
//! with a single child) and a leaf whose siblings are too full stays
//! underfull. Writes are serialised by one lock
//! (one writer at a time); point reads and short scans of pages in the buffer pool run
//! in parallel under a shared lock, and so do point reads that miss it on a
//! store in a file (they read the page themselves).
//!
//! With [`OptionsBuilder::sync`] on a file, a commit lets the lock go
//! before its flush and waits for a flush that covers its record (group
//! commit): writers on several threads share flushes, and readers and the
//! next writer run meanwhile. So a reader may see a batch whose writer has
//! not yet been told it is durable; a crash before the flush loses that
//! batch, which was never acknowledged. A writer's own later commits are
//! durable only after it (the log is flushed in order). A batch of any
//! size commits: one whose record does not fit half the log's home
//! ([`OptionsBuilder::wal_size`]) moves the log to a larger region until it
//! fits home again (but on raw NAND). An in-page-logging store holds
//! at most what its erase-unit map in a 1 MiB checkpoint slot describes
//! (about 2.2 GiB with the seed layout).
//!
//! # Checkpoints and write back
//!
//! When the log's half runs short, a *switch* carries the dirty pages into
//! a new epoch as images and writes no page back; a background writer
//! ([`OptionsBuilder::writer`]) writes back the pages changed longest ago
//! once more are dirty than a switch carries without moving the log, so no
//! commit waits for a full write back. Close and [`Db::checkpoint`] write
//! every dirty page back.
//!
//! # Files
//!
//! [`Db::create`], [`Db::open_path`] and [`Db::open_or_create`] keep a
//! store in a file that grows as the store does, hold an exclusive `flock`
//! while open ([`Error::Locked`] for a second opener) and never write a
//! file that does not already hold a store, unless it was missing or empty
//! and creation was asked for. A store's first write is its first
//! checkpoint (in slot 0), so a store whose creation a crash cut short is
//! still recognised as one; [`Db::open`] on a device creates a store only
//! where the first 64 KiB are zeros. After a panic or a device error in the
//! middle of an operation every call answers [`Error::Poisoned`] until the
//! store is reopened.
//!
//! A key that is not there is an answer, not an error: `get` returns
//! `None`, `update` and `delete` return `false`. Damage is
//! [`Error::Corrupt`], naming the [`Structure`] and its [`Location`].
//!
//! ```
//! use flashkv_engine::{Db, Options};
//! let db = Db::open(Box::new(flashkv_device::presets::open("dram-ssd").unwrap()), Options::default()).unwrap();
//! let k = db.insert_auto(b"first").unwrap();
//! db.put(b"x", b"1").unwrap();
//! assert!(db.update(b"x", b"2").unwrap());
//! assert!(!db.update(b"missing", b"v").unwrap());
//! assert_eq!(db.get(&k.to_be_bytes()).unwrap(), Some(b"first".to_vec()));
//! assert_eq!(db.scan_rev(..).unwrap()[0].0, b"x".to_vec());
//! ```

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod btree;
mod buffer;
mod db;
mod error;
mod file;
mod group;
mod io;
mod iter;
mod le;
mod logdev;
mod memtable;
mod options;
mod page;
pub mod policies;
mod policy;
mod redo;
mod store;
mod superblock;
mod wal;

pub use btree::{Shape, MAX_KEY, MAX_VALUE};
pub use buffer::BufferStats;
pub use db::{BatchOp, Db, Devices, Stats, WriteBatch};
pub use error::{Error, Location, Result, Structure};
pub use io::RegionStats;
pub use iter::Range;
pub use options::{
    IoProfile, IplGeometry, LabOptions, Options, OptionsBuilder, Placement, PolicyFactory,
    StoreKind, LOG_SECTOR,
};
pub use page::PageId;
pub use policies::{policy_by_name, POLICY_NAMES};
pub use policy::{FrameInfo, FrameView, Lru, Policy};
pub use store::StoreStats;
pub use superblock::FORMAT_VERSION;
