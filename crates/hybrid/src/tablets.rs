//! Mapping tables (HeteroDrive §3.5): 4-level radix trees, 9 bits a level,
//! whose nodes are 4 KB tablets. Tablets live in memory up to a limit; beyond
//! it the least recently used one is written to its slot in the SSD's mapping
//! region and loaded back on demand. A tablet's slot number is its identifier.

use flashkv_device::{BlockDevice, Nanos};
use rustc_hash::FxHashMap;

use crate::error::{HybridError, Result};

pub(crate) const FANOUT: usize = 512;
pub(crate) const TABLET_BYTES: u64 = 4096;
/// Keys are 36 bits: four levels of 9.
pub(crate) const KEY_BITS: u32 = 36;
const NIL: u32 = u32::MAX;

/// The SSD and the time cursor tablet swaps are issued at; a lookup that has to
/// load a tablet waits for it, so the cursor moves forward.
pub(crate) struct Io<'a> {
    pub dev: &'a mut dyn BlockDevice,
    pub t: Nanos,
}

struct Tablet {
    entries: Box<[u64; FANOUT]>,
    live: u16,
    dirty: bool,
    prev: u32,
    next: u32,
}

/// The pool of tablets: resident ones with an LRU list, swap slots, counters.
pub(crate) struct Tablets {
    resident: FxHashMap<u32, Tablet>,
    mru: u32,
    lru: u32,
    limit: usize,
    free: Vec<u32>,
    next_slot: u32,
    slots: u32,
    region: u64,
    /// Checksums of swapped-out images, so a damaged slot is an error, not a wrong mapping.
    crcs: FxHashMap<u32, u32>,
    pub loads: u64,
    pub stores: u64,
    /// Loads read twice because the first read failed its checksum.
    pub rereads: u64,
}

impl Tablets {
    /// `region` is the mapping region's byte offset on the SSD, `slots` its size
    /// in tablets, `limit` how many may be resident.
    pub fn new(region: u64, slots: u32, limit: usize) -> Self {
        Tablets {
            resident: FxHashMap::default(),
            mru: NIL,
            lru: NIL,
            limit,
            free: Vec::new(),
            next_slot: 0,
            slots,
            region,
            crcs: FxHashMap::default(),
            loads: 0,
            stores: 0,
            rereads: 0,
        }
    }

    /// Whether every tablet the mapping region can hold fits in memory:
    /// then no tablet is ever written out or read back.
    pub fn never_swaps(&self) -> bool {
        self.limit as u64 > u64::from(self.slots)
    }

    pub fn resident_bytes(&self) -> u64 {
        self.resident.len() as u64 * TABLET_BYTES
    }

    fn unlink(&mut self, id: u32) {
        let (prev, next) = {
            let t = &self.resident[&id];
            (t.prev, t.next)
        };
        match self.resident.get_mut(&prev) {
            Some(p) => p.next = next,
            None => self.mru = next,
        }
        match self.resident.get_mut(&next) {
            Some(n) => n.prev = prev,
            None => self.lru = prev,
        }
    }

    fn push_front(&mut self, id: u32) {
        let old = self.mru;
        if let Some(t) = self.resident.get_mut(&id) {
            t.prev = NIL;
            t.next = old;
        }
        match self.resident.get_mut(&old) {
            Some(o) => o.prev = id,
            None => self.lru = id,
        }
        self.mru = id;
    }

    /// Evicts least recently used tablets until one more fits.
    fn make_room(&mut self, io: &mut Io) -> Result<()> {
        while self.resident.len() >= self.limit && self.lru != NIL {
            let id = self.lru;
            self.unlink(id);
            let t = self
                .resident
                .remove(&id)
                .expect("LRU list holds resident tablets");
            debug_assert!(t.live as usize <= FANOUT);
            if t.dirty {
                let mut img = vec![0u8; TABLET_BYTES as usize];
                for (i, e) in t.entries.iter().enumerate() {
                    img[i * 8..i * 8 + 8].copy_from_slice(&e.to_le_bytes());
                }
                self.crcs.insert(id, crc32c::crc32c(&img));
                let c = io.dev.write_at(io.t, self.slot_offset(id), &img)?;
                io.t = io.t.max(c.end);
                self.stores += 1;
            }
        }
        debug_assert!(self.resident.len() < self.limit || self.lru == NIL);
        Ok(())
    }

    fn slot_offset(&self, id: u32) -> u64 {
        debug_assert!(id < self.slots, "tablet {id} of {}", self.slots);
        self.region + u64::from(id) * TABLET_BYTES
    }

