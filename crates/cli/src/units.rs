//! Sizes as people read and write them: `1 PiB`, not 1125899906842624.

/// `bytes` in the largest binary unit that keeps it readable: exact
/// (`64 MiB`) when it divides, else one decimal (`1.5 GiB`).
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >= 1u64 << (10 * (unit + 1)) {
        unit += 1;
    }
    let scale = 1u64 << (10 * unit);
    if bytes % scale == 0 {
        format!("{} {}", bytes / scale, UNITS[unit])
    } else {
        format!("{:.1} {}", bytes as f64 / scale as f64, UNITS[unit])
    }
}

/// `bytes` as [`human`], followed by the exact byte count where the
/// readable form rounds (`465.7 GiB (500000000000 B)`).
pub fn exact(bytes: u64) -> String {
    let h = human(bytes);
    if h.contains('.') {
        format!("{h} ({bytes} B)")
    } else {
        h
    }
}

/// Parses a size argument (`4096`, `4k`, `64m`, `1 GiB`, `300GB`): see
/// [`flashkv_device::parse_size`] for which units are decimal.
pub fn size(s: &str) -> Result<u64, String> {
    flashkv_device::parse_size(s).map_err(|_| {
        format!(
            "'{s}' is not a size (bytes, or e.g. 4k, 64MiB, 300GB: {})",
            flashkv_device::SIZE_UNITS
        )
    })
}

/// A size that must be greater than zero.
pub fn nonzero_size(s: &str) -> Result<u64, String> {
    match size(s)? {
        0 => Err("must be greater than zero".into()),
        n => Ok(n),
    }
}

/// Parses a number of seconds from 0 to a day (NaN and infinities refused).
pub fn seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a number of seconds between 0 and 86400"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human(0), "0 B");
        assert_eq!(human(3000), "2.9 KiB");
        assert_eq!(human(4096), "4 KiB");
        assert_eq!(human(64 << 20), "64 MiB");
        assert_eq!(human(3 << 29), "1.5 GiB");
        assert_eq!(human(1 << 50), "1 PiB");
        assert_eq!(human(1 << 60), "1 EiB");
        assert_eq!(human(u64::MAX), "16.0 EiB");
        assert_eq!(exact(4 << 40), "4 TiB");
        assert_eq!(exact(500_000_000_000), "465.7 GiB (500000000000 B)");
    }

    #[test]
    fn size_arguments() {
        assert_eq!(size("64m"), Ok(64 << 20));
        assert_eq!(size("300GB"), Ok(300_000_000_000));
        assert_eq!(size("1GiB"), Ok(1 << 30));
        assert_eq!(
            size("abc"),
            Err(
                "'abc' is not a size (bytes, or e.g. 4k, 64MiB, 300GB: KB, MB, GB, TB are \
                 powers of 1000; KiB, MiB, GiB, TiB and k, m, g, t powers of 1024)"
                    .into()
            )
        );
        assert_eq!(nonzero_size("0"), Err("must be greater than zero".into()));
        assert_eq!(seconds("2.5"), Ok(2.5));
        for bad in ["NaN", "nan", "inf", "-inf", "-1", "1e9", "x"] {
            assert!(seconds(bad).is_err(), "{bad}");
        }
    }
}
