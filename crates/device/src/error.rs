use thiserror::Error;

/// Everything a device operation can fail with.
///
/// New variants may come: match with a wildcard arm. An error of a device
/// built on other devices (a hybrid drive) travels as
/// [`DeviceError::Stacked`], still typed: [`DeviceError::stacked`] gets it back.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// The offset or length is not a multiple of the sector size.
    #[error("misaligned I/O: offset {offset} length {len} is not a multiple of the {sector}-byte sector")]
    Misaligned {
        /// Byte offset of the request.
        offset: u64,
        /// Bytes requested.
        len: u64,
        /// The device's sector size.
        sector: u32,
    },
    /// The request reaches past the end of the device.
    #[error("I/O out of range: offset {offset} length {len} exceeds capacity {capacity}")]
    OutOfRange {
        /// Byte offset of the request.
        offset: u64,
        /// Bytes requested.
        len: u64,
        /// The device's capacity in bytes.
        capacity: u64,
    },
    /// Raw NAND: the sector was programmed since its unit was last erased.
    #[error("raw NAND: sector at offset {offset} is already programmed; erase its unit first")]
    AlreadyProgrammed {
        /// Byte offset of the sector.
        offset: u64,
    },
    /// An erase of a unit past the end of the device.
    #[error("erase unit {unit} does not exist (device has {units})")]
    NoSuchUnit {
        /// The unit asked for.
        unit: u64,
        /// Units the device has.
        units: u64,
    },
    /// The device cannot do this operation (erase on a device without
    /// host-visible erase units, trim on a file system without hole punching).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// An impossible device spec; the message names the field.
    #[error("device spec: {0}")]
    Spec(String),
    /// A bad value from the caller that is not part of a spec (a size, a
    /// file too small to hold a sector); the message says which.
    #[error("{0}")]
    BadInput(String),
    /// No preset has this name.
    #[error("unknown device preset '{name}' (known: {known})")]
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// The presets there are, comma separated.
        known: String,
    },
    /// [`crate::FaultDevice`]: power was lost; every call fails until a restart.
    #[error("simulated crash: the device is powered off")]
    Crashed,
    /// [`crate::FaultDevice`]: an I/O error its plan injected.
    #[error("injected I/O error at offset {offset}")]
    Injected {
        /// Byte offset of the failed operation.
        offset: u64,
    },
    /// A latent sector error: the medium cannot return the sector's bytes.
    #[error("unreadable sector at offset {offset} (latent sector error)")]
    Unreadable {
        /// Byte offset of the unreadable sector.
        offset: u64,
    },
    /// A simulator's own state broke one of its invariants: a bug in
    /// flashkv, never the caller's fault.
    /// The message names the model and the invariant that broke.
    #[error("internal error (a flashkv bug): {0}")]
    Internal(String),
    /// The failure of a device stacked on other devices (a hybrid drive),
    /// kept typed: [`DeviceError::stacked`] downcasts it.
    #[error(transparent)]
    Stacked(Box<dyn std::error::Error + Send + Sync + 'static>),
    /// The operating system's error for a real file or device.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl DeviceError {
    /// The stacked device's own error, if this is one of type `E`.
    pub fn stacked<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            DeviceError::Stacked(e) => e.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// A model's broken invariant (see [`DeviceError::Internal`]).
    pub(crate) fn internal(model: &str, what: impl std::fmt::Display) -> Self {
        DeviceError::Internal(format!("{model}: {what}"))
    }
}

/// A device operation's result.
pub type Result<T, E = DeviceError> = std::result::Result<T, E>;
