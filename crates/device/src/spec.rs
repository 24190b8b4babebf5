//! Device specs: the TOML a user writes (`--spec my-drive.toml`) and the
//! presets are made of.
//!
//! ```toml
//! name = "my-drive"            # optional; defaults to the file name
//! description = "15K SAS disk"
//! source = "datasheet, 2005"
//! capacity = "36 GiB"
//! power = { active_mw = 12000, idle_mw = 8000 }
//! [model]
//! kind = "hdd"                 # hdd | nand | ftl | dram
//! rpm = 15000
//! # ... the fields of HddParams / NandParams / FtlParams / DramParams
//! ```
//! Times are in the unit their field names end in (`_us`, `_ms`), sizes are
//! bytes or strings such as `"4k"`, `"128 KiB"`, `"36 GiB"`, `"300 GB"`
//! ([`parse_size`]: KB, MB, GB, TB are powers of 1000, as drives are sold;
//! KiB, MiB, GiB, TiB and the bare letters k, m, g, t powers of 1024), and
//! rates are MB/s with MB = 10^6 bytes.

use serde::{Deserialize, Deserializer, Serialize};
use std::path::Path;

use crate::{DeviceError, DramParams, FtlParams, HddParams, Model, NandParams, Result};

/// A device: its model, capacity, power and where its numbers come from.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// The preset's name, or the spec file's stem.
    #[serde(default)]
    pub name: String,
    /// What the device is, in a few words.
    #[serde(default)]
    pub description: String,
    /// Where the numbers come from (seed table, datasheet).
    #[serde(default)]
    pub source: String,
    /// Addressable bytes.
    #[serde(deserialize_with = "de_size")]
    pub capacity: u64,
    /// Active and idle power.
    #[serde(default)]
    pub power: PowerSpec,
    /// The cost model and its parameters.
    pub model: ModelSpec,
    /// Which parameters were set from which source figure, and which
    /// figures the model then predicts (every preset says; optional in a
    /// user's spec).
    #[serde(default, skip_serializing_if = "Calibration::is_empty")]
    pub calibration: Calibration,
}

/// What a device's numbers were set from. A parameter chosen so that the
/// model reproduces a figure is *fitted* to it, and reproducing that figure
/// then shows nothing; the figures no parameter was chosen by are what the
/// model *predicts*; the rest of the parameters are *given* (datasheets,
/// assumptions).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// Parameters set so that the model reproduces source figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fitted: Vec<Fit>,
    /// Source figures no parameter was set from: held out, predicted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub predicts: Vec<String>,
    /// Parameters taken as given: from datasheets or assumed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub given: Vec<String>,
}

/// Parameters fitted to a figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fit {
    /// The spec fields set.
    pub parameters: Vec<String>,
    /// The figure they were set from, and its source.
    pub figure: String,
    /// The rows of a lab table the fit used, for the lab to mark: `"TABLE
    /// ROW"` (e.g. `"random_read 4K"` of seed 004's tables) or `"TABLE"`
    /// for all of a table's rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<String>,
}

impl Calibration {
    /// Whether nothing is said (a user's spec may say nothing).
    pub fn is_empty(&self) -> bool {
        self.fitted.is_empty() && self.predicts.is_empty() && self.given.is_empty()
    }

    /// Whether some parameter was fitted to row `row` of lab table `table`.
    pub fn fitted_row(&self, table: &str, row: &str) -> bool {
        let whole = table.to_string();
        let one = format!("{table} {row}");
        self.fitted
            .iter()
            .flat_map(|f| &f.rows)
            .any(|r| *r == whole || *r == one)
    }
}

/// Power drawn while serving requests, while idle and in standby, in
/// milliwatts, and what waking from standby costs.
///
/// A device with `standby_mw` has a standby state (an HDD spun down, an SSD
/// in its low-power state). It enters it after `standby_after_ms` of idle
/// time, a host policy (the ATA standby timer) that presets leave unset:
/// set it in a spec or with [`crate::BlockDevice::set_standby_after`]. The
/// first request in standby waits `wake_ms` and costs `wake_mj` more.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PowerSpec {
    /// Drawn while serving requests; 0 leaves busy power to the model's
    /// per-operation energies.
    #[serde(default)]
    pub active_mw: f64,
    /// Drawn while idle.
    #[serde(default)]
    pub idle_mw: f64,
    /// Drawn in standby; `None`: the device has no standby state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standby_mw: Option<f64>,
    /// Idle time before the device enters standby; `None`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standby_after_ms: Option<f64>,
    /// Time from the first request in standby until the device serves it
    /// (an HDD's spin-up).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wake_ms: f64,
    /// Energy of one wake-up, in millijoules.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wake_mj: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// Fails unless `v` is a finite number >= 0; `field` names it.
