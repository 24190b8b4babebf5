//! A device's internal counters as lines a person reads: NAND work, and
//! what an FTL's merges, mapping cache, data cache and planes did (a line
//! per mechanism that did something).

use flashkv_device::{DeviceStats, FtlCounters};

/// NAND work and write amplification, if the device did any.
pub fn nand_line(s: &DeviceStats) -> Option<String> {
    if s.nand_page_reads + s.nand_page_programs + s.block_erases == 0 {
        return None;
    }
    Some(format!(
        "NAND: {} page reads, {} programs, {} block erases, {} GC page moves, write amplification {:.2}",
        s.nand_page_reads,
        s.nand_page_programs,
        s.block_erases,
        s.gc_page_moves,
        s.write_amplification()
    ))
}

/// A line per FTL mechanism that did something.
pub fn ftl_lines(c: &FtlCounters) -> Vec<String> {
    let mut lines = Vec::new();
    if c.switch_merges + c.partial_merges + c.full_merges > 0 {
        lines.push(format!(
            "merges: {} switch, {} partial, {} full",
            c.switch_merges, c.partial_merges, c.full_merges
        ));
    }
    if c.map_cache_hits + c.map_cache_misses > 0 {
        lines.push(format!(
            "mapping cache: {} hits, {} misses ({:.1} % hits); translation pages read {}, written {}",
            c.map_cache_hits,
            c.map_cache_misses,
            100.0 * c.map_hit_ratio(),
            c.translation_reads,
            c.translation_writes
        ));
    }
    if c.cache_writes + c.cache_read_hits > 0 {
        lines.push(format!(
            "data cache: {} page writes ({} over a copy not yet destaged), {} pages destaged, {} page reads hit",
            c.cache_writes, c.cache_write_hits, c.cache_destages, c.cache_read_hits
        ));
    }
    if c.multi_plane_ops > 0 {
        lines.push(format!("multi-plane operations: {}", c.multi_plane_ops));
    }
    lines
}

/// [`nand_line`] and [`ftl_lines`] of `s`.
pub fn lines(s: &DeviceStats) -> Vec<String> {
    nand_line(s).into_iter().chain(ftl_lines(&s.ftl)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mechanisms_that_worked_get_a_line() {
        assert!(lines(&DeviceStats::default()).is_empty());
        let s = DeviceStats {
            nand_page_reads: 3,
            ftl: FtlCounters {
                full_merges: 2,
                map_cache_hits: 3,
                map_cache_misses: 1,
                translation_reads: 1,
                ..FtlCounters::default()
            },
            ..DeviceStats::default()
        };
        let l = lines(&s);
        assert_eq!(l.len(), 3, "{l:?}");
        assert_eq!(l[1], "merges: 0 switch, 0 partial, 2 full");
        assert_eq!(
            l[2],
            "mapping cache: 3 hits, 1 misses (75.0 % hits); translation pages read 1, written 0"
        );
    }
}
