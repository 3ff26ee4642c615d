"""Whole-run sweep on Dask (routepack.run) at DeepSeek-V3's shape: a synthetic run of verl batches
(.npz, routed_experts int16 [B, S, 61 decoder layers, top-8] over 256 experts, MoE layers 3-60, with
attention_mask), swept with 1 and 2 worker processes for one chain and two independent chains (two
topologies, EP 64), reporting steps per second, the peak RSS of each worker above an idle worker,
one step's counts, and the client's RSS after each step.

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_cluster.py --dir /tmp/bench-run \
        [--steps 40 --batch 1024 --seq 480]   # the issue's size: 40 x 0.48 GB on disk (19.3 GB)
    ... --configs 1x1,2x2 --sweep-steps 8 [--lookahead N]   # memory only: 8 steps of the run

docs/cluster-runs.md ("Measured") gives the numbers of one run.

Not run by ctest (a benchmark, never a timed unit test)."""

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

MODEL = {"experts": 256, "top_k": 8, "num_hidden_layers": 61, "moe_layers": list(range(3, 61))}


def write_run(folder, steps, batch, seq, seed=0):
    """`steps` verl batches; each token's top-8 are distinct experts (one per group of 32, at a
    geometric offset from a per-step hot expert of the group); lengths uniform in seq/4..seq,
    left-padded. The offsets are drawn once and reused with each step's own hot experts and sample
    order (drawing 10^8 geometric variates per step would take longer than the sweeps)."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    off = None
    for s in range(steps):
        path = os.path.join(folder, f"step-{s + 1}.npz")
        if os.path.exists(path):
            continue
        if off is None:
            off = np.minimum(rng.geometric(0.15, size=(batch, seq, 61, 8)) - 1, 31).astype(np.uint8)
            base_lengths = rng.integers(seq // 4, seq + 1, size=batch)
        order = rng.permutation(batch)
        lengths = base_lengths[order]
        mask = (np.arange(seq)[None, :] >= (seq - lengths)[:, None]).astype(np.int64)
        skew = rng.integers(0, 32, size=(61, 8)).astype(np.uint8)
        routes = ((skew[None, None] + off[order]) % 32).astype(np.int16)
        routes += (np.arange(8, dtype=np.int16) * 32)[None, None, None, :]
        routes[mask == 0] = 0
        np.savez(path, routed_experts=routes, attention_mask=mask)
        del routes


def topology(path, dp_slots, cap):
    with open(path, "w") as f:
        json.dump({"ep_ranks": 64, "dp_slots": dp_slots, "token_cap": cap,
                   "attention_stages": [{"name": "mla", "alpha": 1.0, "beta": 1.0}]}, f)
    return path


def _status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def peak_rss_mb():
    """This process's peak RSS since start or since reset_peak_rss() (VmHWM), MB. Not ru_maxrss: a
    process forked from this one inherits its high-water mark there (a worker would report the
    client's peak of writing the run)."""
    return _status_mb("VmHWM")


def reset_peak_rss():
    """Resets VmHWM to the current RSS (Linux >= 4.0: "5" into /proc/self/clear_refs); returns it, MB."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return rss_mb()


def rss_mb():
    """This process's current RSS (VmRSS), MB."""
    return _status_mb("VmRSS")


def sweep_once(run, topologies, workers, out, budgets, lookahead=None):
    """One sweep of `run` (a folder or a list of step paths) on a fresh LocalCluster of `workers`
    processes: steps/s, each worker's peak RSS above its idle RSS, the client's RSS along the steps."""
    from distributed import Client, LocalCluster

    import routepack.run as rr

    cluster = LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=":0")
    client = Client(cluster)
    client_rss = []  # the client's RSS after each finished step (all chains)
    try:
        idle = client.run(reset_peak_rss)
        t0 = time.perf_counter()
        summary = rr.sweep(client, run, model=MODEL, topologies=topologies, out=out, seed=7, budgets=budgets,
                           lookahead=lookahead,
                           progress=lambda c, w, st: client_rss.append(rss_mb()))
        wall = time.perf_counter() - t0
        peak = client.run(peak_rss_mb)
    finally:
        client.close()
        cluster.close()
    assert summary["failed"] == [], summary["failed"]
    planner = sum(x["planner_s"] for x in summary["lines"])
    n = len(client_rss)
    return {"workers": workers, "chains": len(topologies), "steps": summary["steps"], "wall_s": wall,
            "steps_per_s": summary["steps"] * len(topologies) / wall, "planner_s_sum": planner,
            "worker_idle_rss_mb": sorted(idle.values()),
            "worker_peak_above_idle_mb": sorted(peak[a] - idle[a] for a in peak),
            "client_rss_mb_at": {k: client_rss[k - 1] for k in sorted({1, n // 4, n // 2, 3 * n // 4, n}) if k > 0}}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--seq", type=int, default=480)
    p.add_argument("--dp-slots", type=int, default=64)
    p.add_argument("--cap", type=int, default=8192)
    p.add_argument("--budgets", default="{}", help="planner budgets JSON (default: the planner's)")
    p.add_argument("--configs", default="1x1,2x1,1x2,2x2", help="sweeps to run: WORKERSxCHAINS, comma-separated")
    p.add_argument("--sweep-steps", type=int, default=0, help="sweep only the first N steps (default: all)")
    p.add_argument("--lookahead", type=int, default=0, help="steps read ahead (default: routepack.run's, workers + 1)")
    args = p.parse_args()
    run = os.path.join(args.dir, "run")
    t0 = time.perf_counter()
    write_run(run, args.steps, args.batch, args.seq)
    disk = sum(os.path.getsize(os.path.join(run, f)) for f in os.listdir(run))
    print(f"run: {args.steps} steps x {args.batch} samples x {args.seq} tokens, 58 MoE layers x 256 experts, "
          f"top-8: {disk / 1e9:.2f} GB on disk (written in {time.perf_counter() - t0:.1f} s); one step's counts "
          f"{args.batch * 58 * 256 * 4 / 1e6:.1f} MB (int32 [N, 58, 256])", flush=True)
    topos = [topology(os.path.join(args.dir, "ep64-a.json"), args.dp_slots, args.cap),
             topology(os.path.join(args.dir, "ep64-b.json"), args.dp_slots // 2, args.cap * 2)]
    budgets = json.loads(args.budgets)
    steps = run
    if args.sweep_steps:
        steps = [os.path.join(run, f"step-{k + 1}.npz") for k in range(args.sweep_steps)]
    before = reset_peak_rss()
    for config in args.configs.split(","):
        workers, chains = (int(x) for x in config.split("x"))
        out = os.path.join(args.dir, f"out-{chains}-{workers}")
        shutil.rmtree(out, ignore_errors=True)
        r = sweep_once(steps, topos[:chains], workers, out, budgets, args.lookahead or None)
        print(json.dumps(r), flush=True)
    print(f"client peak RSS during the sweeps {peak_rss_mb():.0f} MB (RSS before them {before:.0f} MB)")


if __name__ == "__main__":
    sys.exit(main())
