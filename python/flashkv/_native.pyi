"""Type stubs of flashkv's native module (Rust, via PyO3).

Every function raises a ``flashkv.Error`` subclass (``flashkv.errors``) with
the command line's one-line message; bad input is ``InvalidInput`` (a
``ValueError``): ``UnknownPreset``, ``SpecError``, ``MisalignedIO``,
``OutOfRange``, ``TraceError``. Long calls release the GIL; Ctrl-C stops
``Device.profile`` and ``replay`` mid-run and a sweep between points.
"""

from os import PathLike
from typing import Any, Dict, Iterator, List, Literal, Optional, Sequence, Tuple, TypedDict, Union

__version__: str

Size = Union[int, str]
"""Bytes, or a string such as "4k", "64 MiB", "1g"."""
Bytes = Union[bytes, bytearray, str]
"""A key or value; str is taken as UTF-8."""
StrPath = Union[str, "PathLike[str]"]
Pattern = Literal["sr", "rr", "sw", "rw", "mix"]

class Completion(TypedDict):
    start_ns: int
    end_ns: int
    energy_nj: int

class ProfileRow(TypedDict):
    device: str
    pattern: str
    block_size: int
    iodepth: int
    ops: int
    iops: float
    mb_per_s: float
    mean_latency_us: float
    p99_latency_us: float
    p50_latency_us: float
    p95_latency_us: float
    p999_latency_us: float
    max_latency_us: float
    energy_uj_per_op: float
    erases: int

class Point(TypedDict):
    index: int
    id: str
    params: Dict[str, Any]

def presets() -> List[str]:
    """Device preset names, as ``flashkv devices`` lists them."""

class Device:
    """A simulated device: ``Device("nvme")``, ``Device(spec="my.toml")`` or
    ``Device(hybrid=("ssd-lowend", "hdd-7200"))``. Its data is stored for
    real; every operation is costed in virtual time and energy.

    Raises ``UnknownPreset``, ``SpecError`` (a bad spec file), ``InvalidInput``.
    """

    def __init__(
        self,
        preset: Optional[str] = None,
        *,
        spec: Optional[StrPath] = None,
        hybrid: Optional[Tuple[str, str]] = None,
        capacity: Optional[Size] = None,
    ) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def capacity(self) -> int: ...
    @property
    def sector_size(self) -> int: ...
    @property
    def erase_unit(self) -> Optional[int]:
        """Bytes of an erase unit on raw NAND (the host erases), else None."""
    @property
    def clock_ns(self) -> int:
        """The device's virtual clock."""
    def read(self, offset: int, length: int) -> bytes:
        """Raises ``MisalignedIO``, ``OutOfRange``."""
    def write(self, offset: int, data: Bytes) -> Completion:
        """Raises ``MisalignedIO``, ``OutOfRange``, ``DeviceError`` (raw NAND
        written twice without an erase), ``StoreError`` (a Db is open on it)."""
    def trim(self, offset: int, length: int) -> Completion: ...
    def flush(self) -> Completion: ...
    def erase(self, unit: int) -> Completion:
        """Erases erase unit ``unit`` (raw NAND only)."""
    def stats(self) -> Dict[str, Any]:
        """Counters since the device was made (host reads/writes and bytes,
        NAND page reads/programs, erases, GC moves, busy time, energy); a
        hybrid adds ``hybrid``, ``ssd`` and ``hdd``."""
    def profile(
        self,
        patterns: Union[str, Sequence[Pattern], None] = None,
        block_sizes: Optional[Sequence[Size]] = None,
        ops: int = 2000,
        iodepth: int = 1,
        span: Optional[Size] = None,
        seed: int = 1,
    ) -> List[ProfileRow]:
        """Each pattern (default sr, rr, sw, rw) at each block size (default
        4k..1m) on a fresh copy of this device's model, as ``flashkv
        profile --json`` rows. This device is untouched."""

