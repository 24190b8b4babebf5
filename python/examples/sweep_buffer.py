"""Buffer replacement policies × buffer sizes on two devices, swept on Dask
and plotted — a notebook in script form (each `# %%` is a cell).

    python examples/sweep_buffer.py --quick --workers 2 --out policies.png

Runs on a dask.distributed LocalCluster with --workers N (on a cluster:
pass a Client of a dask_jobqueue.SLURMCluster or a Kubernetes cluster to
flashkv.sweep instead), in this process with --workers 0. Dask starts its
workers as new processes that import this file, hence the functions and
the `__main__` guard.
"""

import argparse

import flashkv

# %% The grid: every policy at four buffer sizes (percent of the relation's
# pages) on raw NAND and an NVMe SSD, in-place store, YCSB A (50 % updates).
GRID = {
    "device": ["nand-ipl", "nvme"],
    "store": "in-place",
    "workload": "ycsb-a",
    "percent": [1, 5, 10, 25],
}


# %% Run it: on Dask workers, or here.
def run(workers: int, quick: bool):
    print(f"{len(flashkv.grid_points('buffer', GRID))} points")
    if workers == 0:
        return flashkv.sweep("buffer", GRID, quick=quick, with_params=True)
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            return flashkv.sweep("buffer", GRID, client=client, quick=quick, with_params=True)


# %% The table: estimated runtime against LRU's at the same buffer size.
def against_lru(df):
    lru = df[df.policy == "lru"].set_index(["device", "percent"]).est_ms
    df["vs_lru"] = df.est_ms / lru.loc[list(zip(df.device, df.percent))].to_numpy()
    return df.pivot_table(index=["device", "percent"], columns="policy", values="vs_lru")


# %% The plot: runtime by buffer size, one line per policy, a panel per device.
def plot(df, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, (device, part) in zip(axes, df.groupby("device")):
        for policy, line in part.groupby("policy"):
            ax.plot(line.percent, line.est_ms, marker="o", label=policy)
        ax.set(
            title=f"ycsb-a on {device}, in-place store",
            xlabel="buffer (% of the relation's pages)",
            ylabel="estimated runtime (ms)",
            xscale="log",
            yscale="log",
        )
        ax.set_xticks(sorted(part.percent.unique()))
        ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.grid(True, which="both", alpha=0.3)
    axes[-1].legend(title="policy", bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"plot saved to {out}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="the lab's --quick size (seconds, not minutes)")
    p.add_argument("--workers", type=int, default=2, help="Dask workers on a LocalCluster (0: no Dask)")
    p.add_argument("--out", default="sweep_buffer.png", help="where to save the plot")
    a = p.parse_args()
    df = run(a.workers, a.quick)
    table = against_lru(df)
    print(table.round(2).to_string())
    plot(df, a.out)
    # %% What to expect: on raw NAND, where a dirty eviction costs an erase,
    # some policy beats LRU at every buffer size.
    best = table.loc["nand-ipl"].min(axis=1)
    assert (best < 1.0).all(), f"no policy beats LRU on nand-ipl at some buffer size:\n{best}"


if __name__ == "__main__":
    main()
