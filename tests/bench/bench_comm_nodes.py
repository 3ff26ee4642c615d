"""Planning a DeepSeek-V3-shaped step on 1, 2, 4 and 8 nodes against one read of its routes.

Steps from `routepack synth` (58 MoE layers x 256 experts, top-8, EP64 / DP32 in 8 EDP shards, cap
8,192, `gpus_per_node` 64 / 32 / 16 / 8), each read once with its per-token routes
(routepack.run.read_step, the cluster runner's read) and then planned on every node count in the same
process, twice: as the cluster runner plans a chain's first step (routepack.run.plan_step: from the
identity placement, so with the move search) and alone (routepack.plan_window, no previous placement:
`routepack plan`'s plan). One node plans without the communication stage. Per size and node count:
the read's seconds; each plan's wall seconds and communication stage (the plan's timings), the
step's as ratios to the read, both against one node; the peak RSS of the two plans above the RSS
before them (VmHWM reset) against the routes' size in memory (ids of 2 bytes at 256 experts).

    PYTHONPATH=build/python ROUTEPACK_CLI=build/app/routepack /usr/bin/python3 \\
        tests/bench/bench_comm_nodes.py --dir /tmp/bench-nodes [--sizes 512,1024] [--nodes 1,2,4,8]
    ... --sizes 8192     # the large step: `routepack synth` holds it whole (over 23 GB) while writing it

docs/cluster-runs.md ("Planning on many nodes") gives the numbers of one run.

Not run by ctest (a benchmark, never a timed unit test)."""

import argparse
import json
import os
import subprocess
import sys
import time

from bench_cluster import peak_rss_mb, reset_peak_rss

MODEL = {"experts": 256, "top_k": 8, "num_hidden_layers": 61, "moe_layers": list(range(3, 61))}
ROUTE_ID_BYTES = 2  # core/model/trace.h route_id_width(256): 255 is a valid id, so the marker needs 2 bytes


def synth_step(cli, folder, samples):
    """A DeepSeek-V3-shaped step of `samples` samples (groups of 8), written once as .npz."""
    path = os.path.join(folder, f"v3-{samples}")
    if not os.path.exists(path):
        subprocess.run([cli, "synth", "--out", path, "--format", "npz", "--groups", str(samples // 8),
                        "--group-size", "8", "--layers", "61", "--dense-layers", "3", "--experts", "256",
                        "--top-k", "8", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
    return path


def topology_json(nodes):
    """EP64 / DP32 in 8 EDP shards of 4 DP slots, cap 8,192, 64 / nodes GPUs per node."""
    return json.dumps({"ep_ranks": 64, "experts_per_layer": 256, "dp_slots": 32,
                       "edp_shards": [list(range(4 * s, 4 * s + 4)) for s in range(8)], "token_cap": 8192,
                       "attention_stages": [{"name": "mla", "alpha": 27.0, "beta": 27.0}],
                       "gpus_per_node": 64 // nodes})


def measure(path, node_counts, threads):
    """Reads the step at `path` once with its routes, then plans it on every node count."""
    import routepack
    import routepack.run as rr

    t0 = time.perf_counter()
    window = rr.read_step(path, model=MODEL, routes=True)
    read_s = time.perf_counter() - t0
    routes_mb = int(window.lengths.sum()) * len(window.moe_layers) * window.top_k * ROUTE_ID_BYTES / 2**20
    rows = []
    for nodes in node_counts:
        before = reset_peak_rss()
        r = rr.plan_step(window, topology_json(nodes), trace_name="v3", window_name=os.path.basename(path),
                         threads=threads)
        t0 = time.perf_counter()
        alone = routepack.plan_window(window, routepack.Topology.from_json(topology_json(nodes)), workers=threads)
        alone_s = time.perf_counter() - t0
        peak = peak_rss_mb() - before
        timings = json.loads(r["plan"])["timings"]
        rows.append({"nodes": nodes, "plan_s": r["seconds"], "comm_s": timings.get("communication", 0.0),
                     "alone_s": alone_s, "alone_comm_s": alone.timings.get("communication", 0.0), "peak_mb": peak})
    return {"samples": len(window), "read_s": read_s, "routes_mb": routes_mb, "rows": rows}


def print_table(m):
    one = next((r for r in m["rows"] if r["nodes"] == 1), None)
    print(f"\n{m['samples']} samples: read with routes {m['read_s']:.2f} s, routes {m['routes_mb']:.0f} MiB in memory")
    print("| nodes | step s | communication s | step / read | communication / read | step / 1 node "
          "| plan alone s | its communication s | plan alone / 1 node | peak MiB above the window | peak / routes |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in m["rows"]:
        step_one = f"{r['plan_s'] / one['plan_s']:.2f}" if one else "-"
        alone_one = f"{r['alone_s'] / one['alone_s']:.2f}" if one else "-"
        print(f"| {r['nodes']} | {r['plan_s']:.2f} | {r['comm_s']:.2f} | {r['plan_s'] / m['read_s']:.2f} "
              f"| {r['comm_s'] / m['read_s']:.2f} | {step_one} | {r['alone_s']:.2f} | {r['alone_comm_s']:.2f} "
              f"| {alone_one} | {r['peak_mb']:.0f} | {r['peak_mb'] / m['routes_mb']:.2f} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True, help="folder for the synthetic steps (kept between runs)")
    p.add_argument("--sizes", default="512,1024", help="samples per step, comma-separated (multiples of 8)")
    p.add_argument("--nodes", default="1,2,4,8", help="node counts, comma-separated (divisors of 64)")
    p.add_argument("--threads", type=int, default=2, help="planner threads (default 2)")
    args = p.parse_args()
    cli = os.environ.get("ROUTEPACK_CLI", "build/app/routepack")
    os.makedirs(args.dir, exist_ok=True)
    node_counts = [int(x) for x in args.nodes.split(",")]
    for samples in (int(x) for x in args.sizes.split(",")):
        print_table(measure(synth_step(cli, args.dir, samples), node_counts, args.threads))


if __name__ == "__main__":
    sys.exit(main())
