//! The data cache's bookkeeping: which logical pages DRAM holds and in
//! what state. A page written into it is dirty until its destage program is
//! booked, then flushing until that program ends, then clean; clean pages
//! are evicted least recently used first when a page needs room. Dirty
//! pages wait in a queue per die, in the order they were written.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use rustc_hash::FxHashMap;

use crate::Nanos;

/// A version of a cached page: a write over a page whose destage is already
/// booked makes a new version, so the older program does not clean it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::ftl) struct Slot {
    pub lpn: u32,
    /// Unique over the cache's life (the stamp of the write that made it).
    version: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In DRAM from `ready`, not yet booked for flash.
    Dirty { ready: Nanos },
    /// Its program is booked and ends at `end`.
    Flushing,
    /// On flash as well.
    Clean,
}

struct Page {
    version: u64,
    stamp: u64,
    state: State,
}

pub(super) struct WriteCache {
    /// Pages DRAM holds.
    capacity: usize,
    pages: FxHashMap<u32, Page>,
    /// LRU stamp -> page, for clean pages only, oldest first.
    clean: BTreeMap<u64, u32>,
    /// Programs booked: (end, page), earliest first (stale versions skipped).
    flushing: BinaryHeap<Reverse<(Nanos, u32, u64)>>,
    /// Dirty pages per die, oldest first (stale versions skipped).
    queues: Vec<VecDeque<Slot>>,
    stamp: u64,
}

/// What a write into the cache did.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Wrote {
    /// Over a dirty copy not yet booked: nothing more to program.
    Absorbed,
    /// A new dirty page (or version), queued on its die.
    Queued(Slot),
}

impl WriteCache {
    pub fn new(capacity: usize, dies: usize) -> Self {
        assert!(capacity > 0 && dies > 0, "a cache of pages for some dies");
        WriteCache {
            capacity,
            pages: FxHashMap::default(),
            clean: BTreeMap::new(),
            flushing: BinaryHeap::new(),
            queues: (0..dies).map(|_| VecDeque::new()).collect(),
            stamp: 0,
        }
    }

    /// Whether DRAM holds `lpn` (in any state); a read of it is a use.
    pub fn read_hit(&mut self, lpn: u32) -> bool {
        self.stamp += 1;
        let stamp = self.stamp;
        let Some(p) = self.pages.get_mut(&lpn) else {
            return false;
        };
        if p.state == State::Clean {
            self.clean.remove(&p.stamp);
            self.clean.insert(stamp, lpn);
        }
        p.stamp = stamp;
        true
    }

    /// Whether DRAM holds `lpn`.
    pub fn contains(&self, lpn: u32) -> bool {
        self.pages.contains_key(&lpn)
    }

    /// Programs that ended by `now` leave their pages clean.
    pub fn retire(&mut self, now: Nanos) {
        while let Some(&Reverse((end, lpn, version))) = self.flushing.peek() {
            if end > now {
                break;
            }
            self.flushing.pop();
            if let Some(p) = self.pages.get_mut(&lpn) {
                if p.version == version && p.state == State::Flushing {
                    p.state = State::Clean;
                    self.clean.insert(p.stamp, lpn);
                }
            }
        }
    }

    /// Makes room for `lpn` if it needs a page: true if it is cached, or a
    /// page is free, or a clean page could be evicted for it.
    pub fn room_for(&mut self, lpn: u32) -> bool {
        if self.pages.contains_key(&lpn) || self.pages.len() < self.capacity {
            return true;
        }
        let Some((_, old)) = self.clean.pop_first() else {
            return false;
        };
        let gone = self.pages.remove(&old);
        debug_assert!(gone.is_some_and(|p| p.state == State::Clean));
        true
    }

    /// When the earliest booked program ends, if one is booked.
    pub fn next_end(&mut self) -> Option<Nanos> {
        while let Some(&Reverse((end, lpn, version))) = self.flushing.peek() {
            let live = self
                .pages
                .get(&lpn)
                .is_some_and(|p| p.version == version && p.state == State::Flushing);
            if live {
                return Some(end);
            }
            self.flushing.pop();
        }
        None
    }

