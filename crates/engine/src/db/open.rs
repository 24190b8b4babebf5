//! Opening a store: recognising (or creating) it, planning a new one's
//! layout, and the page store its checkpoint describes.

use super::*;

impl Core {
    /// Opens the store on `device`. `create`: a blank device gets a new
    /// store.
    /// `file`: for a store in a file, the file's length and how to cut it short.
    pub(super) fn open(
        device: Box<dyn BlockDevice>,
        log: Option<Box<dyn BlockDevice>>,
        opts: Options,
        mode: Mode,
        file: Option<(u64, Shrink)>,
    ) -> Result<Core> {
        let (file_len, shrink) = match file {
            Some((len, shrink)) => (Some(len), Some(shrink)),
            None => (None, None),
        };
        let mut disk = Disk::new(device, log);
        let (ckpt, fresh) = Self::recognise(&mut disk, &opts, mode == Mode::Create)?;
        let store = Self::open_store(&ckpt, &disk, file_len)?;
        let created = ckpt.seq == 0;
        let l = ckpt.layout;
        let log_sector = u64::from(disk.log_geo.sector_size);
        let mut wal = Wal::new(l.wal_start, l.wal_len, log_sector, ckpt.wal_seq, ckpt.seq);
        // Checkpoint 0 has no log; a store made just now has no next epoch.
        let mut records = match created {
            true => Vec::new(),
            false => wal.recover(&mut disk, close::is_end_mark)?,
        };
        // The marks of a store closed or dropped replay as nothing.
        let marked = records.last().is_some_and(close::is_end_mark);
        while records.last().is_some_and(close::is_end_mark) {
            records.pop();
        }
        let next = match fresh {
            true => Next::Nothing,
            false => wal.next_epoch(&mut disk)?,
        };
        let read_only = mode == Mode::ReadOnly;
        let mut core = Core::new(disk, store, &ckpt, &opts, read_only);
        if read_only
            && (created || !records.is_empty() && !core.may_resume(&records, marked, &next))
        {
            // Recovery writes; a reader cannot, as in SQLite.
            return Err(Error::NeedsRecovery);
        }
        core.shrink = shrink;
        match read_only {
            true => core.read_log(records, &next)?,
            false => core.start(records, &next, wal, opts.lab.wal, created, marked)?,
        }
        Ok(core)
    }

    /// The page store checkpoint `ckpt` describes, once its layout is
    /// checked against the device and, for a store in a file, the file
    /// (`file_len` bytes) is checked to hold every page it covers.
    pub(super) fn open_store(
        ckpt: &Checkpoint,
        disk: &Disk,
        file_len: Option<u64>,
    ) -> Result<Box<dyn PageStore>> {
        let l = ckpt.layout;
        if !Self::layout_fits(&l, ckpt.log_id, disk) {
            return Err(corrupt(
                Structure::Checkpoint,
                Location::Offset((ckpt.seq % 2) * l.slot_len),
                "its layout does not fit the device",
            ));
        }
        let mut store = Self::make_store(ckpt, disk)?;
        if ckpt.log_id == 0 && !l.at_home() {
            // The log lies at the top of the page store's region.
            store
                .set_ceiling(l.wal_start - l.data_start, ckpt.next_page)
                .map_err(|_| {
                    corrupt(
                        Structure::Checkpoint,
                        Location::Offset((ckpt.seq % 2) * l.slot_len),
                        "its log overlaps the pages in use",
                    )
                })?;
        }
        if let Some(len) = file_len {
            // A checkpoint is written after every page it covers.
            if len < store.extent(ckpt.next_page) {
                return Err(corrupt(
                    Structure::File,
                    Location::Offset(len),
                    "the file ends before the pages its checkpoint covers: truncated",
                ));
            }
        }
        Ok(store)
    }

