//! NAND behind a flash translation layer (an SSD or USB stick). (Being written.)

use serde::{Deserialize, Serialize};

use crate::{DeviceError, Model, Result};

/// How the FTL maps logical to physical flash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FtlMapping {
    Page,
    Block,
}

/// Parameters of an FTL device.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FtlParams {
    pub mapping: FtlMapping,
}

pub(crate) fn model(_p: &FtlParams, _capacity: u64) -> Result<Box<dyn Model>> {
    Err(DeviceError::Unsupported("ftl model not written yet"))
}
