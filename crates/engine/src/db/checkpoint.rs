//! Checkpoints: writing the store's state into a slot and starting a new
//! log epoch, and where the log lives.
//!
//! Two kinds. A *full* checkpoint (close, [`Db::checkpoint`], the end of
//! recovery) writes every dirty page back first, so the new epoch starts
//! empty. A *switch* (the log's half runs short) writes no page back: it
//! carries the dirty pages forward, as images in [`redo::CARRY_RECORD`]s at
//! the start of the new epoch, and then writes the slot. Writing pages back
//! is left to eviction and the background writer (`writer.rs`), which keeps
//! the dirty pages few enough that a carry takes at most half of a half.
//!
//! A batch whose record does not fit a half of the log's home region makes
//! a switch move the log to a larger region at the top of the device (the
//! page store may not grow into it meanwhile); a switch or full checkpoint
//! after which the log fits at home again brings it back, and the region
//! it leaves is trimmed (in a file: cut off).

use super::*;

/// Bytes of a carry record's images at most: bounds its buffer.
const CARRY_PAGES: usize = 256;
/// Room left at least between the pages in use and a log that moved up.
const GROWTH_GAP: u64 = 256 << 20;

impl Core {
    /// Writes checkpoint `seq` of the store as it is now, its log starting
    /// at record `wal_seq`, and makes it the current one.
    pub(super) fn write_checkpoint(&mut self, seq: u64, wal_seq: u64) -> Result<()> {
        // The log that rebuilds the pages written since the last
        // checkpoint is retired with it: they must be on the device.
        self.store.verify(&mut self.disk)?;
        let mut state = Vec::new();
        self.store.encode_state(&mut state);
        Checkpoint {
            seq,
            store: self.store.kind(),
            page_size: self.store.page_size() as u32,
            layout: self.layout,
            root: self.meta.root,
            next_page: self.meta.next_page,
            next_auto: self.meta.next_auto,
            free_head: self.meta.free_head,
            wal_seq,
            log_id: self.log_id,
            store_state: state,
        }
        .write(&mut self.disk)?;
        // The slot is durable, and with it every record before it.
        self.store.checkpointed();
        self.store.release(&mut self.disk)?;
        assert!(
            seq == self.ckpt_seq + 1,
            "checkpoint {seq} follows {}",
            self.ckpt_seq
        );
        self.ckpt_seq = seq;
        self.checkpoints += 1;
        Ok(())
    }

    /// A full checkpoint: every dirty page written back, the slot, and a
    /// new, empty epoch (at home, as nothing needs more room now).
    pub(super) fn checkpoint(&mut self) -> Result<()> {
        if self.read_only {
            // It changed nothing; its dirty pages are those the log of a
            // closed store changed, and they stay in that log.
            return Ok(());
        }
        let dirty = self.pool.dirty_ids();
        if !self.pool.room_to_image(&*self.store, &self.disk, &dirty) {
            // A switch carries their images, which the half cannot take.
            self.switch(0)?;
        }
        self.pool.flush_all(&mut *self.store, &mut self.disk)?;
        // Into the epoch this checkpoint retires: its slot holds the map.
        self.store.log_switches(&mut self.disk)?;
        let Some(mut w) = self.disk.journal.take() else {
            return self.write_checkpoint(self.ckpt_seq + 1, self.wal_seq);
        };
        let epoch = self.ckpt_seq + 1;
        // The new epoch starts with the memtable's pairs, if any.
        let home = self.region_for(self.pairs_carry_bytes(&w));
        let moved = self.move_log(&mut w, epoch, home).and_then(|retired| {
            self.pool.new_epoch();
            let first = w.next_seq;
            self.carry_pairs(&mut w)?;
            Ok((retired, first))
        });
        self.disk.journal = Some(w);
        let (retired, first) = moved?;
        self.wal_seq = first;
        self.write_checkpoint(epoch, first)?;
        self.retire(retired)?;
        debug_assert_eq!(
            self.pool.dirty_len(),
            0,
            "a checkpoint leaves no page dirty"
        );
        Ok(())
    }

    /// A new epoch with `need` bytes free: a switch, or, without the
    /// background writer, a full checkpoint where the log's home half holds
    /// `need` (the seed experiments' engine, whose checkpoints wrote every
    /// dirty page back in page order when the log filled: there is nobody
    /// else to write them but evictions, one at a time).
    pub(super) fn make_room(&mut self, need: u64) -> Result<()> {
        let home = (self.layout.home_start, self.layout.home_len);
        match !self.writer && need <= self.room_in(home) {
            true => self.checkpoint(),
            false => self.switch(need),
        }
    }

