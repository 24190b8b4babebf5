//! Hard disk model: a seek curve over cylinder distance, rotational position
//! from the virtual clock, media transfer, command overhead, a read-ahead
//! track buffer and a write-back cache destaged shortest-positioning-first.
//!
//! A track holds what passes under the head in one revolution at its zone's
//! media rate ([`zones`]: outer zones hold more sectors per track, so the rate
//! falls from LBA 0 at the outer edge to the end of the range at the inner
//! edge). Logical sectors run along a track, then across the heads of a
//! cylinder, then to the next cylinder. Each track starts a few sectors later
//! than the one before (skew), so a transfer that crosses a track loses only
//! the head switch, not a revolution.
//!
//! The drive has two timelines: the host side (command overhead, interface
//! transfer; what [`Model::busy_until`] reports) and the mechanism (seeks,
//! rotation, media transfer). Cached writes complete on the host side and
//! are destaged by the mechanism whenever it would otherwise be idle;
//! destages are computed lazily, when the next command arrives.

use serde::{Deserialize, Serialize};

use crate::sim::{transfer_ns, us};
use crate::spec::{de_size, require, require_multiple};
use crate::{Completion, DeviceStats, Geometry, Model, Nanos, QueuedIo, Result};
use zones::Zone;

mod zones;

/// Parameters of a hard disk. Only `rpm`, `seek_avg_ms` and `media_mb_per_s`
/// are required; the rest default to a typical drive.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HddParams {
    /// Spindle speed, revolutions per minute.
    pub rpm: f64,
    /// Mean read seek over uniformly random pairs of cylinders, ms.
    pub seek_avg_ms: f64,
    /// Media transfer rate within a track, MB/s, at the outer edge (LBA 0);
    /// with `rpm` it sets the bytes per track there.
    pub media_mb_per_s: f64,
    /// Media rate at the inner edge (the end of the LBA range), MB/s; the
    /// zones step the rate down evenly from `media_mb_per_s` to it. Required
    /// with `zones` > 1, refused with one zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner_mb_per_s: Option<f64>,
    /// Recording zones, each the same number of cylinders (1 to 256).
    #[serde(default = "default_zones")]
    pub zones: u32,
    /// Host sector size (default 512).
    #[serde(default = "default_sector", deserialize_with = "de_size")]
    pub sector_size: u64,
    /// The whole disk's size when the device is a partition of it starting
    /// at LBA 0 (the outer edge): the zones, cylinders and seek curve are
    /// the whole disk's, and the host sees only `capacity` bytes of it, so
    /// random requests within a small partition make short seeks (a short
    /// stroke) while the spindle still turns at full revolution time.
    /// Default: the device is the whole disk.
    #[serde(
        default,
        deserialize_with = "de_disk_capacity",
        skip_serializing_if = "Option::is_none"
    )]
    pub disk_capacity: Option<u64>,
    /// Recording surfaces; with the track size and capacity it sets the
    /// number of cylinders.
    #[serde(default = "default_heads")]
    pub heads: u32,
    /// Seek to the adjacent cylinder (also the head switch time), ms.
    /// Default: a tenth of `seek_avg_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_track_ms: Option<f64>,
    /// Seek across every cylinder, ms. Default: 2.2 × `seek_avg_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seek_full_ms: Option<f64>,
    /// Extra settling a write needs after moving to another cylinder, µs.
    #[serde(default)]
    pub write_settle_us: f64,
    /// Command processing (controller and host stack) per command, µs.
    #[serde(default = "default_overhead")]
    pub overhead_us: f64,
    /// Host interface rate, MB/s.
    #[serde(default = "default_interface")]
    pub interface_mb_per_s: f64,
    /// Writes the write-back cache holds; 0 makes every write go to the media
    /// before it completes.
    #[serde(default = "default_write_cache")]
    pub write_cache_entries: u32,
    /// Read segments kept in the drive buffer; a read fills the rest of its
    /// track into its segment while the mechanism is idle. 0 disables it.
    #[serde(default = "default_segments")]
    pub read_ahead_segments: u32,
}

fn default_sector() -> u64 {
    512
}
fn de_disk_capacity<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<u64>, D::Error> {
    de_size(d).map(Some)
}
fn default_heads() -> u32 {
    4
}
fn default_zones() -> u32 {
    1
}
fn default_overhead() -> f64 {
    100.0
}
fn default_interface() -> f64 {
    150.0
}
fn default_write_cache() -> u32 {
    16
}
fn default_segments() -> u32 {
    8
}

/// Seek time over a distance of `d` cylinders: `a + b·√d` below the knee,
/// `c + e·d` above it, joined with equal value and slope. All in ns.
#[derive(Debug, Clone, Copy)]
struct SeekCurve {
    a: f64,
    b: f64,
    c: f64,
    e: f64,
    knee: f64,
}

impl SeekCurve {
    /// The curve through `seek(1) = t2t` and `seek(cyl-1) = full` with its
    /// knee at `knee` (1 ≤ knee ≤ cyl-1, cyl ≥ 3).
    fn with_knee(t2t: f64, full: f64, cyl: u64, knee: f64) -> SeekCurve {
        debug_assert!(
            cyl >= 3 && knee >= 1.0 && knee <= (cyl - 1) as f64,
            "knee {knee} of {cyl}"
        );
        let last = (cyl - 1) as f64;
        let sk = knee.sqrt();
        let b = (full - t2t) / (sk / 2.0 + last / (2.0 * sk) - 1.0);
        let a = t2t - b;
        SeekCurve {
            a,
            b,
            c: a + b * sk / 2.0,
            e: b / (2.0 * sk),
            knee,
        }
    }