    /// Whether a checkpoint's layout fits the device: slots, the log's home
    /// (before the page store, or on the log device) and the log itself
    /// (at home, or larger and above the page store's start, or above its
    /// home on a log device), in whole halves of the log's sectors.
    fn layout_fits(l: &Layout, log_id: u64, disk: &Disk) -> bool {
        let end = |a: u64, n: u64| a.checked_add(n);
        let (Some(wal_end), Some(home_end), Some(data_end)) = (
            end(l.wal_start, l.wal_len),
            end(l.home_start, l.home_len),
            end(l.data_start, l.data_len),
        ) else {
            return false;
        };
        let halves = 2 * u64::from(disk.log_geo.sector_size);
        let ordered = l.data_start >= 2 * l.slot_len
            && l.data_len > 0
            && l.home_len > 0
            && l.wal_len % halves == 0
            && l.home_len % halves == 0
            && data_end <= disk.geo.capacity;
        let home = match log_id {
            0 => l.home_start >= 2 * l.slot_len && home_end <= l.data_start,
            _ => home_end <= disk.log_geo.capacity,
        };
        let away = l.wal_len > l.home_len
            && match log_id {
                0 => l.wal_start >= l.data_start && wal_end <= data_end,
                _ => l.wal_start >= home_end && wal_end <= disk.log_geo.capacity,
            };
        ordered && home && (l.at_home() || away)
    }

    /// The core of a store opened at checkpoint `ckpt`, before recovery.
    pub(super) fn new(
        disk: Disk,
        mut store: Box<dyn PageStore>,
        ckpt: &Checkpoint,
        opts: &Options,
        read_only: bool,
    ) -> Core {
        if let Some(io) = opts.io {
            store.set_write_size(io.seq_write_bytes);
        }
        let frames = opts.pool.frames(ckpt.page_size);
        let policy = (opts.policy)(frames);
        Core {
            pool: BufferPool::new(frames, policy, opts.lab.index_in_memory),
            meta: Meta {
                root: ckpt.root,
                next_page: ckpt.next_page,
                next_auto: ckpt.next_auto,
                free_head: ckpt.free_head,
            },
            layout: ckpt.layout,
            ckpt_seq: ckpt.seq,
            wal_seq: ckpt.wal_seq,
            sync: opts.sync,
            append_fill: opts.append_fill,
            io: opts.io,
            shrink: None,
            cut_at: None,
            reader: None,
            log_id: ckpt.log_id,
            read_only,
            poisoned: false,
            commits: 0,
            checkpoints: 0,
            switches: 0,
            stalls: 0,
            log_need: 0,
            batch_from: 0,
            writer: opts.writer,
            writer_inline: false,
            close_checkpoint: opts.close_checkpoint,
            // Sized for the larger budget: a memtable read back from the log
            // may be there whatever this device's budget is.
            memtable: Arc::new(Memtable::new(opts.memtable_bytes(true))),
            // A reader writes nothing: its memtable is the one it replays.
            memtable_cap: match read_only {
                true => 0,
                false => opts.memtable_bytes(disk.sync.outside()),
            },
            draining: false,
            drains: 0,
            store,
            disk,
        }
    }

    /// Makes an opened store ready for writing: replays `records`, checks
    /// that no later checkpoint was lost (`next`: the next epoch's first
    /// records), and either resumes their epoch (a close left it,
    /// `marked`: [`Core::may_resume`]) or copies them into a new epoch,
    /// creates the tree of a new store, and checkpoints.
    pub(super) fn start(
        &mut self,
        records: Vec<Logged>,
        next: &Next,
        mut wal: Wal,
        log: bool,
        created: bool,
        marked: bool,
    ) -> Result<()> {
        // The memtable takes writes only where the log can rebuild it and a
        // close may leave it there (reads of one replayed go on regardless).
        if !(log && self.resumable()) {
            self.memtable_cap = 0;
        }
        let recovered = !records.is_empty();
        let resumable = recovered && log && self.may_resume(&records, marked, next);
        self.recover(records)?;
        self.check_next_epoch(next)?;
        // A store that overwrites pages keeps nothing in a frame that its
        // log does not: a rollback may leave pages for the log to rebuild.
        self.pool.rebuild_from_log(log && self.store.overwrites());
        if resumable && self.pool.dirty_len() <= self.dirty_limit() {
            self.wal_seq = wal.next_seq;
            self.disk.journal = Some(wal);
            return self.guard(Core::resume);
        }
        if recovered {
            self.guard(|c| c.relog(&mut wal))?;
        }
        self.wal_seq = wal.next_seq;
        if log {
            self.disk.journal = Some(wal);
        }
        if created {
            // The new root is written by the checkpoint below, as no batch
            // logged it: it must not stay pinned.
            self.guard(|c| c.tree().create())?;
            self.pool.unpin(&mut *self.store, &mut self.disk)?;
        }
        // Replayed pages go to the page store and the log starts over in a
        // new epoch, so records a crash left after a gap are never replayed.
        self.guard(Core::checkpoint)?;
        self.pool.unpin(&mut *self.store, &mut self.disk)
    }