    /// When the last booked program ends, if one is booked.
    pub fn last_end(&self) -> Option<Nanos> {
        self.flushing
            .iter()
            .filter(|Reverse((_, lpn, v))| {
                self.pages
                    .get(lpn)
                    .is_some_and(|p| p.version == *v && p.state == State::Flushing)
            })
            .map(|Reverse((end, _, _))| *end)
            .max()
    }

    /// Writes `lpn` (on die `die`) into DRAM, in from `ready`. The caller
    /// made room for it.
    pub fn write(&mut self, lpn: u32, die: usize, ready: Nanos) -> Wrote {
        self.stamp += 1;
        let stamp = self.stamp;
        let p = self.pages.entry(lpn).or_insert(Page {
            version: 0,
            stamp,
            state: State::Clean,
        });
        if let State::Dirty { ready: r } = &mut p.state {
            *r = (*r).max(ready);
            p.stamp = stamp;
            return Wrote::Absorbed;
        }
        if p.state == State::Clean {
            self.clean.remove(&p.stamp);
        }
        p.version = stamp;
        p.stamp = stamp;
        p.state = State::Dirty { ready };
        let slot = Slot {
            lpn,
            version: p.version,
        };
        self.queues[die].push_back(slot);
        debug_assert!(self.pages.len() <= self.capacity, "room was made first");
        Wrote::Queued(slot)
    }

    /// The oldest dirty page of `die` and when its data is in DRAM.
    pub fn head(&mut self, die: usize) -> Option<(Slot, Nanos)> {
        while let Some(&s) = self.queues[die].front() {
            match self.pages.get(&s.lpn) {
                Some(p) if p.version == s.version => {
                    if let State::Dirty { ready } = p.state {
                        return Some((s, ready));
                    }
                }
                _ => {}
            }
            self.queues[die].pop_front();
        }
        None
    }

    /// The head of `die` is being destaged: its program is booked.
    pub fn booked(&mut self, die: usize, s: Slot) {
        let front = self.queues[die].pop_front();
        debug_assert_eq!(front, Some(s), "the head is destaged");
        if let Some(p) = self.pages.get_mut(&s.lpn) {
            p.state = State::Flushing;
        }
    }

    /// Writes `lpn` through: in DRAM and programmed at once.
    pub fn write_through(&mut self, lpn: u32) -> Slot {
        self.stamp += 1;
        let stamp = self.stamp;
        let p = self.pages.entry(lpn).or_insert(Page {
            version: 0,
            stamp,
            state: State::Clean,
        });
        if p.state == State::Clean {
            self.clean.remove(&p.stamp);
        }
        debug_assert!(!matches!(p.state, State::Dirty { .. }), "no dirty page");
        p.version = stamp;
        p.stamp = stamp;
        p.state = State::Flushing;
        Slot {
            lpn,
            version: p.version,
        }
    }

    /// The program of `s` ends at `end`.
    pub fn programmed(&mut self, s: Slot, end: Nanos) {
        self.flushing.push(Reverse((end, s.lpn, s.version)));
    }

    /// Drops `lpn` (trimmed): a dirty copy is never programmed.
    pub fn drop_page(&mut self, lpn: u32) {
        if let Some(p) = self.pages.remove(&lpn) {
            if p.state == State::Clean {
                self.clean.remove(&p.stamp);
            }
        }
    }

    /// Whether any page is dirty.
    pub fn has_dirty(&mut self) -> bool {
        (0..self.queues.len()).any(|d| self.head(d).is_some())
    }

    /// The clean list and the table agree, and DRAM holds no more than it can.
    pub fn check(&self) -> std::result::Result<(), String> {
        let clean = self
            .pages
            .values()
            .filter(|p| p.state == State::Clean)
            .count();
        let listed = self.clean.iter().all(|(s, l)| {
            self.pages
                .get(l)
                .is_some_and(|p| p.stamp == *s && p.state == State::Clean)
        });
        if clean != self.clean.len() || !listed || self.pages.len() > self.capacity {
            return Err("the data cache's clean list and table disagree".into());
        }
        Ok(())
    }
}
