"""flashkv from Python.

Simulated flash, disk and hybrid devices (``Device``), the key-value store
(``Db``), block-trace replay (``replay``), the block-size advisor
(``advise``) and the lab's experiments as grids of points (``points``,
``run_point``, ``sweep`` — locally or on a Dask cluster). Results are lists
of dicts; ``to_frame`` makes a pandas DataFrame of them.

Errors are ``flashkv.Error`` subclasses (see ``flashkv.errors``) with the
command line's one-line messages. Long calls release the GIL, and Ctrl-C
stops them.

pandas, dask and tqdm are imported only when a function needs them.
"""

from ._native import (
    Batch,
    Db,
    Device,
    RangeIter,
    __version__,
    advise,
    experiments,
    points,
    presets,
    replay,
    run_point,
)
from . import errors as _errors
from .errors import (
    Corrupt,
    DeviceError,
    Error,
    InvalidInput,
    LabError,
    MisalignedIO,
    NotAStore,
    OutOfRange,
    SpecError,
    StoreError,
    StoreLocked,
    TraceError,
    UnknownPreset,
)
from .frames import to_frame
from .sweep import grid_points, sweep

__all__ = [
    "Batch",
    "Db",
    "Device",
    "RangeIter",
    "__version__",
    "advise",
    "experiments",
    "points",
    "presets",
    "replay",
    "run_point",
    "grid_points",
    "sweep",
    "to_frame",
] + _errors.__all__
