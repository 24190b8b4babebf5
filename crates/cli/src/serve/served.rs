//! The device behind an export: any [`BlockDevice`], or a hybrid kept as
//! itself so the server can report its cache and write back what it owes.

use flashkv_device::BlockDevice;
use flashkv_hybrid::HybridDevice;

pub enum Served {
    Plain(Box<dyn BlockDevice>),
    Hybrid(Box<HybridDevice>),
}

impl Served {
    pub fn get(&self) -> &dyn BlockDevice {
        match self {
            Served::Plain(d) => &**d,
            Served::Hybrid(h) => &**h,
        }
    }

    pub fn get_mut(&mut self) -> &mut dyn BlockDevice {
        match self {
            Served::Plain(d) => &mut **d,
            Served::Hybrid(h) => &mut **h,
        }
    }

    pub fn hybrid(&self) -> Option<&HybridDevice> {
        match self {
            Served::Hybrid(h) => Some(h),
            Served::Plain(_) => None,
        }
    }

    pub fn hybrid_mut(&mut self) -> Option<&mut HybridDevice> {
        match self {
            Served::Hybrid(h) => Some(h),
            Served::Plain(_) => None,
        }
    }
}