    fn ns(&self, d: u64) -> Nanos {
        if d == 0 {
            return 0;
        }
        let x = d as f64;
        let t = if x < self.knee {
            self.a + self.b * x.sqrt()
        } else {
            self.c + self.e * x
        };
        debug_assert!(
            t.is_finite() && t > 0.0,
            "a seek of {d} cylinders takes {t} ns"
        );
        t.round() as Nanos
    }

    /// Fits the knee so that the mean seek over uniformly random pairs of
    /// cylinders is `avg` (times in ns). Distance d ≥ 1 between two uniform
    /// cylinders has probability 2(C-d)/C²; the mean rises with the knee, so
    /// the crossing is found by scanning integer knees (keeping running sums
    /// of the sqrt region) and bisecting inside the bracketing interval.
    fn fit(t2t: f64, full: f64, avg: f64, cyl: u64) -> Result<SeekCurve> {
        if cyl > EXACT_FIT_CYLINDERS {
            return SeekCurve::fit_large(t2t, full, avg, cyl);
        }
        let cf = cyl as f64;
        let w = |d: u64| 2.0 * (cf - d as f64) / (cf * cf);
        let (mut tot0, mut tot1) = (0.0, 0.0);
        for d in 1..cyl {
            tot0 += w(d);
            tot1 += w(d) * d as f64;
        }
        // Mean for knee k given sums over the sqrt region d < k.
        let mean = |k: f64, s0: f64, sh: f64, s1: f64| {
            let c = SeekCurve::with_knee(t2t, full, cyl, k);
            c.a * s0 + c.b * sh + c.c * (tot0 - s0) + c.e * (tot1 - s1)
        };
        let lowest = mean(1.0, 0.0, 0.0, 0.0);
        let (mut s0, mut sh, mut s1) = (0.0, 0.0, 0.0);
        let mut highest = lowest;
        for k in 2..cyl {
            let d = k - 1;
            s0 += w(d);
            sh += w(d) * (d as f64).sqrt();
            s1 += w(d) * d as f64;
            highest = mean(k as f64, s0, sh, s1);
            if avg >= lowest && highest >= avg {
                let (mut lo, mut hi) = ((k - 1) as f64, k as f64);
                for _ in 0..60 {
                    let mid = (lo + hi) / 2.0;
                    if mean(mid, s0, sh, s1) < avg {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                let c = SeekCurve::with_knee(t2t, full, cyl, hi);
                debug_assert!(c.ns(1) <= c.ns(cyl - 1), "seeks grow with distance");
                return Ok(c);
            }
        }
        Err(unreachable(t2t, full, avg, cyl, lowest, highest))
    }

    /// [`SeekCurve::fit`] in time independent of the cylinder count: the
    /// sums over distances come from closed forms (Euler–Maclaurin for the
    /// square roots), and the knee is found by bisection, since the mean
    /// rises with it.
    fn fit_large(t2t: f64, full: f64, avg: f64, cyl: u64) -> Result<SeekCurve> {
        let cf = cyl as f64;
        // Sums of w(d)·{1, √d, d} over d in 1..=m, w(d) = 2(C-d)/C².
        let sums = |m: u64| {
            let x = m as f64;
            let s0 = cf * x - x * (x + 1.0) / 2.0;
            let s1 = cf * x * (x + 1.0) / 2.0 - x * (x + 1.0) * (2.0 * x + 1.0) / 6.0;
            let sh = cf * power_sum(m, 0.5) - power_sum(m, 1.5);
            let k = 2.0 / (cf * cf);
            (k * s0, k * sh, k * s1)
        };
        let (tot0, _, tot1) = sums(cyl - 1);
        let mean = |k: f64, (s0, sh, s1): (f64, f64, f64)| {
            let c = SeekCurve::with_knee(t2t, full, cyl, k);
            c.a * s0 + c.b * sh + c.c * (tot0 - s0) + c.e * (tot1 - s1)
        };
        // Knee k takes distances d < k into the square-root region.
        let at = |k: u64| mean(k as f64, sums(k - 1));
        let (lowest, highest) = (mean(1.0, (0.0, 0.0, 0.0)), at(cyl - 1));
        if !(lowest..=highest).contains(&avg) {
            return Err(unreachable(t2t, full, avg, cyl, lowest, highest));
        }
        // The first integer knee whose mean reaches avg.
        let (mut lo, mut hi) = (1u64, cyl - 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if at(mid) >= avg {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let region = sums(hi - 1);
        let (mut a, mut b) = ((hi - 1) as f64, hi as f64);
        for _ in 0..60 {
            let mid = (a + b) / 2.0;
            if mean(mid, region) < avg {
                a = mid;
            } else {
                b = mid;
            }
        }
        let c = SeekCurve::with_knee(t2t, full, cyl, b);
        debug_assert!(c.ns(1) <= c.ns(cyl - 1), "seeks grow with distance");
        Ok(c)
    }
}

/// Above this many cylinders the seek curve is fitted in closed form
/// ([`SeekCurve::fit_large`]) instead of by summing over every distance, so
/// setting up a drive of any capacity takes microseconds. Every preset is below it.
const EXACT_FIT_CYLINDERS: u64 = 1 << 20;

/// Σ_{d=1..m} d^p: summed below 10^4 terms, else by Euler–Maclaurin
/// (relative error far below 1e-12 there).
fn power_sum(m: u64, p: f64) -> f64 {
    if m < 10_000 {
        return (1..=m).map(|d| (d as f64).powf(p)).sum();
    }
    // ζ(-1/2) and ζ(-3/2).
    let zeta = if p == 0.5 {
        -0.207_886_224_977_354_57
    } else {
        debug_assert_eq!(p, 1.5);
        -0.025_485_201_889_833_03
    };
    let x = m as f64;
    zeta + x.powf(p + 1.0) / (p + 1.0) + x.powf(p) / 2.0 + p * x.powf(p - 1.0) / 12.0
        - p * (p - 1.0) * (p - 2.0) * x.powf(p - 3.0) / 720.0
}

fn unreachable(
    t2t: f64,
    full: f64,
    avg: f64,
    cyl: u64,
    lowest: f64,
    highest: f64,
) -> crate::DeviceError {
    crate::DeviceError::Spec(format!(
        "hdd: seek_avg_ms {:.3} is not reachable with seek_track_ms {:.3} and seek_full_ms {:.3} \
         on {cyl} cylinders (reachable {:.3}..{:.3} ms); adjust the seek times or the capacity",
        avg / 1e6,
        t2t / 1e6,
        full / 1e6,
        lowest / 1e6,
        highest / 1e6
    ))
}

/// A run of sectors.
#[derive(Debug, Clone, Copy, Default)]
struct Extent {
    lba: u64,
    n: u64,
}

impl Extent {
    fn covers(&self, s: u64, e: u64) -> bool {
        self.lba <= s && e <= self.lba + self.n
    }
}

/// A write in the write-back cache, in the buffer since `ready`.
#[derive(Debug, Clone, Copy)]
struct Cached {
    ext: Extent,
    ready: Nanos,
    /// Where its first sector is, kept so shortest-positioning-first over
    /// the cache needs no divisions.
    at: Spot,
}

/// A sector's track and the start of its rotational slot (ns into a revolution).
#[derive(Debug, Clone, Copy)]
struct Spot {
    track: u64,
    slot_ns: Nanos,
}

/// Read-ahead in progress: the head reads sectors `[from, to)` (to the end
/// of the track, of `spt` sectors) into segment `seg`, starting at `t0` with
/// sector `from` under the head at rotational slot `slot0`.
#[derive(Debug, Clone, Copy)]
struct Ahead {
    seg: usize,
    from: u64,
    to: u64,
    t0: Nanos,
    slot0: u64,
    spt: u64,
}

struct Hdd {
    geometry: Geometry,
    sector: u64,
    /// Sectors of the whole disk (the host sees `geometry.capacity` of them).
    sectors: u64,
    /// Recording zones, outermost (LBA 0) first.
    zones: Vec<Zone>,
    heads: u64,
    /// Revolution, ns.
    rev: Nanos,
    seek: SeekCurve,
    track_switch: Nanos,
    settle: Nanos,
    overhead: Nanos,
    interface_mb_per_s: f64,

    /// Track (cylinder × heads + head) the head is on.
    track: u64,
    /// When the mechanism finishes the work it has started.
    mech_free: Nanos,
    /// When the host side can take the next command.
    host_free: Nanos,
    cache: Vec<Cached>,
    cache_cap: usize,
    /// The write being destaged (still in the buffer) and when that ends.
    destaging: Option<Extent>,
    destage_end: Nanos,
    segs: Vec<Extent>,
    next_seg: usize,
    ahead: Option<Ahead>,
}

/// Checks the parameters that need no geometry.
fn validate(p: &HddParams) -> Result<()> {
    let pos = |x: f64| x.is_finite() && x > 0.0;
    let non_neg = |x: f64| x.is_finite() && x >= 0.0;
    require(
        p.rpm.is_finite() && (100.0..=100_000.0).contains(&p.rpm),
        "hdd: rpm must be between 100 and 100000",
    )?;
    require(pos(p.seek_avg_ms), "hdd: seek_avg_ms must be positive")?;
    require(
        pos(p.media_mb_per_s) && p.media_mb_per_s <= 100_000.0,
        "hdd: media_mb_per_s must be positive and at most 100000",
    )?;
    validate_zones(p)?;
    require(
        p.sector_size.is_power_of_two() && (512..=65536).contains(&p.sector_size),
        "hdd: sector_size must be a power of two from 512 to 65536",
    )?;
    require(
        (1..=256).contains(&p.heads),
        "hdd: heads must be from 1 to 256",
    )?;
    require(
        non_neg(p.write_settle_us),
        "hdd: write_settle_us must not be negative",
    )?;
    require(
        non_neg(p.overhead_us),
        "hdd: overhead_us must not be negative",
    )?;
    require(
        pos(p.interface_mb_per_s),
        "hdd: interface_mb_per_s must be positive",
    )?;
    require(
        p.write_cache_entries <= 4096,
        "hdd: write_cache_entries must be at most 4096",
    )?;
    require(
        p.read_ahead_segments <= 1024,
        "hdd: read_ahead_segments must be at most 1024",
    )
}

/// One zone needs no inner rate; several need one at or below the outer.
fn validate_zones(p: &HddParams) -> Result<()> {
    require(
        (1..=zones::MAX_ZONES).contains(&p.zones),
        "hdd: zones must be from 1 to 256",
    )?;
    match p.inner_mb_per_s {
        None => require(
            p.zones == 1,
            "hdd: zones > 1 needs inner_mb_per_s, the media rate at the inner edge",
        ),
        Some(inner) => {
            require(
                p.zones > 1,
                "hdd: inner_mb_per_s needs zones > 1 (one zone has one rate, media_mb_per_s)",
            )?;
            require(
                inner.is_finite() && inner > 0.0 && inner <= p.media_mb_per_s,
                "hdd: inner_mb_per_s must be positive and at most media_mb_per_s",
            )
        }
    }
}

pub(crate) fn model(p: &HddParams, capacity: u64) -> Result<Box<dyn Model>> {
    validate(p)?;
    require_multiple("hdd", capacity, p.sector_size, "sector_size")?;
    let t2t_ms = p.seek_track_ms.unwrap_or(p.seek_avg_ms / 10.0);
    let full_ms = p.seek_full_ms.unwrap_or(p.seek_avg_ms * 2.2);
    require(
        t2t_ms > 0.0 && t2t_ms < p.seek_avg_ms && p.seek_avg_ms < full_ms && full_ms.is_finite(),
        "hdd: seek times must satisfy 0 < seek_track_ms < seek_avg_ms < seek_full_ms",
    )?;
    let rev = (60e9 / p.rpm).round() as Nanos;
    let inner = p.inner_mb_per_s.unwrap_or(p.media_mb_per_s);
    let spts = zones::sectors_per_track(p.media_mb_per_s, inner, p.zones, rev, p.sector_size);
    require(
        spts.iter().all(|&s| s >= 1),
        "hdd: the media rate is too low for one sector per revolution",
    )?;
    let heads = u64::from(p.heads);
    // The mechanism is the whole disk's; the host sees the partition at its start.
    let disk = p.disk_capacity.unwrap_or(capacity);
    require(
        disk >= capacity && disk % p.sector_size == 0,
        "hdd: disk_capacity must be at least capacity and a multiple of sector_size",
    )?;
    let sectors = disk / p.sector_size;
    let track_switch = (t2t_ms * 1e6).round() as Nanos;
    let settle = us(p.write_settle_us);
    let (zones, cylinders) = zones::layout(&spts, sectors, heads, rev, track_switch, settle)?;
    require(
        cylinders >= 3,
        "hdd: capacity is too small for a seek curve (fewer than 3 cylinders); raise it or lower heads",
    )?;
    let seek = SeekCurve::fit(t2t_ms * 1e6, full_ms * 1e6, p.seek_avg_ms * 1e6, cylinders)?;
    debug_assert!(
        zones.last().is_some_and(|z| z.lba < sectors),
        "every zone holds sectors"
    );
    let cache_cap = p.write_cache_entries as usize;
    Ok(Box::new(Hdd {
        geometry: Geometry {
            sector_size: p.sector_size as u32,
            erase_unit: None,
            capacity,
            program_once: false,
        },
        sector: p.sector_size,
        sectors,
        zones,
        heads,
        rev,
        seek,
        track_switch,
        settle,
        overhead: us(p.overhead_us),
        interface_mb_per_s: p.interface_mb_per_s,
        track: 0,
        mech_free: 0,
        host_free: 0,
        cache: Vec::with_capacity(cache_cap),
        cache_cap,
        destaging: None,
        destage_end: 0,
        segs: vec![Extent::default(); p.read_ahead_segments as usize],
        next_seg: 0,
        ahead: None,
    }))
}

impl Hdd {
    /// Start of rotational slot `j` (j may exceed a revolution) on a track
    /// of `spt` sectors, ns from the revolution's start.
    fn slot_ns(&self, spt: u64, j: u64) -> Nanos {
        debug_assert!(spt > 0, "a track holds sectors");
        j * self.rev / spt
    }

    /// Rotational slot of sector `sec` of track `track` in zone `z`. Skews
    /// count from the zone's first track, so crossing into the next zone may
    /// cost up to a revolution (once per zone, negligible).
    fn slot(&self, z: &Zone, track: u64, sec: u64) -> u64 {
        debug_assert!(
            track >= z.track && sec < z.spt,
            "sector {sec} of track {track} in its zone"
        );
        let t = track - z.track;
        let (cyl, head) = (t / self.heads, t % self.heads);
        let per_cyl = ((self.heads - 1) * z.head_skew + z.cyl_skew) % z.spt;
        ((cyl % z.spt) * per_cyl + head * z.head_skew + sec) % z.spt
    }

    /// The zone of sector `lba`, its track and its index on the track.
    fn locate(&self, lba: u64) -> (Zone, u64, u64) {
        debug_assert!(lba < self.sectors, "sector {lba} of {}", self.sectors);
        let z = *zones::of_lba(&self.zones, lba);
        let i = lba - z.lba;
        (z, z.track + i / z.spt, i % z.spt)
    }

    /// Time to move the head between tracks.
    fn move_ns(&self, from: u64, to: u64, write: bool) -> Nanos {
        if from == to {
            return 0;
        }
        let d = (from / self.heads).abs_diff(to / self.heads);
        if d == 0 {
            self.track_switch
        } else {
            self.seek.ns(d) + if write { self.settle } else { 0 }
        }
    }

    fn spot(&self, lba: u64) -> Spot {
        let (z, track, sec) = self.locate(lba);
        let slot_ns = self.slot_ns(z.spt, self.slot(&z, track, sec));
        debug_assert!(slot_ns < self.rev, "a slot starts within the revolution");
        Spot { track, slot_ns }
    }

    /// When sector `lba` is first under the head, moving there from `track`
    /// at time `t`.
    fn arrival(&self, track: u64, t: Nanos, lba: u64, write: bool) -> Nanos {
        self.arrive(track, t, self.spot(lba), write)
    }

    fn arrive(&self, track: u64, t: Nanos, to: Spot, write: bool) -> Nanos {
        let t = t + self.move_ns(track, to.track, write);
        let phase = t % self.rev;
        let wait = if to.slot_ns >= phase {
            to.slot_ns - phase
        } else {
            to.slot_ns + self.rev - phase
        };
        debug_assert!(
            wait < self.rev,
            "the sector comes round within a revolution"
        );
        t + wait
    }

    /// Transfers `n` sectors from `lba` starting with the head on `track` at
    /// `t`; returns when the last sector passed and the track it ends on.
    fn media(
        &self,
        mut track: u64,
        mut t: Nanos,
        mut lba: u64,
        n: u64,
        write: bool,
    ) -> (Nanos, u64) {
        debug_assert!(lba + n <= self.sectors, "the transfer stays on the disk");
        let mut left = n;
        while left > 0 {
            t = self.arrival(track, t, lba, write);
            let (z, on, sec) = self.locate(lba);
            track = on;
            let k = left.min(z.spt - sec);
            debug_assert!(k > 0, "each pass moves at least a sector");
            let slot = self.slot(&z, track, sec);
            t += self.slot_ns(z.spt, slot + k) - self.slot_ns(z.spt, slot);
            lba += k;
            left -= k;
        }
        (t, track)
    }

    /// Sectors of the read-ahead buffered by time `t`.
    fn ahead_read_by(&self, a: &Ahead, t: Nanos) -> u64 {
        if t <= a.t0 {
            return 0;
        }
        // Capped at two revolutions: the track is complete by then anyway.
        let since = (t - a.t0).min(2 * self.rev) + self.slot_ns(a.spt, a.slot0);
        let slots = ((since + 1) * a.spt - 1) / self.rev;
        slots.saturating_sub(a.slot0).min(a.to - a.from)
    }

    /// When the read-ahead has buffered every sector below `end`.
    fn ahead_ready(&self, a: &Ahead, end: u64) -> Nanos {
        debug_assert!(end <= a.to, "the read-ahead stops at {}", a.to);
        let k = end.saturating_sub(a.from);
        a.t0 + self.slot_ns(a.spt, a.slot0 + k) - self.slot_ns(a.spt, a.slot0)
    }

    /// Stops the read-ahead at `t` (the mechanism starts other work).
    fn cut_ahead(&mut self, t: Nanos) {
        if let Some(a) = self.ahead.take() {
            let got = self.ahead_read_by(&a, t);
            debug_assert!(got <= a.to - a.from);
            let seg = &mut self.segs[a.seg];
            seg.n = a.from - seg.lba + got;
        }
    }

    /// Records `[s, e)` as read at `t` and reads ahead to the end of its track.
    fn start_ahead(&mut self, s: u64, e: u64, t: Nanos) {
        if self.segs.is_empty() {
            return;
        }
        debug_assert!(s < e && e <= self.sectors, "a read of [{s}, {e})");
        let seg = self.next_seg;
        self.next_seg = (seg + 1) % self.segs.len();
        self.segs[seg] = Extent { lba: s, n: e - s };
        let (z, track, _) = self.locate(e - 1);
        let to = (z.lba + (track - z.track + 1) * z.spt).min(self.sectors);
        debug_assert!(to >= e, "the read-ahead runs on from the read");
        self.ahead = Some(Ahead {
            seg,
            from: e,
            to,
            t0: t,
            slot0: self.slot(&z, track, (e - z.lba) % z.spt),
            spt: z.spt,
        });
    }

    /// Whether `[s, e)` is in the buffer (written data or a read segment)
    /// at `t`, or the read-ahead will have it: when it will be there.
    fn buffered(&self, s: u64, e: u64) -> Option<Nanos> {
        let cached = self.cache.iter().any(|c| c.ext.covers(s, e))
            || self.destaging.is_some_and(|x| x.covers(s, e))
            || self.segs.iter().any(|x| x.covers(s, e));
        if cached {
            return Some(0);
        }
        self.ahead
            .filter(|a| s >= self.segs[a.seg].lba && e <= a.to)
            .map(|a| self.ahead_ready(&a, e))
    }

    /// Destages the cached writes the mechanism would have started before `t`.
    fn background(&mut self, t: Nanos) {
        while let Some(ready) = self.cache.iter().map(|c| c.ready).min() {
            let start = self.mech_free.max(ready);
            if start >= t || !self.destage(start) {
                break;
            }
        }
    }

    /// Destages, from `at`, the cached write that can be reached first;
    /// false when no cached write is ready by `at`.
    fn destage(&mut self, at: Nanos) -> bool {
        self.cut_ahead(at);
        let mut best: Option<(usize, Nanos)> = None;
        for (i, c) in self.cache.iter().enumerate() {
            if c.ready > at {
                continue;
            }
            let arr = self.arrive(self.track, at, c.at, true);
            if best.is_none_or(|(_, b)| arr < b) {
                best = Some((i, arr));
            }
        }
        let Some((i, _)) = best else { return false };
        let c = self.cache.swap_remove(i);
        let (end, track) = self.media(self.track, at, c.ext.lba, c.ext.n, true);
        debug_assert!(end > at, "a destage takes time");
        self.track = track;
        self.mech_free = end;
        self.destaging = Some(c.ext);
        self.destage_end = end;
        true
    }

    /// When a cache slot is free for a write whose data arrives at `t`.
    fn wait_for_slot(&mut self, mut t: Nanos) -> Nanos {
        loop {
            let in_flight = self.destage_end > t;
            if self.cache.len() + usize::from(in_flight) < self.cache_cap {
                return t;
            }
            debug_assert!(
                !self.cache.is_empty() || in_flight,
                "a full cache holds writes"
            );
            if in_flight {
                t = self.destage_end;
            } else if !self.destage(t.max(self.mech_free)) {
                // Unreachable: every cached write is ready by now.
                return t;
            }
        }
    }

    fn done(&mut self, start: Nanos, end: Nanos) -> Completion {
        debug_assert!(
            start <= end && start >= self.host_free,
            "commands are served in order"
        );
        self.host_free = end;
        Completion {
            start,
            end,
            energy_nj: 0,
        }
    }
}

impl Model for Hdd {
    fn geometry(&self) -> Geometry {
        self.geometry
    }

    fn read(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        _st: &mut DeviceStats,
    ) -> Result<Completion> {
        debug_assert!(offset % self.sector == 0 && len % self.sector == 0);
        let (s, n) = (offset / self.sector, len / self.sector);
        let e = s + n;
        let start = at.max(self.host_free);
        let t = start + self.overhead;
        let host_end = t + transfer_ns(len, self.interface_mb_per_s);
        if n == 0 {
            return Ok(self.done(start, t));
        }
        self.background(t);
        if let Some(ready) = self.buffered(s, e) {
            // From the buffer, or streamed as the read-ahead reaches it.
            self.mech_free = self.mech_free.max(ready);
            return Ok(self.done(start, host_end.max(ready)));
        }
        // A read continuing the read-ahead past its track: the drive carries
        // on into the next track as it finishes this one, without waiting
        // for the command, so sequential reads keep streaming.
        if let Some(a) = self
            .ahead
            .filter(|a| s >= self.segs[a.seg].lba && s <= a.to)
        {
            let track_done = self.ahead_ready(&a, a.to).max(self.mech_free);
            self.cut_ahead(track_done);
            let (end, track) = self.media(self.track, track_done, a.to, e - a.to, false);
            return Ok(self.finish_read(start, s, e, end, track, host_end));
        }
        let from = t.max(self.mech_free);
        self.cut_ahead(from);
        let (end, track) = self.media(self.track, from, s, n, false);
        Ok(self.finish_read(start, s, e, end, track, host_end))
    }

    fn write(
        &mut self,
        at: Nanos,
        offset: u64,
        len: u64,
        _st: &mut DeviceStats,
    ) -> Result<Completion> {
        let (s, n) = (offset / self.sector, len / self.sector);
        let start = at.max(self.host_free);
        let t = start + self.overhead;
        let xfer = transfer_ns(len, self.interface_mb_per_s);
        if n == 0 {
            return Ok(self.done(start, t));
        }
        self.background(t);
        if self.cache_cap == 0 {
            let from = t.max(self.mech_free);
            self.cut_ahead(from);
            let (end, track) = self.media(self.track, from, s, n, true);
            self.track = track;
            self.mech_free = end;
            return Ok(self.done(start, end.max(t + xfer)));
        }
        let end = self.wait_for_slot(t) + xfer;
        self.cache.push(Cached {
            ext: Extent { lba: s, n },
            ready: end,
            at: self.spot(s),
        });
        debug_assert!(
            self.cache.len() <= self.cache_cap,
            "the write cache holds at most its size"
        );
        Ok(self.done(start, end))
    }

    fn flush(&mut self, at: Nanos, _st: &mut DeviceStats) -> Result<Completion> {
        let start = at.max(self.host_free);
        self.background(start);
        while self.destage(start.max(self.mech_free)) {}
        // Every cached write's data arrived before this command started.
        debug_assert!(self.cache.is_empty(), "a flush destages the whole cache");
        let end = start.max(self.mech_free);
        Ok(self.done(start, end))
    }

    fn reorders_queue(&self) -> bool {
        true
    }

    /// Shortest positioning time first, from where the head is when the
    /// drive is next free; requests the buffer serves cost nothing.
    fn pick_next(&self, at: Nanos, queued: &[QueuedIo]) -> usize {
        let t = at.max(self.host_free) + self.overhead;
        let head_free = t.max(self.mech_free);
        let mut best = (0, Nanos::MAX);
        for (i, q) in queued.iter().enumerate() {
            let s = q.offset / self.sector;
            let e = s + q.len / self.sector;
            let cost = if q.write && self.cache_cap > 0 {
                let in_flight = self.destage_end > t;
                if self.cache.len() + usize::from(in_flight) < self.cache_cap {
                    0
                } else {
                    head_free.max(self.destage_end) - t
                }
            } else if let Some(ready) = self.buffered(s, e).filter(|_| !q.write) {
                ready.saturating_sub(t)
            } else {
                self.arrival(self.track, head_free, s, q.write) - t
            };
            if cost < best.1 {
                best = (i, cost);
            }
        }
        best.0
    }

    fn busy_until(&self) -> Option<Nanos> {
        Some(self.host_free)
    }
}

impl Hdd {
    fn finish_read(
        &mut self,
        start: Nanos,
        s: u64,
        e: u64,
        end: Nanos,
        track: u64,
        host_end: Nanos,
    ) -> Completion {
        self.track = track;
        self.mech_free = end;
        self.start_ahead(s, e, end);
        self.done(start, end.max(host_end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockDevice, DeviceSpec, SimDevice};

    fn spec(extra: &str) -> DeviceSpec {
        let text = format!(
            "capacity = \"16 GiB\"\n[model]\nkind = \"hdd\"\nrpm = 10000\nseek_avg_ms = 4.5\nmedia_mb_per_s = 80\n{extra}"
        );
        DeviceSpec::from_toml(&text, "t").unwrap()
    }

    fn dev(extra: &str) -> SimDevice {
        SimDevice::new(&spec(extra)).unwrap()
    }

    #[test]
    fn seek_curve_meets_its_three_anchors() {
        let cyl = 20_000;
        let c = SeekCurve::fit(0.3e6, 9e6, 4e6, cyl).unwrap();
        assert_eq!(c.ns(1), 300_000);
        assert_eq!(c.ns(cyl - 1), 9_000_000);
        let cf = cyl as f64;
        let mean: f64 = (1..cyl)
            .map(|d| 2.0 * (cf - d as f64) / (cf * cf) * c.ns(d) as f64)
            .sum();
        assert!((mean - 4e6).abs() < 1.0, "{mean}");
        assert!((1..cyl).all(|d| c.ns(d) <= c.ns(d + 1)));
        assert!(c.knee > 1.0 && c.knee < (cyl - 1) as f64);
    }

    #[test]
    fn the_closed_form_fit_agrees_with_summing_every_distance() {
        for cyl in [20_000u64, 300_000] {
            let exact = SeekCurve::fit(0.3e6, 9e6, 4e6, cyl).unwrap();
            let large = SeekCurve::fit_large(0.3e6, 9e6, 4e6, cyl).unwrap();
            let rel = (exact.knee - large.knee).abs() / exact.knee;
            assert!(
                rel < 1e-6,
                "cyl {cyl}: knee {} vs {}",
                exact.knee,
                large.knee
            );
        }
        assert!(SeekCurve::fit_large(0.3e6, 9e6, 8.9e6, 300_000).is_err());
    }

    #[test]
    fn an_exabyte_drive_sets_up_at_once() {
        let mut d = SimDevice::new(
            &DeviceSpec::from_toml(
                "capacity = \"1 EiB\"\n[model]\nkind = \"hdd\"\nrpm = 7200\nseek_avg_ms = 8\nmedia_mb_per_s = 200\n",
                "big",
            )
            .unwrap(),
        )
        .unwrap();
        let cap = d.geometry().capacity;
        let mut buf = vec![0u8; 4096];
        let c = d.read(cap - 4096, &mut buf).unwrap();
        // A full-stroke seek (2.2 x 8 ms) plus at most a revolution (8.3 ms).
        assert!(c.end > 17_000_000 && c.end < 27_000_000, "{c:?}");
    }

    #[test]
    fn unreachable_or_bad_parameters_are_spec_errors() {
        let text = |m: &str| {
            format!("capacity = \"16 GiB\"\n[model]\nkind = \"hdd\"\nrpm = 7200\nseek_avg_ms = 8\nmedia_mb_per_s = 60\n{m}")
        };
        for (extra, want) in [
            ("seek_track_ms = 0.1\nseek_full_ms = 30", "not reachable"),
            (
                "seek_full_ms = 7",
                "seek_track_ms < seek_avg_ms < seek_full_ms",
            ),
            ("heads = 0", "heads"),
            ("sector_size = 1000", "sector_size"),
            ("overhead_us = -1", "overhead_us"),
            ("rpmm = 1", "unknown field"),
            ("zones = 4", "needs inner_mb_per_s"),
            ("inner_mb_per_s = 30", "needs zones > 1"),
            ("zones = 4\ninner_mb_per_s = 70", "at most media_mb_per_s"),
            (
                "zones = 300\ninner_mb_per_s = 30",
                "zones must be from 1 to 256",
            ),
        ] {
            let e = DeviceSpec::from_toml(&text(extra), "t")
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{extra}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let tiny = "capacity = \"1 MiB\"\n[model]\nkind = \"hdd\"\nrpm = 7200\nseek_avg_ms = 8\nmedia_mb_per_s = 60";
        let e = DeviceSpec::from_toml(tiny, "t").unwrap_err().to_string();
        assert!(e.contains("too small"), "{e}");
    }

    #[test]
    fn sequential_reads_stream_at_the_media_rate() {
        let mut d = dev("");
        let mut buf = vec![0u8; 64 << 10];
        d.read(0, &mut buf).unwrap();
        let t0 = d.clock();
        let n = 400u64;
        for i in 1..=n {
            d.read(i * buf.len() as u64, &mut buf).unwrap();
        }
        let mb_s = (n * buf.len() as u64) as f64 / ((d.clock() - t0) as f64 / 1e9) / 1e6;
        // 80 MB/s less the head and cylinder switches between tracks.
        assert!(mb_s > 70.0 && mb_s <= 80.0, "{mb_s}");
    }

    #[test]
    fn small_sequential_reads_hit_the_read_ahead() {
        let mut d = dev("");
        let mut buf = [0u8; 4096];
        d.read(0, &mut buf).unwrap();
        let t0 = d.clock();
        let c = d.read(4096, &mut buf).unwrap();
        // No positioning: the command overhead and the interface transfer.
        assert_eq!(c.end - t0, 100_000 + transfer_ns(4096, 150.0));
        let mut off = dev("read_ahead_segments = 0");
        off.read(0, &mut buf).unwrap();
        let t0 = off.clock();
        off.read(4096, &mut buf).unwrap();
        // Without read-ahead the overhead lets the sector pass: a revolution.
        assert!(off.clock() - t0 > 5_000_000);
    }

    #[test]
    fn cached_random_writes_beat_write_through_and_flush_drains() {
        let run = |extra: &str| {
            let mut d = dev(extra);
            let buf = [1u8; 4096];
            let mut x = 12345u64;
            for _ in 0..400 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let off = (x >> 20) % (16 << 30) / 4096 * 4096;
                d.write(off, &buf).unwrap();
            }
            let before = d.clock();
            d.flush().unwrap();
            let drained = d.clock() - before;
            let again = d.flush().unwrap();
            assert_eq!(again.end, again.start);
            (before, drained)
        };
        let (cached, drained) = run("");
        let (through, nothing) = run("write_cache_entries = 0");
        assert!(drained > 0 && nothing == 0);
        assert!(
            (cached + drained) as f64 <= 0.75 * through as f64,
            "{cached} {drained} {through}"
        );
    }

    #[test]
    fn a_full_cache_makes_writes_wait_for_destages() {
        let mut d = dev("write_cache_entries = 2");
        let buf = [1u8; 4096];
        let t0 = d.clock();
        d.write(0, &buf).unwrap();
        d.write(8 << 30, &buf).unwrap();
        assert!(d.clock() - t0 < 500_000, "two writes fit the cache");
        d.write(4 << 30, &buf).unwrap();
        assert!(d.clock() - t0 > 2_000_000, "the third waits for a destage");
    }

    #[test]
    fn pick_next_prefers_the_closest_request() {
        let mut d = dev("");
        let mut buf = [0u8; 4096];
        d.read(1 << 30, &mut buf).unwrap();
        let q = |offset| QueuedIo {
            offset,
            len: 4096,
            write: false,
        };
        let queued = [q(15 << 30), q((1 << 30) + 8192), q(0)];
        assert!(d.reorders_queue());
        assert_eq!(d.pick_next(d.busy_until(), &queued), 1);
    }

    #[test]
    fn hdd_7200_reproduces_seed_001_table_3_1() {
        let mut d = crate::presets::open("hdd-7200").unwrap();
        let cap = d.geometry().capacity;
        let mut buf = [0u8; 2048];
        let (mut read, mut write) = (0u64, 0u64);
        let n = 3000u64;
        let mut x = 99u64;
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 16) % (cap / 2048) * 2048;
            let w = (x.rotate_left(29) >> 16) % (cap / 2048) * 2048;
            let c = d.read(r, &mut buf).unwrap();
            read += c.end - c.start;
            let c = d.write(w, &buf).unwrap();
            write += c.end - c.start;
        }
        let (read_ms, write_ms) = (read as f64 / n as f64 / 1e6, write as f64 / n as f64 / 1e6);
        assert!((read_ms / 12.7 - 1.0).abs() < 0.03, "{read_ms}");
        assert!((write_ms / 13.7 - 1.0).abs() < 0.03, "{write_ms}");
    }

    /// Mean time of `n` random 4 KiB reads over the device, ms.
    fn random_read_ms(d: &mut SimDevice, n: u64) -> f64 {
        let cap = d.geometry().capacity;
        let mut buf = [0u8; 4096];
        let mut x = 5u64;
        let mut total = 0;
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let c = d.read((x >> 16) % (cap / 4096) * 4096, &mut buf).unwrap();
            total += c.end - c.start;
        }
        total as f64 / n as f64 / 1e6
    }

    #[test]
    fn a_partition_of_a_large_disk_seeks_short() {
        // 10,000 rpm: 3 ms average rotational latency; 4.5 ms average seek
        // over the whole 16 GiB disk, 0.45 ms to the next cylinder.
        let whole = random_read_ms(&mut dev(""), 2000);
        let text = "capacity = \"64 MiB\"\n[model]\nkind = \"hdd\"\nrpm = 10000\nseek_avg_ms = 4.5\nmedia_mb_per_s = 80\ndisk_capacity = \"16 GiB\"\n";
        let short = DeviceSpec::from_toml(text, "p").unwrap();
        let mut d = SimDevice::new(&short).unwrap();
        assert_eq!(d.geometry().capacity, 64 << 20);
        let stroke = random_read_ms(&mut d, 2000);
        // Whole disk: overhead + seek + half a revolution (0.1 + 4.5 + 3.0).
        assert!((whole - 7.6).abs() < 0.4, "{whole}");
        // 64 MiB of 16 GiB spans some 80 of 20,000 cylinders: seeks of a
        // few cylinders, under a millisecond, and the same half revolution.
        assert!(stroke > 3.1 && stroke < 4.2, "{stroke}");
        // The device ends at its capacity, not the disk's.
        let mut buf = [0u8; 4096];
        assert!(d.read(64 << 20, &mut buf).is_err());
        let bad = text.replace("\"16 GiB\"", "\"32 MiB\"");
        let e = DeviceSpec::from_toml(&bad, "p").unwrap_err().to_string();
        assert!(e.contains("disk_capacity must be at least capacity"), "{e}");
    }

    #[test]
    fn same_operations_give_the_same_times() {
        let run = || {
            let mut d = dev("write_cache_entries = 4");
            let mut buf = vec![0u8; 8192];
            let mut x = 7u64;
            let mut times = Vec::new();
            for i in 0..300u64 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let off = (x >> 24) % (16 << 30) / 8192 * 8192;
                let c = match i % 4 {
                    0 => d.write(off, &buf).unwrap(),
                    3 => d.flush().unwrap(),
                    _ => d.read(off, &mut buf).unwrap(),
                };
                times.push((c.start, c.end));
            }
            (times, d.stats())
        };
        assert_eq!(run(), run());
    }
}
