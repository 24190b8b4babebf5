use thiserror::Error;

/// Everything a device operation can fail with.
#[derive(Debug, Error)]
pub enum DeviceError {
    #[error("misaligned I/O: offset {offset} length {len} is not a multiple of the {sector}-byte sector")]
    Misaligned { offset: u64, len: u64, sector: u32 },
    #[error("I/O out of range: offset {offset} length {len} exceeds capacity {capacity}")]
    OutOfRange {
        offset: u64,
        len: u64,
        capacity: u64,
    },
    #[error("raw NAND: sector at offset {offset} is already programmed; erase its unit first")]
    AlreadyProgrammed { offset: u64 },
    #[error("erase unit {unit} does not exist (device has {units})")]
    NoSuchUnit { unit: u64, units: u64 },
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    #[error("device spec: {0}")]
    Spec(String),
    /// A bad value from the caller that is not part of a spec (a size, a
    /// file too small to hold a sector); the message says which.
    #[error("{0}")]
    BadInput(String),
    #[error("unknown device preset '{name}' (known: {known})")]
    UnknownPreset { name: String, known: String },
    #[error("simulated crash: the device is powered off")]
    Crashed,
    #[error("injected I/O error at offset {offset}")]
    Injected { offset: u64 },
    /// A latent sector error: the medium cannot return the sector's bytes.
    #[error("unreadable sector at offset {offset} (latent sector error)")]
    Unreadable { offset: u64 },
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = DeviceError> = std::result::Result<T, E>;
