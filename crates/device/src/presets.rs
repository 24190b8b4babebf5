//! Named device presets, from `presets.toml` (each with the source of its numbers).

use std::sync::OnceLock;

use crate::{DeviceError, DeviceSpec, Result, SimDevice};

const PRESETS: &str = include_str!("../presets.toml");

/// Every preset, ordered by name.
pub fn all() -> &'static [DeviceSpec] {
    static ALL: OnceLock<Vec<DeviceSpec>> = OnceLock::new();
    ALL.get_or_init(|| {
        let table: toml::Table = toml::from_str(PRESETS).expect("presets.toml is valid TOML");
        table
            .into_iter()
            .map(|(name, v)| {
                let text = toml::to_string(&v).expect("preset re-serialises");
                DeviceSpec::from_toml(&text, &name)
                    .unwrap_or_else(|e| panic!("preset {name} is invalid: {e}"))
            })
            .collect()
    })
}

/// Preset names, ordered by name.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|s| s.name.as_str()).collect()
}

/// The preset called `name`.
pub fn get(name: &str) -> Result<DeviceSpec> {
    all()
        .iter()
        .find(|s| s.name == name)
        .cloned()
        .ok_or_else(|| DeviceError::UnknownPreset {
            name: name.to_string(),
            known: names().join(", "),
        })
}

/// A fresh simulated device of preset `name`, data in memory.
pub fn open(name: &str) -> Result<SimDevice> {
    SimDevice::new(&get(name)?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_preset_builds_and_has_a_source() {
        for spec in super::all() {
            assert!(!spec.source.is_empty(), "{} has no source", spec.name);
            super::open(&spec.name).unwrap();
        }
    }

    #[test]
    fn unknown_preset_lists_the_known_ones() {
        let e = super::get("nope").unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("dram-ssd"), "{e}");
    }
}
