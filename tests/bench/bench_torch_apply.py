"""Benchmark of routepack.torch.apply_placement (run by hand, not by ctest):

    PYTHONPATH=build/python /usr/bin/python3 tests/bench/bench_torch_apply.py [--shared ../shared]
        [--fraction 64] [--single]

A DeepSeek-V2-Lite-shaped layer set: MoE layers 1..26 x 64 experts, each expert SwiGLU
gate_proj / up_proj [F, H] and down_proj [H, F] with H = 2048 and F = 1408 / fraction (the full
expert is 8,650,752 parameters: with its gradient and two Adam moments in fp32 that is 138 MB per
expert, 230 GB for the layer set, so the benchmark takes 1/fraction of it), float32 parameters with a
gradient and Adam state (exp_avg, exp_avg_sq, step). Two placements from the identity: the LPT
placement of the real DeepSeek-V2-Lite loads within a budget of 166 moves (``routepack.place``), and a
rank rotation that moves all 1,664 experts. Each is applied in one process (all 64 slots: the moves
are local copies) and on 4 gloo processes on this machine (16 slots each: the moves cross processes;
``--single`` skips them). Prints one table: moves, processes, seconds (the slowest rank), peak extra MB (VmHWM
over VmRSS before the call, the largest rank), the seconds of a plain ``copy_`` of the same bytes in
the same run (per rank: the bytes it sent), and their ratio.
"""

import argparse
import datetime
import multiprocessing
import os
import socket
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

import routepack
import routepack.torch as rt

LAYERS = list(range(1, 27))
E, H, P = 64, 2048, 4


def make_model(local, width, seed=0):
    """layers.{l}.mlp.gate.weight [E, H] and layers.{l}.mlp.experts.{j}.(gate_proj|up_proj|down_proj).weight
    for `local` experts per layer, every parameter with a gradient and Adam state."""
    torch.manual_seed(seed)
    model = nn.Module()
    model.layers = nn.ModuleList()
    for l in range(max(LAYERS) + 1):
        layer = nn.Module()
        if l in LAYERS:
            layer.mlp = nn.Module()
            layer.mlp.gate = nn.Linear(H, E, bias=False)
            layer.mlp.experts = nn.ModuleList()
            for _ in range(local):
                ex = nn.Module()
                ex.gate_proj, ex.up_proj = nn.Linear(H, width, bias=False), nn.Linear(H, width, bias=False)
                ex.down_proj = nn.Linear(width, H, bias=False)
                layer.mlp.experts.append(ex)
        model.layers.append(layer)
    opt = torch.optim.Adam(model.parameters())
    for p in model.parameters():
        p.grad = torch.randn_like(p)
        opt.state[p] = {"step": torch.tensor(3.0), "exp_avg": torch.randn_like(p), "exp_avg_sq": torch.rand_like(p)}
    return model, opt


def rss_mb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def timed_apply(model, opt, placement, group):
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
    before = rss_mb("VmRSS")
    t0 = time.perf_counter()
    res = rt.apply_placement(model, placement, optimizer=opt, group=group)
    seconds = time.perf_counter() - t0
    return res, seconds, rss_mb("VmHWM") - before


def copy_seconds(nbytes):
    """Best of 3 plain copies of nbytes between two buffers already in memory."""
    src = torch.empty(max(nbytes, 1), dtype=torch.uint8).random_()
    dst = torch.zeros_like(src)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        dst.copy_(src)
        best = min(best, time.perf_counter() - t0)
    return best


def placements(shared):
    loads = routepack.expert_loads(os.path.join(shared, "traces", "deepseek-v2-lite"), model="deepseek-v2-lite")
    identity = np.tile(np.arange(E), (len(LAYERS), 1))
    budgeted = routepack.place(loads["loads"], P, moe_layers=LAYERS, previous=identity, max_moves=166)
    rotation = (identity + E // P) % E  # logical -> slot: every expert one rank further
    rotated = routepack.place(loads["loads"], P, moe_layers=LAYERS, previous=rotation, max_moves=0)
    return [budgeted, rotated]


def rank_main(rank, port, width, texts, out):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=P,
                            timeout=datetime.timedelta(seconds=600))
    rows = []
    for text in texts:
        model, opt = make_model(E // P, width, seed=rank)
        dist.barrier()
        res, seconds, extra = timed_apply(model, opt, _placement_from(text), dist.group.WORLD)
        rows.append((res.experts_moved, seconds, extra, res.bytes_sent, copy_seconds(res.bytes_sent)))
        del model, opt
    out.put((rank, rows))
    dist.barrier()


def _placement_from(l2p_text):
    l2p = np.array([[int(x) for x in row.split(",")] for row in l2p_text.split(";")])
    return routepack.place(np.ones((len(LAYERS), E)), P, moe_layers=LAYERS, previous=l2p, max_moves=0)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared"))
    ap.add_argument("--fraction", type=int, default=64, help="F = 1408 / fraction")
    ap.add_argument("--single", action="store_true", help=f"one process only (no run on {P} gloo processes)")
    a = ap.parse_args()
    width = max(1, 1408 // a.fraction)
    targets = placements(a.shared)
    print(f"expert: 3 x {H} x {width} = {3 * H * width} parameters (1/{a.fraction} of DeepSeek-V2-Lite's), fp32 with "
          f"grad and Adam state; {len(LAYERS)} MoE layers x {E} experts")
    table = []
    for pl in targets:
        model, opt = make_model(E, width)
        res, seconds, extra = timed_apply(model, opt, pl, None)
        table.append((res.experts_moved, 1, seconds, extra, copy_seconds(res.moved_bytes)))
        del model, opt
    if not a.single:
        texts = [";".join(",".join(map(str, row)) for row in np.asarray(pl.logical_to_physical)) for pl in targets]
        ctx = multiprocessing.get_context("spawn")
        out, port = ctx.Queue(), _free_port()
        procs = [ctx.Process(target=rank_main, args=(r, port, width, texts, out)) for r in range(P)]
        for p in procs:
            p.start()
        got = dict(out.get() for _ in procs)
        for p in procs:
            p.join()
        for k in range(len(targets)):
            per = [got[r][k] for r in range(P)]
            table.append((per[0][0], P, max(x[1] for x in per), max(x[2] for x in per), max(x[4] for x in per)))
    print("| moves | processes | seconds | peak extra MB | copy_ seconds | ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    for moves, procs, seconds, extra, copy in table:
        print(f"| {moves} | {procs} | {seconds:.3f} | {extra:.0f} | {copy:.4f} | {seconds / max(copy, 1e-9):.1f} |")


if __name__ == "__main__":
    main()
