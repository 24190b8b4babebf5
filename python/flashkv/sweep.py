"""Sweeps of the lab's experiments: every point of a grid, run locally or
on a ``dask.distributed`` client, with a progress bar, as one DataFrame.

A point is a pure function of (experiment, parameters, seed, quick) → rows,
so a sweep returns the same rows wherever its points ran: the rows of the
experiment's whole grid are exactly those ``flashkv lab EXP --json`` prints
for the same ``--seed`` and ``--quick``.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _native

Params = Dict[str, Any]
Grid = Union[None, Mapping[str, Any], Sequence[Mapping[str, Any]]]


def grid_points(experiment: str, grid: Grid = None, *, quick: bool = False) -> List[Params]:
    """The parameters of every point a sweep of ``grid`` runs, in order.

    - ``None``: the experiment's own grid (``flashkv lab EXP --points``).
    - a dict ``{name: value or list of values}``: every combination; a
      name not given takes each value the experiment's own grid uses (in
      the order it first uses them), the last name varying fastest.
    - a list of dicts: exactly those points.
    """
    own = [p["params"] for p in _native.points(experiment, quick)]
    if grid is None:
        return own
    if not isinstance(grid, Mapping):
        return [dict(p) for p in grid]
    names: List[str] = []
    for p in own:
        names.extend(n for n in p if n not in names)
    unknown = [n for n in grid if n not in names]
    if unknown:
        from .errors import InvalidInput

        raise InvalidInput(
            f"{experiment}: unknown parameter {unknown[0]!r} (known: {', '.join(names)})"
        )
    axes: List[List[Any]] = []
    for n in names:
        if n in grid:
            v = grid[n]
            axes.append(list(v) if isinstance(v, (list, tuple, range)) else [v])
        else:
            seen: List[Any] = []
            for p in own:
                if n in p and p[n] not in seen:
                    seen.append(p[n])
            axes.append(seen)
    return [
        dict(zip(names, combo))
        for combo in itertools.product(*axes)
    ]


def _run_point(experiment: str, params: Params, quick: bool, seed: int) -> List[Params]:
    """One point, where a worker runs it (importable, so Dask pickles it by name)."""
    return _native.run_point(experiment, params, quick, seed)


class _Bar:
    """tqdm on a terminal where installed, else a line per tenth on stderr
    (as the command line's progress)."""

    def __init__(self, total: int, label: str, on: bool) -> None:
        self.total, self.label, self.done, self.tenths = total, label, 0, 0
        self.bar = None
        if on and sys.stderr.isatty():
            try:
                from tqdm.auto import tqdm

                self.bar = tqdm(total=total, desc=label, unit="point")
            except ImportError:
                self.bar = None
        self.on = on

    def update(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.on and self.done * 10 // max(self.total, 1) > self.tenths:
            self.tenths = self.done * 10 // max(self.total, 1)
            print(f"{self.label}: {self.done}/{self.total} points", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _local(experiment: str, pts: List[Params], quick: bool, seed: int, bar: _Bar) -> List[List[Params]]:
    out = []
    for p in pts:
        out.append(_run_point(experiment, p, quick, seed))
        bar.update()
    return out


def _dask(client: Any, experiment: str, pts: List[Params], quick: bool, seed: int, bar: _Bar) -> List[List[Params]]:
    from dask.distributed import as_completed

    n = len(pts)
    futures = client.map(
        _run_point,
        [experiment] * n,
        pts,
        [quick] * n,
        [seed] * n,
        key=[f"flashkv-{experiment}-{seed}-{int(quick)}-{i}" for i in range(n)],
    )
    where = {f.key: i for i, f in enumerate(futures)}
    out: List[Optional[List[Params]]] = [None] * n
    try:
        for f in as_completed(futures):
            out[where[f.key]] = f.result()
            bar.update()
    except BaseException:
        client.cancel(futures)
        raise
    done = [o for o in out if o is not None]
    assert len(done) == n, "every point's future completed"
    return done


def sweep(
    experiment: str,
    grid: Grid = None,
    client: Any = None,
    *,
    quick: bool = False,
    seed: int = 1,
    progress: bool = True,
    with_params: bool = False,
    frame: bool = True,
) -> Any:
    """Runs every point of ``grid`` (see ``grid_points``) of the lab
    experiment ``experiment`` and returns their rows, in grid order, as a
    pandas DataFrame (``frame=False``: a list of dicts).

    ``client`` a ``dask.distributed.Client``: the points run on its workers
    (a ``LocalCluster``, a ``dask_jobqueue.SLURMCluster``, a Kubernetes
    cluster); ``None``: one after another in this process. ``with_params``
    adds each point's parameters as columns where a row has no column of
    that name (the buffer experiment's ``percent``). Ctrl-C stops the sweep
    (on a cluster its remaining points are cancelled).
    """
    pts = grid_points(experiment, grid, quick=quick)
    bar = _Bar(len(pts), f"flashkv {experiment}", progress)
    try:
        if client is None:
            per_point = _local(experiment, pts, quick, seed, bar)
        else:
            per_point = _dask(client, experiment, pts, quick, seed, bar)
    finally:
        bar.close()
    rows: List[Params] = []
    for p, rs in zip(pts, per_point):
        for r in rs:
            if with_params:
                r = {**r, **{k: v for k, v in p.items() if k not in r}}
            rows.append(r)
    if not frame:
        return rows
    from .frames import to_frame

    return to_frame(rows)


