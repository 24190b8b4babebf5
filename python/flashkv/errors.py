"""The exceptions flashkv raises. Messages are the one-line messages the
``flashkv`` command line prints for the same error.

``InvalidInput`` is what the command line exits 2 for (a bad argument); it is
also a ``ValueError``.
"""


class Error(Exception):
    """Base of every flashkv error."""


class InvalidInput(Error, ValueError):
    """A bad argument: an unknown name, a bad size, a parameter out of range."""


class UnknownPreset(InvalidInput):
    """No device preset has that name (the message lists the known ones)."""


class SpecError(InvalidInput):
    """A device spec file is malformed, has an unknown or missing field, or an impossible value."""


class MisalignedIO(InvalidInput):
    """An offset or length is not a multiple of the device's sector."""


class OutOfRange(InvalidInput):
    """I/O past the end of the device."""


class TraceError(InvalidInput):
    """A trace file that cannot be read: a malformed line (named by number), no records."""


class DeviceError(Error):
    """A device operation failed while running (raw NAND written twice without an erase, an I/O error)."""


class StoreError(Error):
    """The key-value store refused or failed an operation."""


class NotAStore(StoreError):
    """The file or device holds no flashkv store (nothing was written to it)."""


class StoreLocked(StoreError):
    """Another open Db, in this process or another, holds the store."""


class Corrupt(StoreError):
    """A checksum or format version did not match: the store is damaged."""


class LabError(Error):
    """A lab point failed (writing results, built-in data)."""


__all__ = [
    "Error",
    "InvalidInput",
    "UnknownPreset",
    "SpecError",
    "MisalignedIO",
    "OutOfRange",
    "TraceError",
    "DeviceError",
    "StoreError",
    "NotAStore",
    "StoreLocked",
    "Corrupt",
    "LabError",
]