fn non_negative(field: &str, v: f64) -> Result<()> {
    require(
        v.is_finite() && v >= 0.0,
        &format!("power.{field} = {v} must be a number >= 0"),
    )
}

impl PowerSpec {
    /// Power is finite, not negative, and serving draws at least idle power;
    /// `active_mw = 0` says the model's per-operation energies carry all of
    /// the busy power (raw NAND costed per page, as seed 000 Table 2.1).
    /// Standby draws at most idle power, and the standby timer and the
    /// wake-up costs need a standby state.
    pub fn validate(&self) -> Result<()> {
        let (a, i) = (self.active_mw, self.idle_mw);
        non_negative("active_mw", a)?;
        non_negative("idle_mw", i)?;
        require(
            a >= i || a == 0.0,
            &format!("power.active_mw = {a} is below power.idle_mw = {i} (0 means per-operation energies only)"),
        )?;
        if let Some(s) = self.standby_mw {
            non_negative("standby_mw", s)?;
            require(
                s <= i,
                &format!("power.standby_mw = {s} is above power.idle_mw = {i}"),
            )?;
        }
        for (field, v) in [
            ("standby_after_ms", self.standby_after_ms),
            ("wake_ms", Some(self.wake_ms)),
            ("wake_mj", Some(self.wake_mj)),
        ] {
            let Some(v) = v else { continue };
            non_negative(field, v)?;
            require(
                self.standby_mw.is_some() || (field != "standby_after_ms" && v == 0.0),
                &format!("power.{field} needs power.standby_mw (the device has no standby state)"),
            )?;
        }
        Ok(())
    }

    /// The standby timer in nanoseconds, if set.
    pub fn standby_after_ns(&self) -> Option<crate::Nanos> {
        self.standby_after_ms.map(ms_to_ns)
    }

    /// The wake-up time in nanoseconds.
    pub fn wake_ns(&self) -> crate::Nanos {
        ms_to_ns(self.wake_ms)
    }

    /// The energy of one wake-up in nanojoules.
    pub fn wake_nj(&self) -> u64 {
        debug_assert!(self.wake_mj.is_finite() && self.wake_mj >= 0.0);
        (self.wake_mj * 1e6).round() as u64
    }
}

/// Milliseconds (as written in specs) to nanoseconds.
fn ms_to_ns(ms: f64) -> crate::Nanos {
    debug_assert!(ms.is_finite() && ms >= 0.0, "{ms} ms");
    (ms * 1e6).round() as crate::Nanos
}

/// The cost model and its parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ModelSpec {
    /// A hard disk: seeks, rotation, zones, caches.
    Hdd(HddParams),
    /// Raw NAND flash: program-once sectors, host-visible erase units.
    Nand(NandParams),
    /// NAND behind a flash translation layer.
    Ftl(FtlParams),
    /// A DRAM SSD: overhead plus transfer.
    Dram(DramParams),
}

impl ModelSpec {
    /// The `kind` the spec names (`"hdd"`, `"nand"`, `"ftl"`, `"dram"`).
    pub fn kind(&self) -> &'static str {
        match self {
            ModelSpec::Hdd(_) => "hdd",
            ModelSpec::Nand(_) => "nand",
            ModelSpec::Ftl(_) => "ftl",
            ModelSpec::Dram(_) => "dram",
        }
    }
}

impl DeviceSpec {
    /// Parses a spec from TOML text; `name` is used when the text has none.
    pub fn from_toml(text: &str, name: &str) -> Result<Self> {
        let mut spec: DeviceSpec =
            toml::from_str(text).map_err(|e| DeviceError::Spec(one_line(&e.to_string())))?;
        if spec.name.is_empty() {
            spec.name = name.to_string();
        }
        spec.power.validate()?;
        let model = spec.build_model()?;
        debug_assert_eq!(
            model.geometry().capacity,
            spec.capacity,
            "the model has the spec's size"
        );
        Ok(spec)
    }

    /// Parses a spec a user wrote: as [`DeviceSpec::from_toml`], and the
    /// fields that say what the device is and where its numbers come from
    /// (`description`, `source`, `power`) must be present and non-empty.
    pub fn from_user_toml(text: &str, name: &str) -> Result<Self> {
        let spec = Self::from_toml(text, name)?;
        let table: toml::Table =
            toml::from_str(text).map_err(|e| DeviceError::Spec(one_line(&e.to_string())))?;
        for field in ["description", "source", "power"] {
            require(
                table.contains_key(field),
                &format!("missing field `{field}`"),
            )?;
        }
        let power = table.get("power").and_then(|p| p.as_table());
        for field in ["active_mw", "idle_mw"] {
            require(
                power.is_some_and(|p| p.contains_key(field)),
                &format!("missing field `power.{field}`"),
            )?;
        }
        require(
            !spec.description.trim().is_empty(),
            "`description` is empty",
        )?;
        require(!spec.source.trim().is_empty(), "`source` is empty")?;
        Ok(spec)
    }