    /// A new, empty, resident tablet.
    pub fn alloc(&mut self, io: &mut Io) -> Result<u32> {
        let id = match self.free.pop() {
            Some(id) => id,
            None if self.next_slot < self.slots => {
                self.next_slot += 1;
                self.next_slot - 1
            }
            None => {
                return Err(HybridError::MappingFull {
                    slots: u64::from(self.slots),
                })
            }
        };
        self.make_room(io)?;
        self.crcs.remove(&id);
        debug_assert!(
            !self.resident.contains_key(&id),
            "tablet {id} allocated twice"
        );
        self.resident.insert(
            id,
            Tablet {
                entries: Box::new([0; FANOUT]),
                live: 0,
                dirty: true,
                prev: NIL,
                next: NIL,
            },
        );
        self.push_front(id);
        Ok(id)
    }

    /// Returns a tablet's slot; its swapped image (if any) is garbage from now on.
    pub fn release(&mut self, id: u32) {
        debug_assert!(id < self.next_slot, "tablet {id} was never allocated");
        if self.resident.contains_key(&id) {
            self.unlink(id);
            self.resident.remove(&id);
        }
        self.crcs.remove(&id);
        self.free.push(id);
    }

    /// Makes `id` resident and most recently used.
    fn ensure(&mut self, io: &mut Io, id: u32) -> Result<()> {
        if self.resident.contains_key(&id) {
            if self.mru != id {
                self.unlink(id);
                self.push_front(id);
            }
            return Ok(());
        }
        self.make_room(io)?;
        let offset = self.slot_offset(id);
        let mut img = vec![0u8; TABLET_BYTES as usize];
        let c = io.dev.read_at(io.t, offset, &mut img)?;
        io.t = io.t.max(c.end);
        let want = self.crcs.get(&id).copied();
        debug_assert!(want.is_some(), "tablet {id} loaded but never stored");
        if want != Some(crc32c::crc32c(&img)) {
            // Read again: a flip on the way does not survive a second read.
            io.t = io.t.max(io.dev.read_at(io.t, offset, &mut img)?.end);
            self.rereads += 1;
        }
        if want != Some(crc32c::crc32c(&img)) {
            return Err(HybridError::Corrupt {
                what: "mapping tablet",
                location: offset,
            });
        }
        let mut entries = Box::new([0u64; FANOUT]);
        for (i, e) in entries.iter_mut().enumerate() {
            *e = u64::from_le_bytes(img[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        }
        let live = entries.iter().filter(|&&e| e != 0).count() as u16;
        debug_assert!(live > 0, "an empty tablet is released, never swapped out");
        self.resident.insert(
            id,
            Tablet {
                entries,
                live,
                dirty: false,
                prev: NIL,
                next: NIL,
            },
        );
        self.push_front(id);
        self.loads += 1;
        Ok(())
    }

    fn entry(&mut self, io: &mut Io, id: u32, i: usize) -> Result<u64> {
        self.ensure(io, id)?;
        Ok(self.resident[&id].entries[i])
    }

    /// Sets entry `i` of `id`; returns how many entries of the tablet are still non-zero.
    fn set_entry(&mut self, io: &mut Io, id: u32, i: usize, v: u64) -> Result<u16> {
        self.ensure(io, id)?;
        let t = self.resident.get_mut(&id).expect("just made resident");
        let old = t.entries[i];
        t.entries[i] = v;
        t.dirty = true;
        match (old == 0, v == 0) {
            (true, false) => t.live += 1,
            (false, true) => t.live -= 1,
            _ => {}
        }
        debug_assert!(t.live as usize <= FANOUT);
        Ok(t.live)
    }
}

fn index(key: u64, level: usize) -> usize {
    debug_assert!(level < 4 && key < 1 << KEY_BITS);
    ((key >> (9 * (3 - level))) & (FANOUT as u64 - 1)) as usize
}

/// One radix tree over the shared tablet pool. Values are non-zero `u64`s;
/// zero means "not mapped". Interior entries hold child slot + 1.
#[derive(Default)]
pub(crate) struct RadixMap {
    root: Option<u32>,
}

impl RadixMap {
    pub fn get(&self, tabs: &mut Tablets, io: &mut Io, key: u64) -> Result<u64> {
        let Some(mut id) = self.root else {
            return Ok(0);
        };
        for level in 0..3 {
            match tabs.entry(io, id, index(key, level))? {
                0 => return Ok(0),
                child => id = (child - 1) as u32,
            }
        }
        tabs.entry(io, id, index(key, 3))
    }

    pub fn set(&mut self, tabs: &mut Tablets, io: &mut Io, key: u64, value: u64) -> Result<()> {
        debug_assert!(value != 0 && key < 1 << KEY_BITS);
        let mut id = match self.root {
            Some(id) => id,
            None => {
                let id = tabs.alloc(io)?;
                self.root = Some(id);
                id
            }
        };
        for level in 0..3 {
            let i = index(key, level);
            id = match tabs.entry(io, id, i)? {
                0 => {
                    let child = tabs.alloc(io)?;
                    tabs.set_entry(io, id, i, u64::from(child) + 1)?;
                    child
                }
                child => (child - 1) as u32,
            };
        }
        tabs.set_entry(io, id, index(key, 3), value)?;
        Ok(())
    }

    /// How many keys are mapped (walks the whole tree).
    pub fn count(&self, tabs: &mut Tablets, io: &mut Io) -> Result<u64> {
        let Some(root) = self.root else {
            return Ok(0);
        };
        let mut level_ids = vec![root];
        for _ in 0..3 {
            let mut next = Vec::new();
            for id in level_ids {
                for i in 0..FANOUT {
                    match tabs.entry(io, id, i)? {
                        0 => {}
                        child => next.push((child - 1) as u32),
                    }
                }
            }
            level_ids = next;
        }
        let mut n = 0;
        for id in level_ids {
            for i in 0..FANOUT {
                n += u64::from(tabs.entry(io, id, i)? != 0);
            }
        }
        Ok(n)
    }

    /// Unmaps `key`, releasing tablets that become empty.
    pub fn clear(&mut self, tabs: &mut Tablets, io: &mut Io, key: u64) -> Result<()> {
        let Some(root) = self.root else {
            return Ok(());
        };
        let mut path = [root; 4];
        for level in 0..3 {
            match tabs.entry(io, path[level], index(key, level))? {
                0 => return Ok(()),
                child => path[level + 1] = (child - 1) as u32,
            }
        }
        let mut level = 3;
        loop {
            if tabs.set_entry(io, path[level], index(key, level), 0)? > 0 {
                return Ok(());
            }
            tabs.release(path[level]);
            if level == 0 {
                self.root = None;
                return Ok(());
            }
            level -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashkv_device::{DeviceSpec, SimDevice};

    fn ssd() -> SimDevice {
        let spec = DeviceSpec::from_toml(
            "capacity = \"64 MiB\"\n[model]\nkind = \"dram\"\nread_overhead_us = 1.0\nwrite_overhead_us = 1.0\nread_mb_per_s = 1000.0\nwrite_mb_per_s = 1000.0\n",
            "t",
        )
        .unwrap();
        SimDevice::new(&spec).unwrap()
    }

    #[test]
    fn swapped_tablets_come_back_intact_and_empty_ones_are_released() {
        let mut dev = ssd();
        let mut io = Io {
            dev: &mut dev,
            t: 0,
        };
        // Four resident tablets at most: a full path, so almost every access swaps.
        let mut tabs = Tablets::new(0, 4096, 4);
        let mut map = RadixMap::default();
        let keys: Vec<u64> = (0..300u64)
            .map(|i| (i * 7_919_777) % (1 << KEY_BITS))
            .collect();
        for (n, &k) in keys.iter().enumerate() {
            map.set(&mut tabs, &mut io, k, n as u64 + 1).unwrap();
        }
        for (n, &k) in keys.iter().enumerate() {
            assert_eq!(map.get(&mut tabs, &mut io, k).unwrap(), n as u64 + 1);
        }
        assert!(tabs.stores > 0 && tabs.loads > 0);
        assert!(tabs.resident_bytes() <= 4 * TABLET_BYTES);
        assert!(io.t > 0, "swaps cost SSD time");
        for &k in &keys {
            map.clear(&mut tabs, &mut io, k).unwrap();
        }
        assert!(map.root.is_none());
        assert_eq!(tabs.free.len() as u32, tabs.next_slot);
        assert_eq!(map.get(&mut tabs, &mut io, keys[0]).unwrap(), 0);
    }

    #[test]
    fn a_full_mapping_region_is_an_error() {
        let mut dev = ssd();
        let mut io = Io {
            dev: &mut dev,
            t: 0,
        };
        let mut tabs = Tablets::new(0, 5, 16);
        let mut map = RadixMap::default();
        map.set(&mut tabs, &mut io, 0, 1).unwrap();
        let e = map.set(&mut tabs, &mut io, 1 << 30, 1).unwrap_err();
        assert!(matches!(e, HybridError::MappingFull { slots: 5 }), "{e}");
    }
}
