"""Device("nvme").profile(...) against `flashkv profile` for the same work:
prints the wall time of each (median of --repeat runs) and their ratio.
Not a test: timings depend on the machine. Runs from any directory:

    python python/benchmarks/profile_vs_cli.py            # from the repository's root
    python benchmarks/profile_vs_cli.py --cli ~/.cargo/bin/flashkv
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import flashkv

ROOT = Path(__file__).resolve().parents[2]


def default_cli() -> str:
    """$FLASHKV_BIN, else the workspace's release build, else `flashkv` on PATH."""
    if os.environ.get("FLASHKV_BIN"):
        return os.environ["FLASHKV_BIN"]
    built = ROOT / "target" / "release" / "flashkv"
    if built.exists():
        return str(built)
    return shutil.which("flashkv") or str(built)


p = argparse.ArgumentParser()
p.add_argument("--cli", default=default_cli(),
               help="the flashkv binary, a release build [default: $FLASHKV_BIN, target/release/flashkv, or flashkv on PATH]")
p.add_argument("--ops", type=int, default=200_000)
p.add_argument("--repeat", type=int, default=5)
a = p.parse_args()
if not Path(a.cli).exists():
    sys.exit(f"error: --cli {a.cli}: no such file (build it with `cargo build --release`, or give --cli)")

patterns, blocks, iodepth = "sr,rr,sw,rw,mix", "4k,64k", 4
cmd = [a.cli, "profile", "--device", "nvme", "--patterns", patterns, "--block-sizes", blocks,
       "--ops", str(a.ops), "--iodepth", str(iodepth), "--json"]


def cli_run():
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - t, json.loads(out)


def py_run():
    t = time.perf_counter()
    rows = flashkv.Device("nvme").profile(patterns, blocks.split(","), ops=a.ops, iodepth=iodepth)
    return time.perf_counter() - t, rows


cli_t, py_t = [], []
for _ in range(a.repeat):  # interleaved, as the machine's load drifts
    t, cli_rows = cli_run()
    cli_t.append(t)
    t, py_rows = py_run()
    py_t.append(t)
assert py_rows == cli_rows, "the same work gives the same rows"
c, q = statistics.median(cli_t), statistics.median(py_t)
print(f"work: nvme, {patterns} x {blocks}, {a.ops} ops each, iodepth {iodepth} ({len(py_rows)} runs)")
print(f"flashkv profile (CLI, process included): {c:.3f} s")
print(f"Device('nvme').profile (Python):          {q:.3f} s")
print(f"Python / CLI: {q / c:.3f}")
sys.exit(0)
