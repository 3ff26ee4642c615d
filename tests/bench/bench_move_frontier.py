#!/usr/bin/env python3
"""The move budget's frontier on the real traces (docs/migration.md "Measured"): how much of full
re-placement's gain a budget keeps, whether a larger budget is ever worse, and what a budget costs
in planning time.

For each trace (DeepSeek-V2-Lite in windows of 128 samples, Llama-4-Maverick in windows of 47
requests; `routepack window --split`), topology (one node EP8, two nodes EP16) and seed, step k's
previous placement is step k-1's own plan (`routepack plan`, no previous placement), and step k is
planned with `--previous` at each budget B of BUDGETS (fractions of the L x E experts, rounded),
every budget in a separate call. Gain kept at B = (U_keep - U_B) / (U_keep - U_full), U = the plan's
routepack max_g U (eq. 15), U_keep the plan at --max-moves 0, U_full the lower of the plan at
--max-moves L x E and step k's own plan. Prints per (trace, topology, seed) the gain kept per
budget for every step and its median, the budget pairs B1 < B2 where B2 planned a higher max_g U
(every pair of every step), and the planning seconds (timings.total) with a budget against step
k's own plan, the worst ratio over steps and budgets. Steps 1..3.
"""
import argparse
import json
import os
import statistics
import sys

from bench_run_placement import cached_planner, common_arguments, routepack_cli

TRACES = {
    # name: (trace, model, split, trace folder)
    "ds128": ("ds", "deepseek-v2-lite", 128, "deepseek-v2-lite"),
    "m47": ("maverick", "llama4-maverick", 47, "llama4-maverick"),
}
TOPOLOGIES = {
    "deepseek-v2-lite": ["deepseek-v2-lite-ep8-dp4", "deepseek-v2-lite-ep16-dp8-2nodes"],
    "llama4-maverick": ["llama4-maverick-ep8-dp4", "llama4-maverick-ep16-dp8-2nodes"],
}
BUDGETS = [0.0, 0.01, 0.05, 0.10, 0.25, 0.50, 1.0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 usage="bench_move_frontier.py --routepack CLI --shared DIR --work DIR "
                                       "[--threads N] [--traces NAME,...] [--seeds S,...] [--topologies T,...]")
    common_arguments(ap, 1)
    ap.add_argument("--traces", default="ds128,m47", help="traces to measure (default ds128,m47)")
    ap.add_argument("--seeds", default="7", help="seeds (default 7)")
    ap.add_argument("--topologies", default="", help="topologies (default: both of each trace's model)")
    ap.add_argument("--steps", type=int, default=3, help="steps 1..N (default 3)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    db = os.path.join(a.work, "runs.routepack")

    cli = routepack_cli(a.routepack)
    traces = json.loads(cli("info", "--db", db, "--json")).get("traces", []) if os.path.exists(db) else []
    have = {t["name"] for t in traces}
    windows = {w["name"] for t in traces for w in t.get("windows", [])}
    for name in a.traces.split(","):
        trace, model, split, folder = TRACES[name]
        if trace not in have:
            cli("import", "--db", db, "--name", trace, "--model", model, os.path.join(a.shared, "traces", folder))
            have.add(trace)
        if f"{name}-000" not in windows:
            cli("window", "--db", db, "--trace", trace, "--name", name, "--split", str(split))
            windows.add(f"{name}-000")

    only = [t for t in a.topologies.split(",") if t]
    for name in a.traces.split(","):
        trace, model, split, folder = TRACES[name]
        for topo in TOPOLOGIES[model]:
            if only and topo not in only:
                continue
            for seed in [int(s) for s in a.seeds.split(",") if s]:
                measure(a, cli, db, name, trace, topo, seed)
    return 0


def measure(a, cli, db, name, trace, topo, seed):
    out = os.path.join(a.work, name, topo, f"seed{seed}")
    os.makedirs(out, exist_ok=True)
    plan = cached_planner(cli, ["--db", db, "--trace", trace, "--topology", topo, "--seed", str(seed),
                                "--threads", str(a.threads), "--quiet"])

    own = [plan(f"{name}-{k:03d}", os.path.join(out, f"own-{k}.json")) for k in range(a.steps + 1)]
    experts = len(own[0]["placement"]) * len(own[0]["placement"][0])
    budgets = [round(f * experts) for f in BUDGETS]
    kept = {b: [] for b in budgets[1:-1]}
    inversions, ratios = [], []
    for k in range(1, a.steps + 1):
        prev = os.path.join(out, f"own-{k - 1}.json")
        u = {}
        for b in budgets:
            doc = plan(f"{name}-{k:03d}", os.path.join(out, f"step{k}-b{b}.json"), "--previous", prev,
                       "--max-moves", str(b))
            u[b] = doc["score"][0]
            if doc["migration"]["moves"] > b:
                sys.exit(f"{name} {topo} step {k}: {doc['migration']['moves']} moves over the budget {b}")
            ratios.append((doc["timings"]["total"] / own[k]["timings"]["total"], k, b))
        u_keep, u_full = u[0], min(u[experts], own[k]["score"][0])
        for b in kept:
            kept[b].append(100 * (u_keep - u[b]) / (u_keep - u_full) if u_keep > u_full else 100.0)
        for i, b1 in enumerate(budgets):
            for b2 in budgets[i + 1:]:
                if u[b2] > u[b1]:
                    inversions.append(f"step {k}: {b2} > {b1} by {100 * (u[b2] - u[b1]) / u[b1]:.3f}%")
    cells = "  ".join(f"{100 * f:g}%: {statistics.median(kept[b]):5.1f} ({', '.join(f'{x:.1f}' for x in kept[b])})"
                      for f, b in zip(BUDGETS[1:-1], kept))
    worst = max(ratios)
    median = statistics.median(r[0] for r in ratios)
    print(f"{name:6} {topo:34} seed {seed}  kept  {cells}", flush=True)
    print(f"{'':6} {'':34} seed {seed}  larger budget worse: {len(inversions)}"
          f"{' (' + '; '.join(inversions) + ')' if inversions else ''}; planning with a budget / own plan: worst "
          f"{worst[0]:.2f}x (step {worst[1]}, budget {worst[2]}), median {median:.2f}x",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())
