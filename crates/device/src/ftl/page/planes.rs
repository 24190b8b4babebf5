//! Multi-plane operations: pages of one die in one row of its planes (page
//! `i` of a block is on plane `i % planes`, row `i / planes`) are read or
//! programmed at once when they are queued together: the pages of one host
//! command, or the pages the data cache destages in one go. A page waits
//! in its die's group until the row is complete, another page of the die
//! breaks the row, another operation needs the die, or the command ends.
//! With one plane every page is issued on its own, as soon as it is queued.

use super::{PageFtl, Slot};
use crate::array::Cost;
use crate::{DeviceStats, Nanos};

/// A page queued for a multi-plane program.
#[derive(Clone, Copy)]
pub(super) struct Program {
    ppn: u32,
    ready: Nanos,
    /// The data cache's copy it destages or writes through, if any.
    slot: Option<Slot>,
}

/// A page queued for a multi-plane read: which piece, for the host.
#[derive(Clone, Copy)]
pub(super) struct Read {
    ppn: u32,
    ready: Nanos,
    bytes: u64,
}

/// What a die has queued.
#[derive(Default)]
pub(super) struct Groups {
    programs: Vec<Program>,
    reads: Vec<Read>,
}

/// Most planes a die has (so a group fits on the stack).
pub(in crate::ftl) const MAX_PLANES: usize = 64;

impl PageFtl {
    /// Whether `ppn` continues the row `last` started.
    fn same_row(&self, last: u32, ppn: u32) -> bool {
        ppn == last + 1 && self.plane(ppn) != 0
    }

    /// Queues a program of `ppn` on die `u` with its data at `t`.
    pub(super) fn queue_program(
        &mut self,
        u: usize,
        ppn: u32,
        t: Nanos,
        slot: Option<Slot>,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) {
        self.flush_reads(u, st, cost);
        let last = self.groups[u].programs.last().map(|p| p.ppn);
        if last.is_some_and(|l| !self.same_row(l, ppn)) {
            self.flush_programs(u, st, cost);
        }
        self.note_queued(u);
        self.groups[u].programs.push(Program {
            ppn,
            ready: t,
            slot,
        });
        if self.plane(ppn) == self.planes - 1 {
            self.flush_programs(u, st, cost);
        }
    }

    /// Queues a read of `bytes` of `ppn` (or of an unwritten page, which
    /// is read on its own) on die `u` from `t`; the data goes to the host.
    pub(super) fn queue_read(
        &mut self,
        u: usize,
        ppn: Option<u32>,
        t: Nanos,
        bytes: u64,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) {
        self.flush_programs(u, st, cost);
        let Some(ppn) = ppn.filter(|_| self.planes > 1) else {
            self.flush_reads(u, st, cost);
            let ready = self.array.read(u, t, bytes, st, cost);
            self.send_to_host(ready, bytes, cost);
            return;
        };
        let g = &self.groups[u].reads;
        let fits = g.last().is_none_or(|r| self.same_row(r.ppn, ppn));
        if !fits {
            self.flush_reads(u, st, cost);
        }
        self.note_queued(u);
        self.groups[u].reads.push(Read {
            ppn,
            ready: t,
            bytes,
        });
        if self.plane(ppn) == self.planes - 1 {
            self.flush_reads(u, st, cost);
        }
    }

    /// Sends `bytes` that are out of the flash at `ready` to the host.
    pub(super) fn send_to_host(&mut self, ready: Nanos, bytes: u64, cost: &mut Cost) {
        let dur = self.front.host_ns(bytes);
        let hs = self.host.book(ready, dur);
        cost.busy(hs, hs + dur);
    }

    /// Remembers that die `u` has something queued.
    fn note_queued(&mut self, u: usize) {
        let g = &self.groups[u];
        if g.programs.is_empty() && g.reads.is_empty() {
            self.queued.push(u);
        }
    }

    /// Issues die `u`'s queued programs as one multi-plane program.
    pub(super) fn flush_programs(&mut self, u: usize, st: &mut DeviceStats, cost: &mut Cost) {
        let n = self.groups[u].programs.len();
        if n == 0 {
            return;
        }
        debug_assert!(n <= self.planes as usize, "a page per plane");
        let ps = self.front.page_size;
        let mut pages = [(0, 0); MAX_PLANES];
        for (i, p) in self.groups[u].programs.iter().enumerate() {
            pages[i] = (p.ready, ps);
        }
        let end = self.array.program_planes(u, &pages[..n], st, cost);
        if let Some(cache) = self.cache.as_mut() {
            for p in self.groups[u].programs.iter().filter_map(|p| p.slot) {
                cache.programmed(p, end);
            }
        }
        self.groups[u].programs.clear();
    }

    /// Issues die `u`'s queued reads as one multi-plane read.
    fn flush_reads(&mut self, u: usize, st: &mut DeviceStats, cost: &mut Cost) {
        let n = self.groups[u].reads.len();
        if n == 0 {
            return;
        }
        debug_assert!(n <= self.planes as usize, "a page per plane");
        let (mut bytes, mut ready) = ([0; MAX_PLANES], [0; MAX_PLANES]);
        let mut t = 0;
        for (i, r) in self.groups[u].reads.iter().enumerate() {
            bytes[i] = r.bytes;
            t = t.max(r.ready);
        }
        self.array
            .read_planes(u, t, &bytes[..n], &mut ready[..n], st, cost);
        for i in 0..n {
            self.send_to_host(ready[i], bytes[i], cost);
        }
        self.groups[u].reads.clear();
    }

    /// Issues what die `u` has queued, before other work on it.
    pub(super) fn flush_die(&mut self, u: usize, st: &mut DeviceStats, cost: &mut Cost) {
        self.flush_reads(u, st, cost);
        self.flush_programs(u, st, cost);
    }

    /// Issues everything queued, at the end of a command or destage round.
    pub(super) fn flush_all(&mut self, st: &mut DeviceStats, cost: &mut Cost) {
        while let Some(u) = self.queued.pop() {
            self.flush_die(u, st, cost);
        }
        debug_assert!(self
            .groups
            .iter()
            .all(|g| g.programs.is_empty() && g.reads.is_empty()));
    }

    /// A page read of die `u` for the controller itself (the rest of a page
    /// written in part, a translation page): its queued work goes first.
    pub(super) fn read_page(
        &mut self,
        u: usize,
        t: Nanos,
        st: &mut DeviceStats,
        cost: &mut Cost,
    ) -> Nanos {
        self.flush_die(u, st, cost);
        self.array.read(u, t, self.front.page_size, st, cost)
    }
}
