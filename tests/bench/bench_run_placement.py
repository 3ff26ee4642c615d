#!/usr/bin/env python3
"""Run-level placement against per-step placement on the real traces (docs/migration.md "A placement
for the run").

For each run (DeepSeek-V2-Lite in windows of 128 and of 64 samples, Llama-4-Maverick in windows of
47 requests; `routepack window --split`) and each topology (one node EP8, two nodes EP16), every
chain starts at step 0's own plan (`routepack plan`, no previous placement) and plans steps 1..K-1
one by one with `routepack plan --previous <the step before's plan>`, as `routepack sweep` chains
them:

  full          unlimited moves every step (no --max-moves)
  budget X%     --max-moves X% of the L x E experts every step
  fixed         one placement fitted to the whole run (the plan of a window of every sample of the
                run), kept at every step (--previous fixed --max-moves 0): the bound for zero moves,
                with knowledge of the future no real run has
  history d     --history-decay d: the moves of each step chosen on the run's decayed loads so far
                (step 0's plan starts the history), with and without a budget

Prints one line per (run, topology, chain): the mean routepack max_g U (eq. 15) over steps 1..K-1,
its excess over full re-placement's, the mean experts moved per step, and per step the mean
planning seconds (the plan's timings.total) and materialization seconds of the moves at the
default cost model (migration.materialization_seconds). Every plan is recounted
from its file (score, migration.moves). Seed 7; plans are the same for any --threads.
"""
import argparse
import json
import os
import subprocess
import sys

RUNS = {
    # name: (trace, model, split, trace folder, samples)
    "ds128": ("ds", "deepseek-v2-lite", 128, "deepseek-v2-lite"),
    "ds64": ("ds", "deepseek-v2-lite", 64, "deepseek-v2-lite"),
    "m47": ("maverick", "llama4-maverick", 47, "llama4-maverick"),
}
TOPOLOGIES = {
    "deepseek-v2-lite": ["deepseek-v2-lite-ep8-dp4", "deepseek-v2-lite-ep16-dp8-2nodes"],
    "llama4-maverick": ["llama4-maverick-ep8-dp4", "llama4-maverick-ep16-dp8-2nodes"],
}
FRACTIONS = [0.01, 0.05, 0.10, 0.25]
DECAYS = [0.5, 1.0]
HISTORY_FRACTIONS = [0.05, 0.10, 0.25, None]


def common_arguments(ap, threads):
    """The arguments every run benchmark takes: --routepack, --shared, --work, --threads (default `threads`)."""
    ap.add_argument("--routepack", required=True, help="the routepack CLI (build/app/routepack)")
    ap.add_argument("--shared", required=True, help="the shared data folder (../shared)")
    ap.add_argument("--work", required=True, help="scratch folder: the library and every plan file")
    ap.add_argument("--threads", type=int, default=threads, help=f"planner threads per plan (default {threads})")


