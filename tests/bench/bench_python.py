"""Benchmarks of the Python module (run by hand, not by ctest):

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_python.py [--cli build/app/routepack] [--deepseek]

1. counts_from_routes vs a numpy bincount baseline in the same process (same [B, S, L, K] int16
   routes with a [B, S] mask), throughput in routed tokens per second;
2. binding overhead per plan() call at N = 64 and N = 8192 (wall time of routepack.plan minus the
   planner's own "total" timing, tiny budgets so the overhead is visible);
3. with --adapters (only): one run per stack adapter with its invariants printed;
4. with --deepseek: the 512-sample DeepSeek-V2-Lite window through routepack.plan vs `routepack
   plan` on the same library window (same plan? and the wall-time overhead in %).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import routepack


def best_of(fn, repeat=3):
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def numpy_counts(routes, valid, moe_layers, E):
    B = routes.shape[0]
    out = np.zeros((B, len(moe_layers), E), dtype=np.int32)
    for b in range(B):
        rows = routes[b][valid[b]]
        for l, layer in enumerate(moe_layers):
            v = rows[:, layer, :].reshape(-1).astype(np.int64)
            out[b, l] = np.bincount(v[v >= 0], minlength=E)
    return out


def bench_counts():
    rng = np.random.default_rng(0)
    B, S, L, K, E = 64, 2048, 27, 6, 64
    moe_layers = list(range(1, 27))
    routes = rng.integers(0, E, size=(B, S, L, K), dtype=np.int16)
    valid = rng.random((B, S)) < 0.9
    t_np, ref = best_of(lambda: numpy_counts(routes, valid, moe_layers, E))
    t_rp, got = best_of(lambda: routepack.counts_from_routes(routes, E, moe_layers=moe_layers, valid=valid))
    assert (ref == got).all()
    tokens = int(valid.sum())
    print(f"counts_from_routes [B={B}, S={S}, L={L}, K={K}] int16, E={E}: routepack {t_rp * 1e3:.1f} ms "
          f"({tokens / t_rp / 1e6:.2f} M tokens/s), numpy bincount {t_np * 1e3:.1f} ms "
          f"({tokens / t_np / 1e6:.2f} M tokens/s): {t_np / t_rp:.1f}x")


def bench_overhead():
    tiny = {"seeds_M": 2, "population": 2, "levels": 1, "steps_per_level": 1}
    for n in (64, 8192):
        rng = np.random.default_rng(n)
        lengths = rng.integers(100, 4000, size=n).astype(np.int64)
        counts = rng.integers(0, 50, size=(n, 4, 16)).astype(np.uint32)
        topo = routepack.Topology(4, 8, 2, 8192)
        walls, overheads = [], []
        for _ in range(3):
            t0 = time.perf_counter()
            p = routepack.plan(lengths, counts, topo, moe_layers=[0, 1, 2, 3], budgets=tiny)
            wall = time.perf_counter() - t0
            walls.append(wall)
            overheads.append(wall - p.timings["total"])
        print(f"plan() at N={n}: wall {min(walls) * 1e3:.2f} ms, planner total {(min(walls) - min(overheads)) * 1e3:.2f} ms, "
              f"binding overhead {min(overheads) * 1e3:.2f} ms per call")


def bench_deepseek(cli):
    shared = os.environ.get("ROUTEPACK_SHARED_DIR", os.path.join(os.path.dirname(__file__), "../../../shared"))
    traces = os.path.join(shared, "traces", "deepseek-v2-lite")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "lib.routepack")
        subprocess.run([cli, "import", "--db", db, "--name", "ds", "--model", "deepseek-v2-lite", "--quiet", traces],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([cli, "window", "--db", db, "--trace", "ds", "--name", "step0", "--first", "512"], check=True,
                       stdout=subprocess.DEVNULL)
        out = os.path.join(tmp, "cli.json")
        t0 = time.perf_counter()
        subprocess.run([cli, "plan", "--db", db, "--trace", "ds", "--window", "step0", "--topology",
                        "deepseek-v2-lite-ep8-dp4", "--threads", "1", "--quiet", "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        t_cli = time.perf_counter() - t0
        lib = routepack.Library(db)
        t0 = time.perf_counter()
        w = lib.load("ds", "step0")
        p = routepack.plan_window(w, routepack.Topology.load("deepseek-v2-lite-ep8-dp4"), workers=1)
        t_py = time.perf_counter() - t0
        a, b = json.loads(p.to_json()), json.load(open(out))
        for j in (a, b):
            j.pop("timings", None)
        same = a == b
        print(f"DeepSeek 512-sample window: CLI {t_cli:.2f} s (process, library read and plan), "
              f"routepack.plan_window {t_py:.2f} s (library read and plan): {100 * (t_py - t_cli) / t_cli:+.1f}%; "
              f"same plan: {same}")


def run_adapters():
    """One run per stack adapter on a synthetic batch, with its invariants printed."""
    from types import SimpleNamespace

    from routepack.adapters import megatron, nemo_rl, slime, verl

    rng = np.random.default_rng(1)
    n, E = 64, 16
    lengths = [int(x) for x in rng.integers(200, 4000, size=n)]
    routes = [rng.integers(0, E, size=(t - 1, 4, 2)).astype(np.int16) for t in lengths]
    args = SimpleNamespace(use_dynamic_batch_size=True, max_tokens_per_gpu=8192, num_layers=4,
                           moe_layer_freq=[0, 1, 1, 1], num_experts=E, expert_model_parallel_size=4)
    cfg = {"dp_size": 4, "cp_size": 1, "vpp_size": 2, "microbatch_group_size_per_vp_stage": 2}
    parts, mbi, nmb, _ = slime.build_dp_schedule(args, cfg, lengths, global_batch_size=n, rollout_indices=list(range(n)),
                                                 rollout_routed_experts=routes)
    per_rank = [len(m) for m in mbi]
    once = sorted(i for p in parts for i in p) == list(range(n))
    peak = max(sum(lengths[parts[r][j]] for j in mb) for r in range(4) for mb in mbi[r])
    print(f"slime build_dp_schedule: micro-batches per rank {per_rank} (multiple of 2: {all(c % 2 == 0 for c in per_rank)}), "
          f"every sample once: {once}, peak micro-batch {peak} <= 8192 tokens")
    counts = routepack.counts_from_routes(routes, E, moe_layers=[1, 2, 3])
    packer = nemo_rl.RoutePackPacker(8192, min_bin_count=4, bin_count_multiple=4, ep_ranks=4)
    packer.set_routing(counts, [1, 2, 3])
    bins = packer.pack(lengths)
    print(f"NeMo-RL RoutePackPacker: {len(bins)} bins (multiple of 4: {len(bins) % 4 == 0}), per shard "
          f"{[len(bins[d::4]) for d in range(4)]}, every sample once: {sorted(i for b in bins for i in b) == list(range(n))}, "
          f"peak bin {max(sum(lengths[i] for i in b) for b in bins)} <= 8192")
    sched = megatron.RoutePackScheduler(4096, 2, 4, 2, ep_ranks=4)
    sched.set_routing(counts, [1, 2, 3])
    groups = sched.get_groups_and_subsamples([(1000 + i, t) for i, t in enumerate(lengths)])
    seen = sorted(i for mb in groups for d in range(4) for i in mb[2 * d])
    print(f"Megatron RoutePackScheduler: {len(groups)} micro-batches x {len(groups[0])} DPxCP ranks (multiple of 2: "
          f"{len(groups) % 2 == 0}), every sample once: {seen == list(range(n))}, peak group "
          f"{max(sum(lengths[i] for i in g) for mb in groups for g in mb)} <= 8192")
    S = 600
    mask = np.zeros((32, S), dtype=np.int64)
    mask[:, :300] = 1
    p, idx, rows = verl.plan_batch(mask, 4, max_token_len=600, routed_experts=rng.integers(0, E, size=(32, S, 4, 2)).astype(np.int16),
                                   num_experts=E, moe_layers=[1, 2, 3], ep_ranks=4)
    local = {"attention_mask": mask[idx][:8], "routepack_row": np.array(rows[:8])}
    mbs, mb_idx = verl.rearrange_micro_batches(local, 600)
    print(f"verl balance_batch + rearrange_micro_batches: {p.row_count} rows, rank 0 micro-batches {len(mbs)} "
          f"(= R: {len(mbs) == p.row_count}), every sample once: {sorted(idx) == list(range(32))}, peak "
          f"{max(int(m['attention_mask'].sum()) for m in mbs)} <= 600")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.environ.get("ROUTEPACK_CLI", "build/app/routepack"))
    ap.add_argument("--deepseek", action="store_true")
    ap.add_argument("--adapters", action="store_true", help="one run per stack adapter, invariants printed")
    args = ap.parse_args()
    if args.adapters:
        run_adapters()
        return 0
    bench_counts()
    bench_overhead()
    if args.deepseek:
        bench_deepseek(args.cli)


if __name__ == "__main__":
    sys.exit(main())
