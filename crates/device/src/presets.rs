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

    /// Every preset says what was fitted to which figure, what it predicts
    /// or what it takes as given, and names only parameters it has.
    #[test]
    fn every_preset_says_what_was_fitted() {
        for spec in super::all() {
            let c = &spec.calibration;
            assert!(
                !c.is_empty(),
                "{} says nothing of its calibration",
                spec.name
            );
            let model = serde_json::to_value(&spec.model).unwrap();
            for fit in &c.fitted {
                assert!(!fit.figure.is_empty() && !fit.parameters.is_empty());
                for p in &fit.parameters {
                    assert!(
                        model.get(p).is_some(),
                        "{}: fitted parameter {p} is not a field of its model",
                        spec.name
                    );
                }
            }
        }
        let x25m = super::get("ssd-x25m").unwrap().calibration;
        assert!(x25m.fitted_row("seed002", "sw") && !x25m.fitted_row("seed002", "rr"));
        let dram = super::get("dram-ssd").unwrap().calibration;
        assert!(dram.fitted_row("random_read", "4K") && !dram.fitted_row("random_read", "8K"));
        let hdd = super::get("hdd-15k").unwrap().calibration;
        assert!(hdd.fitted_row("random_write", "8K") && !hdd.fitted_row("random_read", "8K"));
    }

    /// Every disk and SSD preset has a standby state whose figures its
    /// calibration sources (a data sheet or an assumption), and none sets
    /// the standby timer, a host policy: lab figures stay those of an
    /// always-idle device.
    #[test]
    fn disks_and_ssds_have_a_sourced_standby_state_and_no_timer() {
        for spec in super::all() {
            let p = spec.power;
            assert_eq!(p.standby_after_ms, None, "{}", spec.name);
            let disk = spec.model.kind() == "hdd";
            let ssd = spec.name.contains("ssd") && spec.model.kind() == "ftl";
            if !(disk || ssd || spec.name == "nvme" || spec.name == "toshiba-62g") {
                continue;
            }
            assert!(p.standby_mw.is_some(), "{} has no standby", spec.name);
            let given = spec.calibration.given.join("; ");
            for field in ["standby_mw", "wake_ms", "wake_mj"] {
                assert!(
                    given.contains(field),
                    "{}: where is {field} from?",
                    spec.name
                );
            }
            if disk {
                assert!(
                    p.wake_ms >= 1000.0,
                    "{}: a spin-up takes seconds",
                    spec.name
                );
            } else {
                assert!(p.wake_ms < 100.0, "{}: an SSD wakes in ms", spec.name);
            }
        }
    }

    #[test]
    fn unknown_preset_lists_the_known_ones() {
        let e = super::get("nope").unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains("dram-ssd"), "{e}");
    }
}