    /// The newest checkpoint on the device; on a blank device (when
    /// `create`) the first checkpoint of a new store, written before
    /// anything else so that a store whose creation a crash interrupted is
    /// still recognised as one. True with a checkpoint written just now.
    pub(super) fn recognise(
        disk: &mut Disk,
        opts: &Options,
        create: bool,
    ) -> Result<(Checkpoint, bool)> {
        let geo = disk.geo;
        let align = geo.erase_unit.unwrap_or(u64::from(geo.sector_size));
        let slot_len = round_up(SLOT_BYTES, align);
        match Checkpoint::read_latest(disk, slot_len)? {
            Some(c) => {
                if let Some(k) = opts.store.filter(|k| *k != c.store) {
                    return Err(Error::StoreMismatch {
                        stored: c.store.name(),
                        requested: k.name(),
                    });
                }
                match (c.log_id, disk.log.is_some()) {
                    (0, false) => {}
                    (0, true) => {
                        return Err(Error::WrongLogDevice(
                            "the store keeps its log on its own device: open it without a log device",
                        ))
                    }
                    (_, false) => {
                        return Err(Error::WrongLogDevice(
                            "the store keeps its log on a device of its own: open it with Db::open_with_log",
                        ))
                    }
                    (id, true) => logdev::check_header(disk, id)?,
                }
                Ok((c, false))
            }
            None if create => {
                let c = Self::plan(opts, disk, slot_len)?;
                if c.log_id != 0 {
                    logdev::write_header(disk, c.log_id)?;
                }
                c.write(disk)?;
                Ok((c, true))
            }
            None => Err(Error::NotAStore),
        }
    }

    /// The page store a checkpoint describes.
    pub(super) fn make_store(ckpt: &Checkpoint, disk: &Disk) -> Result<Box<dyn PageStore>> {
        let (geo, l) = (disk.geo, ckpt.layout);
        let sector = u64::from(geo.sector_size);
        Ok(match ckpt.store {
            StoreKind::InPlace | StoreKind::TwoDevice(_)
                if !(512..=65536).contains(&u64::from(ckpt.page_size))
                    || u64::from(ckpt.page_size) % sector != 0 =>
            {
                return Err(corrupt(
                    Structure::Checkpoint,
                    Location::Offset((ckpt.seq % 2) * l.slot_len),
                    "its page size does not fit the device's sectors",
                ));
            }
            StoreKind::InPlace => {
                let ps = u64::from(ckpt.page_size);
                let unit = geo.erase_unit.unwrap_or(EMULATED_UNIT).max(ps);
                Box::new(InPlace::new(
                    l.data_start,
                    l.data_len,
                    ps as usize,
                    unit,
                    geo.program_once,
                ))
            }
            StoreKind::InPageLogging(g) => {
                Box::new(Ipl::new(g, l.data_start, l.data_len, &ckpt.store_state)?)
            }
            StoreKind::TwoDevice(placement) => {
                let Some(t) = disk.dev.tiers() else {
                    return Err(invalid(
                        "store",
                        "a two-device store lives on a device pair (flashkv_device::PairDevice)",
                    ));
                };
                let span = Span {
                    region: l.data_start..l.data_start + l.data_len,
                    fast: t.fast,
                    slow: t.slow,
                };
                Box::new(Tiered::new(
                    placement,
                    span,
                    ckpt.page_size as usize,
                    EMULATED_UNIT,
                    Tiered::max_slots(l.slot_len),
                    &ckpt.store_state,
                )?)
            }
        })
    }

