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
