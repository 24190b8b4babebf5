//! Fault injection. (Being written.)
pub struct FaultDevice;
pub struct FaultPlan;