    /// Where a new store's log goes: (start, length, where the page store
    /// then starts on the store's device, log device id). On the store's
    /// device the log follows the checkpoint slots; on a log device of its
    /// own it follows the header in the first erase unit (or sector).
    pub(super) fn plan_log(
        opts: &Options,
        disk: &Disk,
        slot_len: u64,
    ) -> Result<(u64, u64, u64, u64)> {
        let lg = disk.log_geo;
        let align = lg.erase_unit.unwrap_or(u64::from(lg.sector_size));
        let room = opts
            .max_size
            .unwrap_or(disk.geo.capacity)
            .min(disk.geo.capacity);
        let want = round_up(opts.wal_bytes(room), 2 * align);
        debug_assert!(want >= 64 << 10, "a log of at least 64 KiB");
        if disk.log.is_none() {
            return Ok((2 * slot_len, want, 2 * slot_len + want, 0));
        }
        let room = lg.capacity.saturating_sub(align);
        let len = want.min(room - room % (2 * align));
        if len < 64 << 10 {
            return Err(invalid(
                "wal_size",
                format!(
                    "a log device of {} bytes is too small for a log (need 64 KiB after its header)",
                    lg.capacity
                ),
            ));
        }
        Ok((align, len, 2 * slot_len, logdev::new_id()))
    }

    /// The page size of a new store, if the device can hold its pages.
    pub(super) fn plan_page_size(opts: &Options, kind: StoreKind, geo: Geometry) -> Result<u32> {
        let sector = u64::from(geo.sector_size);
        let page_size = match kind {
            StoreKind::InPlace | StoreKind::TwoDevice(_) => opts.in_place_page_size(),
            StoreKind::InPageLogging(g) => {
                if u64::from(LOG_SECTOR) % sector != 0 {
                    return Err(invalid(
                        "store",
                        format!("in-page logging needs sectors of at most {LOG_SECTOR} bytes; the device has {sector}"),
                    ));
                }
                match geo.erase_unit {
                    Some(eu) if eu != g.unit_size() => {
                        return Err(invalid(
                            "store",
                            format!(
                                "an in-page logging unit of {} bytes does not match the device's {eu}-byte erase unit",
                                g.unit_size()
                            ),
                        ))
                    }
                    _ => g.page_size,
                }
            }
        };
        if u64::from(page_size) % sector != 0 {
            return Err(invalid(
                "page_size",
                format!("{page_size} bytes is not a multiple of the {sector}-byte sector"),
            ));
        }
        match (kind, geo.erase_unit) {
            (StoreKind::InPlace, Some(eu)) if eu % u64::from(page_size) != 0 => Err(invalid(
                "page_size",
                format!("{page_size} bytes does not divide the {eu}-byte erase unit"),
            )),
            _ => Ok(page_size),
        }
    }

    /// The layout and first checkpoint of a new store.
    pub(super) fn plan(opts: &Options, disk: &Disk, slot_len: u64) -> Result<Checkpoint> {
        let geo = disk.geo;
        let align = geo.erase_unit.unwrap_or(u64::from(geo.sector_size));
        let kind = opts.store.unwrap_or(StoreKind::InPlace);
        let page_size = Self::plan_page_size(opts, kind, geo)?;
        let (wal_start, wal_len, data_start, log_id) = Self::plan_log(opts, disk, slot_len)?;
        let end = match kind {
            // A pair's pages go on both devices, whatever a file may grow to.
            StoreKind::TwoDevice(_) => geo.capacity,
            _ => opts.max_size.unwrap_or(geo.capacity).min(geo.capacity),
        };
        let mut end = end - end % align;
        if let StoreKind::InPageLogging(g) = kind {
            // The erase-unit map must fit a checkpoint slot: a store holds
            // at most that many units (about 2.2 GiB with the seed layout).
            let units = (slot_len - 4096) / (25 + u64::from(g.log_sectors));
            end = end.min(data_start + units * g.unit_size());
        }
        if end <= data_start {
            return Err(invalid(
                "max_size",
                format!(
                    "{end} bytes of the device is too small for a store (it needs more than {data_start})",
                ),
            ));
        }
        Ok(Checkpoint {
            seq: 0,
            store: kind,
            page_size,
            layout: Layout {
                slot_len,
                wal_start,
                wal_len,
                data_start,
                data_len: end - data_start,
                home_start: wal_start,
                home_len: wal_len,
            },
            root: 0,
            next_page: 0,
            next_auto: 0,
            free_head: NO_PAGE,
            wal_seq: 1,
            log_id,
            store_state: Vec::new(),
        })
    }
}