    /// A switch: a new epoch with `need` bytes free after the pages it
    /// carries forward, without writing pages back. Where no region the
    /// log can move to holds that, the pages changed longest ago are
    /// written back first (a stall: the background writer fell behind, or
    /// is off).
    pub(super) fn switch(&mut self, need: u64) -> Result<()> {
        if self.read_only || self.disk.journal.is_none() {
            return self.checkpoint();
        }
        let mut region = self.region_for(self.carry_bytes() + need);
        if self.carry_bytes() + need > self.room_in(region) {
            self.stalls += 1;
            self.shed_carry(self.room_in(region).saturating_sub(need))?;
            region = self.region_for(self.carry_bytes() + need);
        }
        self.store.log_switches(&mut self.disk)?;
        let mut w = self.disk.journal.take().expect("the log is open");
        let epoch = self.ckpt_seq + 1;
        let r = self.move_log(&mut w, epoch, region).and_then(|retired| {
            self.pool.new_epoch();
            let first = w.next_seq;
            self.carry(&mut w)?;
            Ok((retired, first))
        });
        self.disk.journal = Some(w);
        let (retired, first) = r?;
        self.wal_seq = first;
        self.write_checkpoint(epoch, first)?;
        self.switches += 1;
        self.retire(retired)
    }

    /// Bytes a new epoch in `region` keeps for records: a half, less a
    /// margin of a sixteenth of the home's half.
    fn room_in(&self, (_, len): (u64, u64)) -> u64 {
        (len / 2).saturating_sub(self.layout.home_len / 32)
    }

    /// Dirty pages the background writer leaves: images filling half of a
    /// half of the largest log the store grows into for them — its home,
    /// or a region of half the buffer pool's bytes if that is larger (so a
    /// store with a large pool defers write back as PostgreSQL's
    /// `max_wal_size` lets it) — the rest of the half being for new records.
    pub(super) fn carry_limit(&self) -> usize {
        let ps = self.store.page_size() as u64;
        let pool = self.pool.capacity() as u64 * ps;
        let budget = self.layout.home_len.max(pool / 2);
        (budget / 4 / (ps + redo::IMAGE_OVERHEAD as u64)) as usize
    }

    /// Log bytes of a record holding one page's image (what a write back
    /// of an unimaged page logs first).
    pub(super) fn image_record_len(&self, w: &Wal) -> u64 {
        w.record_len(redo::IMAGES_HDR + redo::IMAGE_OVERHEAD + self.store.page_size())
    }

    /// Writes back the dirty pages changed longest ago until the carry
    /// takes at most `bytes`, as far as the current half can take their
    /// images.
    fn shed_carry(&mut self, bytes: u64) -> Result<()> {
        let Some(w) = &self.disk.journal else {
            return Ok(());
        };
        let one = self.image_record_len(w);
        let keep = (bytes / one) as usize;
        let excess = self.pool.dirty_len().saturating_sub(keep);
        let n = excess.min((w.remaining() / one) as usize);
        self.pool.clean_oldest(&mut *self.store, &mut self.disk, n)
    }

    /// Bytes the carry records of the dirty pages take at most.
    fn carry_bytes(&self) -> u64 {
        let Some(w) = &self.disk.journal else {
            return 0;
        };
        let per = |n: usize| {
            w.record_len(redo::META_BYTES + n * (self.store.page_size() + redo::IMAGE_OVERHEAD))
        };
        let n = self.pool.dirty_len();
        (n / CARRY_PAGES) as u64 * per(CARRY_PAGES)
            + per(n % CARRY_PAGES)
            + self.pairs_carry_bytes(w)
    }

    /// Appends the tree state and an image of every dirty page, in carry
    /// records of up to [`CARRY_PAGES`] pages, and marks the pages imaged:
    /// a new epoch then holds everything the page store does not.
    pub(super) fn carry(&mut self, w: &mut Wal) -> Result<()> {
        let ids: Vec<PageId> = self.pool.dirty_ids();
        let ps = self.store.page_size();
        for chunk in ids.chunks(CARRY_PAGES) {
            let mut rec = redo::Writer::new(&self.meta, chunk.len() * ps);
            for &id in chunk {
                rec.image(self.pool.peek(id).expect("a dirty page is resident"));
            }
            w.append(&mut self.disk, redo::CARRY_RECORD, &rec.finish())?;
            for &id in chunk {
                self.pool.mark_imaged(id);
            }
        }
        debug_assert_eq!(self.pool.unimaged(), 0, "every dirty page was carried");
        self.carry_pairs(w)
    }

