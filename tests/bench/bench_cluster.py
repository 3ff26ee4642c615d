"""Whole-run sweep on Dask (routepack.run) at DeepSeek-V3's shape: a synthetic run of verl batches
(.npz, routed_experts int16 [B, S, 61 decoder layers, top-8] over 256 experts, MoE layers 3-60, with
attention_mask), swept with 1 and 2 worker processes for one chain and two independent chains (two
topologies, EP 64), reporting steps per second, the peak RSS of each worker above an idle worker,
one step's counts, and the client's peak RSS.

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_cluster.py --dir /tmp/bench-run \
        [--steps 40 --batch 1024 --seq 512]   # the issue's size (about 40 x 0.5 GB on disk)

Not run by ctest (a benchmark, never a timed unit test)."""

import argparse
import json
import os
import resource
import shutil
import sys
import time

import numpy as np

MODEL = {"experts": 256, "top_k": 8, "num_hidden_layers": 61, "moe_layers": list(range(3, 61))}


def write_run(folder, steps, batch, seq, seed=0):
    """`steps` verl batches; each token's top-8 are distinct experts (one per group of 32, skewed by a
    per-step hot set); lengths uniform in seq/4..seq, left-padded."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    for s in range(steps):
        path = os.path.join(folder, f"step-{s + 1}.npz")
        if os.path.exists(path):
            continue
        lengths = rng.integers(seq // 4, seq + 1, size=batch)
        mask = (np.arange(seq)[None, :] >= (seq - lengths)[:, None]).astype(np.int64)
        skew = rng.integers(0, 32, size=(61, 8))
        off = np.minimum(rng.geometric(0.15, size=(batch, seq, 61, 8)) - 1, 31)
        routes = ((np.arange(8)[None, None, None, :] * 32 + (skew[None, None] + off) % 32)).astype(np.int16)
        routes[mask == 0] = 0
        np.savez(path, routed_experts=routes, attention_mask=mask)


def topology(path, dp_slots, cap):
    with open(path, "w") as f:
        json.dump({"ep_ranks": 64, "dp_slots": dp_slots, "token_cap": cap,
                   "attention_stages": [{"name": "mla", "alpha": 1.0, "beta": 1.0}]}, f)
    return path


def peak_rss_mb():
    """This process's peak RSS (VmHWM), MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def rss_mb():
    """This process's current RSS (VmRSS), MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def sweep_once(run, topologies, workers, out, budgets):
    from distributed import Client, LocalCluster

    import routepack.run as rr

    cluster = LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=":0")
    client = Client(cluster)
    try:
        idle = client.run(rss_mb)
        t0 = time.perf_counter()
        summary = rr.sweep(client, run, model=MODEL, topologies=topologies, out=out, seed=7, budgets=budgets)
        wall = time.perf_counter() - t0
        peak = client.run(peak_rss_mb)
    finally:
        client.close()
        cluster.close()
    assert summary["failed"] == [], summary["failed"]
    planner = sum(x["planner_s"] for x in summary["lines"])
    return {"workers": workers, "chains": len(topologies), "steps": summary["steps"], "wall_s": wall,
            "steps_per_s": summary["steps"] * len(topologies) / wall, "planner_s_sum": planner,
            "worker_idle_rss_mb": sorted(idle.values()),
            "worker_peak_above_idle_mb": sorted(peak[a] - idle[a] for a in peak)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--dp-slots", type=int, default=64)
    p.add_argument("--cap", type=int, default=8192)
    p.add_argument("--budgets", default="{}", help="planner budgets JSON (default: the planner's)")
    args = p.parse_args()
    run = os.path.join(args.dir, "run")
    t0 = time.perf_counter()
    write_run(run, args.steps, args.batch, args.seq)
    disk = sum(os.path.getsize(os.path.join(run, f)) for f in os.listdir(run))
    print(f"run: {args.steps} steps x {args.batch} samples x {args.seq} tokens, 58 MoE layers x 256 experts, "
          f"top-8: {disk / 1e9:.2f} GB on disk (written in {time.perf_counter() - t0:.1f} s); one step's counts "
          f"{args.batch * 58 * 256 * 4 / 1e6:.1f} MB", flush=True)
    topos = [topology(os.path.join(args.dir, "ep64-a.json"), args.dp_slots, args.cap),
             topology(os.path.join(args.dir, "ep64-b.json"), args.dp_slots // 2, args.cap * 2)]
    budgets = json.loads(args.budgets)
    before = peak_rss_mb()
    for chains in (1, 2):
        for workers in (1, 2):
            out = os.path.join(args.dir, f"out-{chains}-{workers}")
            shutil.rmtree(out, ignore_errors=True)
            r = sweep_once(run, topos[:chains], workers, out, budgets)
            print(json.dumps(r), flush=True)
    print(f"client peak RSS {peak_rss_mb():.0f} MB (before the sweeps {before:.0f} MB)")


if __name__ == "__main__":
    sys.exit(main())