    /// Reads a spec file a user wrote (see [`DeviceSpec::from_user_toml`]).
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| DeviceError::Spec(format!("{}: {e}", path.display())))?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("spec");
        Self::from_user_toml(&text, stem).map_err(|e| match e {
            DeviceError::Spec(m) => DeviceError::Spec(format!("{}: {m}", path.display())),
            other => other,
        })
    }

    /// Builds the cost model, validating the parameters.
    pub fn build_model(&self) -> Result<Box<dyn Model>> {
        if self.capacity == 0 {
            return Err(DeviceError::Spec(
                "capacity must be greater than zero".into(),
            ));
        }
        match &self.model {
            ModelSpec::Hdd(p) => crate::hdd::model(p, self.capacity),
            ModelSpec::Nand(p) => crate::nand::model(p, self.capacity),
            ModelSpec::Ftl(p) => crate::ftl::model(p, self.capacity),
            ModelSpec::Dram(p) => crate::dram::model(p, self.capacity),
        }
    }
}

/// How sizes are read, for help texts and errors.
pub const SIZE_UNITS: &str =
    "KB, MB, GB, TB are powers of 1000; KiB, MiB, GiB, TiB and k, m, g, t powers of 1024";

/// Parses a size: bytes (`4096`), a decimal unit as drives are sold
/// (`300 GB` = 300 × 10^9, `KB`, `MB`, `TB`), or a binary one (`36 GiB` =
/// 36 × 2^30, `KiB`, `MiB`, `TiB`, and the bare letters `4k`, `1m`, `2g`,
/// `1t`, as fio and dd read them). Case does not matter.
pub fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &t[digits.len()..];
    let bare_letter = unit.len() == 1 && !unit.eq_ignore_ascii_case("b");
    let config = if bare_letter {
        parse_size::Config::new().with_binary()
    } else {
        parse_size::Config::new()
    };
    config
        .parse_size(t)
        .map_err(|e| DeviceError::BadInput(format!("invalid size '{s}': {e} ({SIZE_UNITS})")))
}

/// Accepts a size as an integer or a string such as "4k".
pub(crate) fn de_size<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Size {
        N(u64),
        S(String),
    }
    match Size::deserialize(d)? {
        Size::N(n) => Ok(n),
        Size::S(s) => parse_size(&s).map_err(serde::de::Error::custom),
    }
}

fn one_line(s: &str) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    debug_assert!(!line.contains('\n'));
    line
}

/// Fails with a spec error, naming the nearest capacity that fits, unless
/// `capacity` is a whole number of `unit`s (`what` says what a unit is).
pub(crate) fn require_multiple(kind: &str, capacity: u64, unit: u64, what: &str) -> Result<()> {
    debug_assert!(unit > 0, "{kind}: a unit of {unit} bytes");
    let below = capacity / unit * unit;
    require(
        capacity % unit == 0,
        &format!(
            "{kind}: capacity {capacity} B is not a multiple of {what} ({unit} B): \
             the nearest below is {below} B"
        ),
    )
}

