"""The lab's points from Python, local sweeps, frames, a lazy import."""

import os
import subprocess
import sys

import pytest

import flashkv
from conftest import ROOT, cli_json


@pytest.fixture(scope="session")
def buffer_rows(cli, tmp_path_factory):
    """`flashkv lab buffer --quick --json` (seed 1), run once."""
    out = tmp_path_factory.mktemp("lab")
    return cli_json(cli, "lab", "buffer", "--quick", "--json", "--out", str(out / "results"))["buffer"]


def test_points_are_the_cli_points(cli):
    assert flashkv.experiments() == [
        "seed000", "seed004", "ipl", "buffer", "advisor", "hybrid", "sim-scale", "ssd-internals",
        "placement",
    ]
    for quick in (False, True):
        args = ["lab", "--points", "--json"] + (["--quick"] if quick else [])
        want = cli_json(cli, *args)
        got = [
            {"experiment": e, **p} for e in flashkv.experiments() for p in flashkv.points(e, quick)
        ]
        assert got == want


def test_a_point_is_its_rows_of_the_lab_run(buffer_rows):
    pts = flashkv.points("buffer", True)
    for i in (0, 97, 447):
        assert flashkv.run_point("buffer", pts[i]["params"], quick=True) == [buffer_rows[i]]


def test_bad_points_are_invalid_input():
    p = dict(flashkv.points("buffer")[0]["params"])
    with pytest.raises(flashkv.InvalidInput, match="unknown policy 'mru'"):
        flashkv.run_point("buffer", {**p, "policy": "mru"}, quick=True)
    with pytest.raises(flashkv.InvalidInput, match="unknown field `colour`"):
        flashkv.run_point("buffer", {**p, "colour": 1}, quick=True)
    with pytest.raises(flashkv.InvalidInput, match="missing field `percent`"):
        flashkv.run_point("buffer", {k: v for k, v in p.items() if k != "percent"}, quick=True)
    with pytest.raises(flashkv.InvalidInput, match=r"percent 0 is not in \(0, 100\]"):
        flashkv.run_point("buffer", {**p, "percent": 0}, quick=True)
    with pytest.raises(flashkv.UnknownPreset):
        flashkv.run_point("advisor", {"device": "floppy"})
    with pytest.raises(flashkv.InvalidInput, match="unknown experiment 'tpc'"):
        flashkv.points("tpc")


def test_grids_expand_as_documented():
    own = flashkv.grid_points("buffer")
    assert own == [p["params"] for p in flashkv.points("buffer")]
    g = flashkv.grid_points("buffer", {"device": "nvme", "policy": ["lru", "cflru"], "percent": [5, 50]})
    assert len(g) == 1 * 4 * 2 * 2 * 2  # percent, policy, store, workload
    assert {p["device"] for p in g} == {"nvme"} and {p["percent"] for p in g} == {5, 50}
    assert g[0] == {"device": "nvme", "percent": 5, "policy": "lru", "store": "in-place", "workload": "ycsb-a"}
    assert flashkv.grid_points("advisor", [{"device": "nvme"}]) == [{"device": "nvme"}]
    with pytest.raises(flashkv.InvalidInput, match="unknown parameter 'colour'"):
        flashkv.grid_points("buffer", {"colour": ["red"]})


def test_a_local_sweep_is_the_lab_rows(buffer_rows):
    grid = {"device": "nand-ipl", "store": "ipl", "workload": "h3", "percent": [1, 25]}
    df = flashkv.sweep("buffer", grid, quick=True, progress=False, with_params=True)
    assert len(df) == 2 * 7
    want = [r for r in buffer_rows if r["device"] == "nand-ipl" and r["store"] == "ipl" and r["workload"] == "h3"]
    want = [r for r in want if r["buffer_pages"] in set(df["buffer_pages"])]
    got = df.drop(columns=["percent"]).to_dict("records")
    order = lambda r: (r["buffer_pages"], r["policy"])  # noqa: E731
    assert sorted(got, key=order) == sorted(want, key=order)
    assert sorted(set(df["percent"])) == [1, 25]


def test_frames():
    rows = flashkv.Device("nvme").profile(["rr"], [4096, 8192], ops=100)
    df = flashkv.to_frame(rows)
    assert list(df.columns)[:3] == ["device", "pattern", "block_size"] and len(df) == 2
    stats = flashkv.to_frame(flashkv.Device("nvme").stats())
    assert len(stats) == 1 and "host_reads" in stats.columns


def test_import_loads_neither_pandas_nor_dask():
    code = "import flashkv, sys; print(sorted(m for m in ('pandas', 'dask', 'distributed', 'tqdm') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_profile_benchmark_runs_from_the_repository_root(cli):
    """The README runs `python python/benchmarks/profile_vs_cli.py` from the root."""
    env = dict(os.environ, FLASHKV_BIN=str(cli))
    p = subprocess.run(
        [sys.executable, "python/benchmarks/profile_vs_cli.py", "--ops", "200", "--repeat", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert p.returncode == 0, p.stderr
    assert "Python / CLI:" in p.stdout
