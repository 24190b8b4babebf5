"""Results as pandas DataFrames (pandas is optional: imported on first use)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Union

Rows = Union[Mapping[str, Any], Iterable[Mapping[str, Any]]]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "flashkv.to_frame needs pandas: pip install pandas (or flashkv[pandas])"
        ) from e
    return pandas


def to_frame(rows: Rows) -> Any:
    """A DataFrame of ``rows``: a list of dicts (``Device.profile``,
    ``run_point``), or one dict (``replay``, ``advise``, ``stats()``).
    Nested dicts become dotted columns (``latency.p99_ns``); a row's
    columns keep its field order."""
    pd = _pandas()
    if isinstance(rows, Mapping):
        rows = [rows]
    rows = list(rows)
    if any(isinstance(v, Mapping) for r in rows for v in r.values()):
        return pd.json_normalize(rows)
    return pd.DataFrame.from_records(rows)
