//! Experiments as data: every experiment's grid is a list of independent
//! points, each a pure function of (experiment, parameters, seed, quick) →
//! rows, and its report is built from the rows of all its points in grid
//! order. `flashkv lab` runs the points one after another in one process;
//! `--shard i/n` runs a slice of them ([`crate::shard`]) and `lab merge`
//! builds the same report from the slices; Python's `flashkv.sweep` runs
//! them on a Dask cluster.
//!
//! A point's rows are kept as the JSON text its typed rows serialised to,
//! so a row read back from a shard file is the same bytes, and the report
//! built from it the same files.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::lab::LabError;

/// A point's parameters: a JSON object (names are the experiment's).
pub type Params = Map<String, Value>;

/// One point of an experiment's grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Its place in the experiment's grid (rows are reported in this order).
    pub index: usize,
    /// A short readable name, unique in the grid: `nand-ipl/in-place/ycsb-a/1%/lru`.
    pub id: String,
    pub params: Params,
}

/// What a point produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Output {
    /// Its rows, each the JSON of one of the experiment's typed rows.
    pub rows: Vec<Box<RawValue>>,
    /// What else the report needs that is not a row (the hybrid's
    /// per-device times and plot points), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Box<RawValue>>,
}

impl Output {
    /// `rows` as the point's output, without detail.
    pub fn of<T: Serialize>(rows: &[T]) -> Result<Output, LabError> {
        Ok(Output {
            rows: rows.iter().map(raw).collect::<Result<_, _>>()?,
            detail: None,
        })
    }

    /// The rows as JSON values (for `--json` and Python).
    pub fn values(&self) -> Result<Vec<Value>, LabError> {
        self.rows
            .iter()
            .map(|r| serde_json::from_str(r.get()).map_err(data))
            .collect()
    }
}

fn data(e: serde_json::Error) -> LabError {
    LabError::Data(e.to_string())
}

/// `v` as raw JSON text.
pub(crate) fn raw<T: Serialize>(v: &T) -> Result<Box<RawValue>, LabError> {
    serde_json::value::to_raw_value(v).map_err(data)
}

/// Typed parameters as a point's JSON object.
pub(crate) fn params<T: Serialize>(p: &T) -> Params {
    match serde_json::to_value(p) {
        Ok(Value::Object(m)) => m,
        other => unreachable!("parameters serialise to an object, got {other:?}"),
    }
}

/// Builds the grid from (id, typed parameters) in order.
pub(crate) fn grid<T: Serialize>(items: impl IntoIterator<Item = (String, T)>) -> Vec<Point> {
    let points: Vec<Point> = items
        .into_iter()
        .enumerate()
        .map(|(index, (id, p))| Point {
            index,
            id,
            params: params(&p),
        })
        .collect();
    debug_assert!(
        {
            let mut ids: Vec<&str> = points.iter().map(|p| p.id.as_str()).collect();
            ids.sort_unstable();
            ids.windows(2).all(|w| w[0] != w[1])
        },
        "point ids are unique"
    );
    points
}

/// A point's parameters as the experiment's typed parameters; an unknown
/// or missing name or a bad value is [`LabError::Params`].
pub(crate) fn parse<T: DeserializeOwned>(experiment: &str, p: &Params) -> Result<T, LabError> {
    serde_json::from_value(Value::Object(p.clone()))
        .map_err(|e| LabError::Params(format!("{experiment}: {e}")))
}

/// Every point's rows, in order, as the experiment's typed rows.
pub(crate) fn rows<T: DeserializeOwned>(outputs: &[Output]) -> Result<Vec<T>, LabError> {
    outputs
        .iter()
        .flat_map(|o| &o.rows)
        .map(|r| serde_json::from_str(r.get()).map_err(data))
        .collect()
}

/// Every point's detail, in order, where it has one.
pub(crate) fn details<T: DeserializeOwned>(outputs: &[Output]) -> Result<Vec<T>, LabError> {
    outputs
        .iter()
        .filter_map(|o| o.detail.as_ref())
        .map(|d| serde_json::from_str(d.get()).map_err(data))
        .collect()
}

/// A value named in a point's parameters that the experiment does not know.
pub(crate) fn unknown(experiment: &str, what: &str, got: &str, known: &[&str]) -> LabError {
    LabError::Params(format!(
        "{experiment}: unknown {what} '{got}' (known: {})",
        known.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct P {
        device: String,
        percent: f64,
    }

    #[test]
    fn parameters_round_trip_and_refuse_unknown_names() {
        let p = P {
            device: "nvme".into(),
            percent: 5.0,
        };
        let m = params(&p);
        assert_eq!(parse::<P>("x", &m).unwrap(), p);
        let mut bad = m.clone();
        bad.insert("colour".into(), Value::from(1));
        let e = parse::<P>("x", &bad).unwrap_err().to_string();
        assert!(e.contains("unknown field `colour`"), "{e}");
        bad.remove("colour");
        bad.remove("percent");
        let e = parse::<P>("x", &bad).unwrap_err().to_string();
        assert!(e.contains("missing field `percent`"), "{e}");
    }

    #[test]
    fn rows_keep_their_bytes() {
        #[derive(Serialize, Deserialize)]
        struct R {
            z: f64,
            a: u64,
        }
        let o = Output::of(&[R { z: 0.1 + 0.2, a: 7 }]).unwrap();
        let text = serde_json::to_string(&o).unwrap();
        let back: Output = serde_json::from_str(&text).unwrap();
        assert_eq!(back.rows[0].get(), r#"{"z":0.30000000000000004,"a":7}"#);
        let typed: Vec<R> = rows(&[back]).unwrap();
        assert_eq!(typed[0].z, 0.1 + 0.2);
    }
}