    /// Where a new epoch whose records take `need` bytes goes: the home
    /// region where its half holds them (after a full write back `need`
    /// is 0), else the region the log is in where it does, else a larger
    /// one ([`Core::grown_region`]), else where the log is.
    fn region_for(&self, need: u64) -> (u64, u64) {
        let l = self.layout;
        let (home, here) = ((l.home_start, l.home_len), (l.wal_start, l.wal_len));
        match () {
            _ if need <= self.room_in(home) => home,
            _ if !l.at_home() && need <= self.room_in(here) => here,
            _ => self.grown_region(need + l.home_len / 32).unwrap_or(here),
        }
    }

    /// Moves the log to `region` for `epoch`: the other half of the
    /// region it is in, or another region. Returns the range the old
    /// epoch's records (or the whole region left behind) take, to trim
    /// once the new checkpoint is durable.
    fn move_log(
        &mut self,
        w: &mut Wal,
        epoch: u64,
        (start, len): (u64, u64),
    ) -> Result<(u64, u64)> {
        let l = self.layout;
        if (start, len) == (l.wal_start, l.wal_len) {
            let written = w.written();
            w.reset(epoch);
            return Ok(written);
        }
        w.relocate(start, len, epoch);
        self.set_log_region(start, len)?;
        if self.log_id == 0 && self.layout.at_home() && self.shrink.is_some() {
            // Back home: the file ends with the pages in use again.
            let used = self.store.used(self.meta.next_page).max(l.data_start);
            self.cut_at = Some(round_up(used, u64::from(self.disk.geo.sector_size)));
        }
        Ok((l.wal_start, l.wal_len))
    }

    /// A region for a log whose half holds `want` bytes, clear of the
    /// region the log is in (its epoch is needed until the checkpoint).
    /// On the store's device, above the pages in use with room for as many
    /// again (at least [`GROWTH_GAP`]), so the page store may keep growing
    /// and a file stays about twice its data; else as high as it fits, or
    /// below the region it is in, still leaving the pages room for as many
    /// again: of a size rounded up to a power of two (room to grow into
    /// before the next move), else just the size it needs, before one that
    /// leaves them less (a device too small for both: a log that squeezed
    /// the pages would make the next batch find the store full). On a log
    /// device, after its home. Raw NAND keeps its log at home.
    fn grown_region(&self, want: u64) -> Option<(u64, u64)> {
        let (l, lg) = (self.layout, self.disk.log_geo);
        if lg.program_once {
            return None;
        }
        let align = lg.erase_unit.unwrap_or(u64::from(lg.sector_size));
        let roomy = round_up(want.saturating_mul(2).next_power_of_two(), 2 * align);
        let tight = round_up(want.saturating_mul(2), 2 * align);
        let (end, floor, data, gap) = match self.log_id {
            0 => {
                let used = self.store.used(self.meta.next_page).max(l.data_start);
                let data = used - l.data_start;
                (l.data_start + l.data_len, used, data, data.max(GROWTH_GAP))
            }
            _ => (lg.capacity, l.home_start + l.home_len, 0, 0),
        };
        let here = (l.wal_start, l.wal_start + l.wal_len);
        let low = round_up(floor + gap, align);
        let above = (!l.at_home()).then_some(round_up(here.1, align));
        let place = |len: u64, lowest: u64| {
            let clear =
                |s: u64| s >= lowest && s + len <= end && (s + len <= here.0 || s >= here.1);
            let below = (!l.at_home()).then(|| here.0.checked_sub(len)).flatten();
            let top = end.checked_sub(len);
            [Some(low), above, top, below]
                .map(|s| s.map(|s| s - s % align))
                .into_iter()
                .flatten()
                .find(|&s| clear(s))
                .map(|s| (s, len))
        };
        let roomy_floor = floor.saturating_add(data);
        place(roomy, roomy_floor)
            .or_else(|| place(tight, roomy_floor))
            .or_else(|| place(roomy, floor))
            .or_else(|| place(tight, floor))
    }

    /// The log now lives at `[start, start+len)`: the page store may not
    /// grow into it (nor past it, while it is away from home).
    fn set_log_region(&mut self, start: u64, len: u64) -> Result<()> {
        self.layout.wal_start = start;
        self.layout.wal_len = len;
        if self.log_id == 0 {
            let l = self.layout;
            let room = match l.at_home() {
                true => l.data_len,
                false => start - l.data_start,
            };
            self.store.set_ceiling(room, self.meta.next_page)?;
        }
        Ok(())
    }

    /// Trims `(off, len)` of the log, which the checkpoint just written
    /// retired (stores in files: gives the space back to the file system),
    /// and cuts the file short where the log came home from its end.
    fn retire(&mut self, (off, len): (u64, u64)) -> Result<()> {
        let Some(shrink) = &self.shrink else {
            return Ok(());
        };
        if let Some(at) = self.cut_at.take() {
            return shrink(at).map_err(Error::Io);
        }
        match len > 0 {
            true => self.disk.erase(Region::Wal, off, len),
            false => Ok(()),
        }
    }
}
