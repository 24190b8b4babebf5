//! Recording zones (zoned bit recording). Linear bit density is about the
//! same across the platter, so an outer track holds more sectors than an
//! inner one and, at a constant spindle speed, passes them under the head
//! faster. LBA 0 is at the outer edge, so the media rate falls across the
//! LBA range. Each zone is an equal run of whole cylinders (constant track
//! pitch), its tracks holding the same number of sectors; a sector's zone is
//! found by a binary search over the zone table, which has at most [`MAX_ZONES`]
//! entries whatever the capacity.

use crate::spec::require;
use crate::{Nanos, Result};

/// The most zones a spec may ask for: real drives have some 15 to 30.
pub(super) const MAX_ZONES: u32 = 256;

/// A recording zone: whole cylinders whose tracks hold `spt` sectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Zone {
    /// First sector and first track (cylinder × heads + head) of the zone.
    pub lba: u64,
    pub track: u64,
    /// Sectors per track.
    pub spt: u64,
    /// Slot offset from one head to the next, and from a cylinder's last
    /// head to the next cylinder's first: just enough slots to cover the
    /// switch, so streaming continues across tracks.
    pub head_skew: u64,
    pub cyl_skew: u64,
}

/// Sectors per track of each of `zones` zones, outermost first. The rate is
/// proportional to radius, and equal-width zones step it down evenly from
/// `outer` to `inner` MB/s.
pub(super) fn sectors_per_track(
    outer: f64,
    inner: f64,
    zones: u32,
    rev: Nanos,
    sector: u64,
) -> Vec<u64> {
    debug_assert!(outer >= inner && zones >= 1, "rates fall inwards");
    let last = f64::from(zones.max(2) - 1);
    (0..zones)
        .map(|k| {
            let rate = outer - (outer - inner) * f64::from(k) / last;
            // Bytes per track = media rate × revolution time.
            (rate * 1e6 * rev as f64 / 1e9 / sector as f64).floor() as u64
        })
        .collect()
}

/// The zone table over `sectors`: every zone gets the same number of
/// cylinders, the fewest that hold the capacity. Returns the zones and the
/// number of cylinders. `switch` and `settle` (ns) set the skews.
pub(super) fn layout(
    spts: &[u64],
    sectors: u64,
    heads: u64,
    rev: Nanos,
    switch: Nanos,
    settle: Nanos,
) -> Result<(Vec<Zone>, u64)> {
    debug_assert!(
        spts.iter().all(|&s| s > 0) && heads > 0,
        "sectors on every track"
    );
    let per_cylinder_set: u64 = spts.iter().sum::<u64>() * heads;
    let cyls = sectors.div_ceil(per_cylinder_set);
    let mut zones = Vec::with_capacity(spts.len());
    let (mut lba, mut track) = (0, 0);
    for &spt in spts {
        let slots = |ns: Nanos| (ns * spt).div_ceil(rev) % spt;
        zones.push(Zone {
            lba,
            track,
            spt,
            head_skew: slots(switch),
            cyl_skew: slots(switch + settle),
        });
        lba += cyls * heads * spt;
        track += cyls * heads;
    }
    require(
        zones.last().is_some_and(|z| z.lba < sectors),
        "hdd: capacity is too small for its zones (the innermost would be empty); raise it or lower zones",
    )?;
    debug_assert!(zones
        .windows(2)
        .all(|w| w[0].lba < w[1].lba && w[0].spt >= w[1].spt));
    Ok((zones, cyls * spts.len() as u64))
}

/// The zone holding sector `lba`.
pub(super) fn of_lba(zones: &[Zone], lba: u64) -> &Zone {
    debug_assert!(
        zones.first().is_some_and(|z| z.lba == 0),
        "the first zone starts at LBA 0"
    );
    &zones[zones.partition_point(|z| z.lba <= lba) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_step_evenly_from_outer_to_inner() {
        // 7200 rpm: 8,333,333 ns a revolution; 60 MB/s is 976 sectors.
        let spts = sectors_per_track(120.0, 60.0, 4, 8_333_333, 512);
        assert_eq!(spts, vec![1953, 1627, 1302, 976]);
        assert_eq!(sectors_per_track(60.0, 60.0, 1, 8_333_333, 512), vec![976]);
    }

    #[test]
    fn zones_hold_equal_cylinders_and_cover_the_capacity() {
        let spts = [300, 200, 100];
        let (z, cyl) = layout(&spts, 1_000_000, 2, 1000, 100, 0).unwrap();
        // 1200 sectors per set of three cylinders: 834 cylinders a zone.
        assert_eq!(cyl, 3 * 834);
        assert_eq!(z[1].lba, 834 * 2 * 300);
        assert_eq!(z[2].track, 2 * 834 * 2);
        assert_eq!(of_lba(&z, z[2].lba - 1).spt, 200);
        assert_eq!(of_lba(&z, 999_999).spt, 100);
        // A 100 ns switch is 30, 20 and 10 slots of a 1000 ns revolution.
        assert_eq!(
            z.iter().map(|z| z.head_skew).collect::<Vec<_>>(),
            [30, 20, 10]
        );
    }

    #[test]
    fn an_empty_innermost_zone_is_a_spec_error() {
        let e = layout(&[300, 200, 100], 1000, 2, 1000, 100, 0).unwrap_err();
        assert!(e.to_string().contains("too small for its zones"), "{e}");
    }
}
