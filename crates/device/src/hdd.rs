//! Hard disk model. (Being written: seek curve, rotation from the virtual
//! clock, media rate, overhead, read-ahead track buffer, write-back cache.)

use serde::{Deserialize, Serialize};

use crate::{DeviceError, Model, Result};

/// Parameters of a hard disk.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HddParams {
    pub rpm: f64,
    pub seek_avg_ms: f64,
    pub media_mb_per_s: f64,
}

pub(crate) fn model(_p: &HddParams, _capacity: u64) -> Result<Box<dyn Model>> {
    Err(DeviceError::Unsupported("hdd model not written yet"))
}
