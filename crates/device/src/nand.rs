//! Raw NAND flash (no FTL). (Being written.)

use serde::{Deserialize, Serialize};

use crate::{BlockDevice, Completion, DeviceError, Model, Result};

/// Parameters of raw NAND flash.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NandParams {
    pub read_us: f64,
    pub program_us: f64,
    pub erase_us: f64,
}

pub(crate) fn model(_p: &NandParams, _capacity: u64) -> Result<Box<dyn Model>> {
    Err(DeviceError::Unsupported("nand model not written yet"))
}

/// Writes `buf` at `offset` on a program-once device as the conventional
/// in-place update: read the whole erase unit, erase it, rewrite it with the
/// new bytes. On other devices it is a plain write.
pub fn update_in_place(dev: &mut dyn BlockDevice, offset: u64, buf: &[u8]) -> Result<Completion> {
    dev.write(offset, buf)
}