/// Fails with a spec error unless `ok`.
pub(crate) fn require(ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(DeviceError::Spec(what.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = "description = \"d\"\nsource = \"s\"\ncapacity = \"1 GiB\"\n\
        power = { active_mw = 9000, idle_mw = 6000 }\n[model]\nkind = \"hdd\"\n\
        rpm = 7200\nseek_avg_ms = 8.5\nmedia_mb_per_s = 100\n";

    fn user(text: &str) -> String {
        match DeviceSpec::from_user_toml(text, "t") {
            Ok(_) => "ok".into(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_user_spec_needs_description_source_and_power() {
        assert_eq!(user(FULL), "ok");
        for (field, line) in [
            ("description", "description = \"d\"\n"),
            ("source", "source = \"s\"\n"),
            ("power", "power = { active_mw = 9000, idle_mw = 6000 }\n"),
        ] {
            let e = user(&FULL.replace(line, ""));
            assert_eq!(e, format!("device spec: missing field `{field}`"));
        }
        let e = user(&FULL.replace(", idle_mw = 6000", ""));
        assert_eq!(e, "device spec: missing field `power.idle_mw`");
        let e = user(&FULL.replace("\"s\"", "\" \""));
        assert_eq!(e, "device spec: `source` is empty");
    }

    #[test]
    fn power_must_be_non_negative_and_active_at_least_idle() {
        let e = user(&FULL.replace("idle_mw = 6000", "idle_mw = -3"));
        assert_eq!(e, "device spec: power.idle_mw = -3 must be a number >= 0");
        let e = user(&FULL.replace("active_mw = 9000", "active_mw = 5000"));
        assert_eq!(
            e,
            "device spec: power.active_mw = 5000 is below power.idle_mw = 6000 \
             (0 means per-operation energies only)"
        );
        // The library parser checks signs too, for specs built in code.
        let e = DeviceSpec::from_toml(&FULL.replace("9000", "-1"), "t").unwrap_err();
        assert!(e.to_string().contains("active_mw = -1"), "{e}");
    }

    fn with_power(power: &str) -> String {
        user(&FULL.replace("active_mw = 9000, idle_mw = 6000", power))
    }

    #[test]
    fn standby_fields_are_optional_and_checked() {
        let p = "active_mw = 9000, idle_mw = 6000";
        assert_eq!(with_power(&format!("{p}, standby_mw = 1000")), "ok");
        let all = ", standby_after_ms = 60000, wake_ms = 7000, wake_mj = 150000";
        assert_eq!(with_power(&format!("{p}, standby_mw = 1000{all}")), "ok");
        // A timer of 0: asleep as soon as idle.
        let zero = ", standby_mw = 10, standby_after_ms = 0";
        assert_eq!(with_power(&format!("{p}{zero}")), "ok");
        for (extra, error) in [
            (
                ", standby_mw = 7000",
                "power.standby_mw = 7000 is above power.idle_mw = 6000",
            ),
            (
                ", standby_mw = -1",
                "power.standby_mw = -1 must be a number >= 0",
            ),
            (
                ", standby_mw = 1000, wake_ms = -2",
                "power.wake_ms = -2 must be a number >= 0",
            ),
            (
                ", standby_mw = 1000, standby_after_ms = nan",
                "power.standby_after_ms = NaN must be a number >= 0",
            ),
            (
                ", standby_after_ms = 1000",
                "power.standby_after_ms needs power.standby_mw (the device has no standby state)",
            ),
            (
                ", wake_mj = 5",
                "power.wake_mj needs power.standby_mw (the device has no standby state)",
            ),
        ] {
            let e = with_power(&format!("{p}{extra}"));
            assert_eq!(e, format!("device spec: {error}"), "{extra}");
        }
    }

    #[test]
    fn unset_standby_fields_are_not_serialised() {
        let spec = DeviceSpec::from_user_toml(FULL, "t").unwrap();
        let json = serde_json::to_string(&spec.power).unwrap();
        assert_eq!(json, r#"{"active_mw":9000.0,"idle_mw":6000.0}"#);
        let p = PowerSpec {
            standby_mw: Some(1000.0),
            standby_after_ms: Some(1.5),
            wake_ms: 7000.0,
            wake_mj: 0.25,
            ..spec.power
        };
        assert_eq!(p.standby_after_ns(), Some(1_500_000));
        assert_eq!(p.wake_ns(), 7_000_000_000);
        assert_eq!(p.wake_nj(), 250_000);
    }

    #[test]
    fn a_bad_size_names_the_value_without_a_spec_prefix() {
        let e = parse_size("abc").unwrap_err().to_string();
        assert!(e.starts_with("invalid size 'abc'"), "{e}");
        assert!(e.contains("GB, TB are powers of 1000"), "{e}");
    }

    /// Drives are sold in decimal units: "300 GB" is 300 × 10^9 bytes, not
    /// GiB; the binary units and fio's bare letters stay binary.
    #[test]
    fn decimal_and_binary_units_are_told_apart() {
        for (text, bytes) in [
            ("300 GB", 300_000_000_000u64),
            ("4 TB", 4_000_000_000_000),
            ("512gb", 512_000_000_000),
            ("128 KB", 128_000),
            ("1 MB", 1_000_000),
            ("36 GiB", 36 << 30),
            ("4 TiB", 4 << 40),
            ("128 KiB", 128 << 10),
            ("4k", 4096),
            ("64m", 64 << 20),
            ("1g", 1 << 30),
            ("2T", 2 << 40),
            ("4096", 4096),
            ("512 B", 512),
        ] {
            assert_eq!(parse_size(text).unwrap(), bytes, "{text}");
        }
        let spec = FULL.replace("\"1 GiB\"", "\"300 GB\"");
        let spec = DeviceSpec::from_user_toml(&spec, "t").unwrap();
        assert_eq!(spec.capacity, 300_000_000_000);
    }
}