class Db:
    """The key-value store, in a file or on a ``Device``.

    Raises ``NotAStore`` (a file or device without a flashkv store; nothing
    is written), ``StoreLocked``, ``Corrupt``, ``StoreError``, ``InvalidInput``.
    """

    @staticmethod
    def open(
        target: Union[StrPath, Device],
        *,
        store: Optional[Literal["in-place", "ipl", "ipl-shared"]] = None,
        create: bool = True,
        read_only: bool = False,
        buffer_pages: Optional[int] = None,
        policy: str = "clock",
        wal: bool = True,
        sync: bool = False,
        max_size: Optional[Size] = None,
    ) -> "Db":
        """A file is made into a store if missing or empty (unless
        ``create=False``); a Device if blank. ``policy``: clock (the engine's default), lru, cflru,
        cfdc, lru-wsr, fab, arc."""
    def get(self, key: Bytes) -> Optional[bytes]: ...
    def put(self, key: Bytes, value: Bytes) -> None: ...
    def delete(self, key: Bytes) -> bool:
        """Whether the key was there."""
    def batch(self) -> "Batch": ...
    def range(
        self,
        start: Optional[Bytes] = None,
        end: Optional[Bytes] = None,
        *,
        prefix: Optional[Bytes] = None,
        reverse: bool = False,
    ) -> "RangeIter":
        """Pairs with start <= key < end, or keys starting with prefix."""
    def flush(self) -> None:
        """Makes every write so far durable."""
    def checkpoint(self) -> None: ...
    def stats(self) -> Dict[str, Any]: ...
    def close(self) -> None:
        """Checkpoints and closes; a Device it was on can be reopened."""
    @property
    def closed(self) -> bool: ...
    def __enter__(self) -> "Db": ...
    def __exit__(self, exc_type: Any = None, exc: Any = None, tb: Any = None) -> bool: ...

class Batch:
    """Puts and deletes applied atomically by ``commit()`` or at the end of
    a ``with`` block that raised nothing (discarded if it raised)."""

    def put(self, key: Bytes, value: Bytes) -> None: ...
    def delete(self, key: Bytes) -> None: ...
    def commit(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> "Batch": ...
    def __exit__(self, exc_type: Any = None, exc: Any = None, tb: Any = None) -> bool: ...

class RangeIter(Iterator[Tuple[bytes, bytes]]):
    """Pairs in key order (or reversed), read 64 at a time."""

    def __iter__(self) -> "RangeIter": ...
    def __next__(self) -> Tuple[bytes, bytes]: ...

def replay(
    trace: StrPath,
    format: Literal["msr", "spc", "umass", "disksim", "blkparse"],
    device: Union[Device, str],
    *,
    time_unit: Optional[Literal["ns", "us", "ms", "s"]] = None,
    device_map: Optional[str] = None,
    back_to_back: bool = False,
    limit: Optional[int] = None,
) -> Dict[str, Any]:
    """Replays a block trace on ``device`` (whose state it changes) or a
    fresh preset; the report of ``flashkv replay --json``. Raises
    ``TraceError`` naming a malformed line."""

def advise(
    device: Union[Device, str, None] = None,
    *,
    profile: Union[Sequence[ProfileRow], StrPath, None] = None,
    file_size: Optional[Size] = None,
    page_size: Optional[Size] = None,
    iodepth: Optional[int] = None,
    ops: Optional[int] = None,
    device_usd: float = 100.0,
    ram_usd_per_gb: float = 3.0,
) -> Dict[str, Any]:
    """``flashkv advise --json`` for a model (profiled in simulation) or a
    measured profile."""

def experiments() -> List[str]:
    """The lab's experiments, in the order ``flashkv lab`` runs them."""

def points(experiment: str, quick: bool = False) -> List[Point]:
    """The experiment's grid (``flashkv lab EXP --points --json``)."""

def run_point(experiment: str, params: Dict[str, Any], quick: bool = False, seed: int = 1) -> List[Dict[str, Any]]:
    """One point's rows, as ``flashkv lab EXP --json`` prints them."""