def routepack_cli(routepack):
    """cli(*args) -> stdout of `routepack args`; exits naming the command and its stderr when it fails."""
    def cli(*args):
        r = subprocess.run([routepack, *args], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"routepack {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        return r.stdout
    return cli


def cached_planner(cli, base):
    """plan(window, path, *extra) -> the plan document at `path`, planned once with `routepack plan` and the
    arguments `base` (written to path.tmp, then renamed, so an interrupted run re-plans it)."""
    def plan(window, path, *extra):
        if not os.path.exists(path):
            cli("plan", *base, "--window", window, "--out", path + ".tmp", *extra)
            os.replace(path + ".tmp", path)
        with open(path) as f:
            return json.load(f)
    return plan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 usage="bench_run_placement.py --routepack CLI --shared DIR --work DIR "
                                       "[--threads N] [--runs NAME,...] [--decays D,...]")
    common_arguments(ap, 2)
    ap.add_argument("--runs", default="ds128,ds64,m47", help="runs to measure (default ds128,ds64,m47)")
    ap.add_argument("--decays", default=",".join(str(d) for d in DECAYS), help="history decays (default 0.5,1.0)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    db = os.path.join(a.work, "runs.routepack")
    decays = [float(d) for d in a.decays.split(",") if d]

    cli = routepack_cli(a.routepack)
    traces = json.loads(cli("info", "--db", db, "--json")).get("traces", []) if os.path.exists(db) else []
    have = {t["name"]: t for t in traces}
    windows = {w["name"] for t in traces for w in t.get("windows", [])}
    for name in a.runs.split(","):
        trace, model, split, folder = RUNS[name]
        if trace not in have:
            cli("import", "--db", db, "--name", trace, "--model", model, os.path.join(a.shared, "traces", folder))
            have[trace] = {"samples": None}
        if f"{name}-000" not in windows:
            cli("window", "--db", db, "--trace", trace, "--name", name, "--split", str(split))
        if f"{trace}-all" not in windows:
            info = json.loads(cli("info", "--db", db, "--json"))
            samples = next(t["samples"] for t in info["traces"] if t["name"] == trace)
            cli("window", "--db", db, "--trace", trace, "--name", f"{trace}-all", "--first", str(samples))
            windows.add(f"{trace}-all")
        windows |= {w["name"] for t in json.loads(cli("info", "--db", db, "--json"))["traces"]
                    for w in t.get("windows", [])}

    print(f"{'run':6} {'topology':34} {'chain':18} {'mean max_g U':>12} {'vs full':>8} {'moves/step':>10} "
          f"{'plan_s':>7} {'moves_s':>7}")
    for name in a.runs.split(","):
        trace, model, split, folder = RUNS[name]
        steps = sorted(w for w in windows if w.startswith(name + "-") and w[len(name) + 1:].isdigit())
        for topo in TOPOLOGIES[model]:
            out = os.path.join(a.work, name, topo)
            os.makedirs(out, exist_ok=True)
            plan = cached_planner(cli, ["--db", db, "--trace", trace, "--topology", topo, "--seed", "7",
                                        "--threads", str(a.threads), "--quiet"])

            first = plan(steps[0], os.path.join(out, "step0.json"))
            experts = len(first["placement"]) * len(first["placement"][0])

            def chain(label, start, *extra):
                prev, us, moves, plan_s, move_s = start, [], [], [], []
                for k, w in enumerate(steps[1:], 1):
                    path = os.path.join(out, f"{label}-{k}.json")
                    doc = plan(w, path, "--previous", prev, *extra)
                    us.append(doc["score"][0])
                    moves.append(doc["migration"]["moves"])
                    plan_s.append(doc["timings"]["total"])
                    move_s.append(doc["migration"].get("materialization_seconds", 0.0))
                    if label != "fixed":
                        prev = path
                n = len(us)
                return sum(us) / n, sum(moves) / n, sum(plan_s) / n, sum(move_s) / n

            rows = [("full", chain("full", os.path.join(out, "step0.json")))]
            for f in FRACTIONS:
                b = round(f * experts)
                rows.append((f"budget {f:.0%}", chain(f"budget{b}", os.path.join(out, "step0.json"), "--max-moves",
                                                     str(b))))
            plan(f"{trace}-all", os.path.join(out, "fixed-fit.json"))
            rows.append(("fixed (whole run)", chain("fixed", os.path.join(out, "fixed-fit.json"), "--max-moves", "0")))
            for d in decays:
                start = os.path.join(out, f"step0-h{d:g}.json")
                plan(steps[0], start, "--history-decay", f"{d:g}")
                for f in HISTORY_FRACTIONS:
                    extra = ["--history-decay", f"{d:g}"]
                    label = f"h{d:g}"
                    if f is not None:
                        b = round(f * experts)
                        extra += ["--max-moves", str(b)]
                        label += f"-budget{b}"
                    rows.append((f"history {d:g} " + (f"{f:.0%}" if f is not None else "full"),
                                 chain(label, start, *extra)))
            full_u = rows[0][1][0]
            for label, (u, m, ps, ms) in rows:
                print(f"{name:6} {topo:34} {label:18} {u:12.4f} {100 * (u - full_u) / full_u:+7.2f}% {m:10.1f} "
                      f"{ps:7.3f} {ms:7.4f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
