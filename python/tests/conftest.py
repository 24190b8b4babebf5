"""Shared fixtures: the `flashkv` command line the bindings are held to."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli() -> Path:
    """The flashkv binary: $FLASHKV_BIN, else the workspace's ci-profile
    build (made here if missing)."""
    if os.environ.get("FLASHKV_BIN"):
        return Path(os.environ["FLASHKV_BIN"])
    path = ROOT / "target" / "ci" / "flashkv"
    if not path.exists():
        subprocess.run(
            ["cargo", "build", "--profile", "ci", "-q", "-p", "flashkv"], cwd=ROOT, check=True
        )
    return path


def run_cli(cli: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([str(cli), *args], capture_output=True, text=True)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def cli_json(cli: Path, *args: str):
    return json.loads(run_cli(cli, *args).stdout)


def cli_error(cli: Path, *args: str) -> str:
    """The one-line message a failing command prints (without `error: `)."""
    p = run_cli(cli, *args, ok=False)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("error: ")
    return lines[0][len("error: ") :]
