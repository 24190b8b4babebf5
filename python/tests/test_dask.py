"""The sweep of the buffer experiment on a two-worker LocalCluster returns
exactly the rows of `flashkv lab buffer --json` (same seed, --quick)."""

import pytest

import flashkv
from conftest import cli_json

distributed = pytest.importorskip("dask.distributed")


def test_buffer_sweep_on_a_local_cluster_is_the_lab_run(cli, tmp_path):
    want = cli_json(cli, "lab", "buffer", "--quick", "--seed", "7", "--json", "--out", str(tmp_path / "r"))["buffer"]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            df = flashkv.sweep("buffer", client=client, quick=True, seed=7, progress=False)
            assert len(client.scheduler_info()["workers"]) == 2
    assert len(df) == 448
    assert df.to_dict("records") == want


def test_the_documented_local_cluster_snippet_runs_as_a_script(tmp_path):
    """The docs' LocalCluster example, pasted into a file and run as a
    script, must work (Dask's worker processes import the script again)."""
    from conftest import ROOT
    import re
    import subprocess
    import sys

    blocks = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        blocks += [b for b in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S) if "LocalCluster(" in b]
    assert blocks, "the docs show a LocalCluster sweep"
    for i, code in enumerate(blocks):
        script = tmp_path / f"snippet{i}.py"
        script.write_text(code)
        p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
        assert "lru" in p.stdout.lower(), p.stdout
