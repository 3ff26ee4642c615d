"""Whole-run sweeps beyond one machine: every step of a training run planned on a Dask cluster,
straight from the stacks' per-step files (docs/cluster-runs.md).

A run is a folder whose entries are the steps (each a file or folder ``routepack import`` takes as
one input: a verl/AReaL ``.npz`` batch, a padded-batch folder, SGLang/vLLM/NeMo-RL JSONL, ...), in
natural order of their names (``step-2`` before ``step-10``), or an explicit list of such paths.
Every topology given is one chain: step k starts from step k-1's final placement, step 0 from
``previous`` or the identity, exactly as ``routepack sweep`` chains a library's windows
(``plan_chain``), so with the same seed, budgets and ``threads`` every plan file is the one
``routepack sweep --threads N`` writes for that step (only its ``timings`` differ).

What runs where:
  * :func:`read_step` (a plain function; a Dask or Ray task): one step's files read and reduced to
    a :class:`routepack.Window` (lengths, counts; per-token routes only when a chain needs them,
    i.e. a topology of more than one node). Reads run ahead of the chains on every worker, at most
    ``lookahead`` steps from the slowest chain's step on, and a read is shared by every chain.
  * :func:`plan_step` (a plain function): one step planned from the previous placement; the chains
    run concurrently, the steps of one chain in order.
  * :func:`sweep_step` (a plain function): both in one call, for a Ray task or a single process.
  * the client (:func:`sweep`): keeps the chains' order, writes each finished plan into OUT at once
    (a killed worker loses no finished step; a rerun plans only what is missing) and the summary at
    the end.

OUT (resumable): ``run.json`` (the settings; a rerun with other settings is refused),
``<chain>/<window>.plan.json`` (the plan file), ``<chain>/<window>.step.json`` (its summary line:
worker, seconds, the step its placement started from), ``<chain>/<window>.failed.json`` (a failed
step's message), and ``summary.json`` / ``summary.csv`` (every chain's steps; written last, each
through a temporary file and a rename). Every file appears whole (temporary file + rename).

Faults: a step whose files cannot be read, or whose window cannot be planned, fails with the
importer's or planner's message; its chain continues from the last good placement (the placement
the job keeps running on when a step has no plan), and the summary lists the failed steps. A rerun
retries the failed steps; a kept step whose recorded starting placement (a digest in its record)
differs from the chain's (a step before it failed then, and is planned now) is planned again.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import socket
import sys
import tempfile
import time
from typing import Optional, Sequence

from . import _core
from . import read_trace as _read_trace
from . import plan_window as _plan_window

__all__ = ["plan_step", "read_step", "run_steps", "sweep", "sweep_step", "window_name_of"]

# Extensions of the importers' files (collect_trace_files), stripped from a step's entry name.
_TRACE_EXTENSIONS = (".jsonl", ".json", ".npz", ".npy", ".csv", ".txt", ".nrlre1")
RUN_FORMAT = "routepack-cluster-run"


def window_name_of(path) -> str:
    """The window name of a step: its entry's name without a trace file extension (``step-3.npz``
    -> ``step-3``; a folder keeps its name)."""
    name = os.path.basename(os.path.normpath(os.fspath(path)))
    for ext in _TRACE_EXTENSIONS:
        if name.endswith(ext) and len(name) > len(ext):
            return name[: -len(ext)]
    return name


def run_steps(run) -> list:
    """The steps of a run as (window name, path) pairs in order: the entries of folder ``run`` in
    natural order of their names (hidden entries and a ``config.json``, the model's description,
    left out), or the given list of paths in its order. ValueError for a missing folder, an empty
    run, or two steps with one window name."""
    if isinstance(run, (str, os.PathLike)):
        folder = os.fspath(run)
        if not os.path.isdir(folder):
            raise ValueError(f"{folder}: is not a folder (a run is a folder whose entries are the steps)")
        names = [n for n in os.listdir(folder) if not n.startswith(".") and n != "config.json"]
        paths = [os.path.join(folder, n) for n in _core._natural_sorted(names)]
    else:
        paths = [os.fspath(p) for p in run]
    if not paths:
        raise ValueError(f"{run}: the run has no steps")
    steps, seen = [], {}
    for p in paths:
        w = window_name_of(p)
        if w in seen:
            raise ValueError(f"{p}: step name '{w}' is also the name of {seen[w]}; step names must be unique")
        seen[w] = p
        steps.append((w, p))
    return steps


def plan_file_names(names: Sequence[str]) -> list:
    """The plan file of each window, as ``routepack sweep --out`` names them: [A-Za-z0-9._-] kept,
    every other byte '_', at most 120 bytes, a leading '_' for an empty or dot name, and the
    window's position appended on a clash."""
    out, used = [], set()
    for k, n in enumerate(names):
        stem = "".join(chr(b) if chr(b).isalnum() and b < 128 or chr(b) in "-_." else "_"
                       for b in n.encode("utf-8", "surrogateescape"))[:120]
        if not stem or stem[0] == ".":
            stem = "_" + stem
        if stem in used:
            stem += f"-{k}"
        used.add(stem)
        out.append(stem + ".plan.json")
    return out


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return f"{socket.gethostname()}:{os.getpid()}"


def read_step(path, *, model=None, format: str = "auto", routes: bool = False, layer_base: str = "auto"):
    """One step's files read and reduced to a :class:`routepack.Window` (counts; routes only when
    ``routes``), with :func:`routepack.read_trace`'s rules and errors. A plain function: runs as a
    Dask or Ray task (the Window pickles)."""
    return _read_trace(path, format=format, model=model, routes=routes, layer_base=layer_base)


def _identity_rows(window) -> list:
    return [list(range(window.num_experts)) for _ in window.moe_layers]


def plan_step(window, topology_json: str, *, trace_name: str, window_name: str, previous=None, seed: int = 1,
              threads: int = 1, budgets: Optional[dict] = None) -> dict:
    """One step planned as ``routepack sweep`` plans a window of its chain: from ``previous`` (the
    previous step's placement as [L][E] logical -> slot rows, as a plan file's ``placement``
    holds it, or a plan / expert map as a dict; None = the identity, the checkpoint's order), with ``seed``, ``threads`` planner
    workers and ``budgets`` (the plan file's budget keys). A plain function (a Dask or Ray task).

    Returns {"plan": plan file text, "placement": [L][E] rows of the plan's placement, "line": the
    step's summary fields, "worker": the address (Dask) or host:pid that planned it, "seconds":
    wall seconds of the call}. Errors: the planner's ValueError (e.g. no rectangular layout)."""
    t0 = time.perf_counter()
    topology = _core.Topology.from_json(topology_json)
    named = window._named(trace_name, window_name)
    plan = _plan_window(named, topology, seed=seed, workers=threads, budgets=budgets,
                        previous=_identity_rows(window) if previous is None else previous)
    text = plan.to_json()
    doc = json.loads(text)
    return {"plan": text, "placement": doc["placement"], "line": _summary_line(doc), "worker": _worker_address(),
            "seconds": time.perf_counter() - t0}


def sweep_step(path, topology_json: str, *, trace_name: str, window_name: str, model=None, format: str = "auto",
               previous=None, seed: int = 1, threads: int = 1, budgets: Optional[dict] = None) -> dict:
    """read_step then plan_step in one call (a Ray task, or a single process): the result of
    plan_step with "read_seconds" added."""
    t0 = time.perf_counter()
    topology = _core.Topology.from_json(topology_json)
    window = read_step(path, model=model, format=format, routes=_needs_routes(topology))
    read_s = time.perf_counter() - t0
    out = plan_step(window, topology_json, trace_name=trace_name, window_name=window_name, previous=previous,
                    seed=seed, threads=threads, budgets=budgets)
    out["read_seconds"] = read_s
    return out


def _needs_routes(topology) -> bool:
    """Whether plans on `topology` use per-token routes (communication figures on more than one node),
    as ``routepack sweep`` loads its windows (storage::routes_for)."""
    return topology.nodes > 1


_METHODS = ("baseline", "reorder", "karmarkar_karp", "routepack", "grouter", "routepack+comm")


def _summary_line(doc: dict) -> dict:
    """A plan file's line of the summary (the fields of ``routepack sweep``'s sweep.json that one plan
    gives)."""
    metrics = doc.get("metrics", {})
    maxu = {m: metrics[m]["score"][0] for m in _METHODS if m in metrics}  # score = (max_g U, sum_g U, max J)

    def gain(base, x):
        return 100.0 * (x - base) / base if base > 0 else 0.0

    mig = doc.get("migration") or {}
    line = {"samples": len(doc["samples"]), "rows": doc["row_count"], "certified": doc["row_count_certified"]}
    line.update({m: maxu.get(m) for m in _METHODS})
    line.update({
        "routepack_vs_baseline_pct": gain(maxu["baseline"], maxu["routepack"]),
        "routepack_vs_reorder_pct": gain(maxu["reorder"], maxu["routepack"]),
        "lower_bound": doc["max_u_lower_bound"]["value"],
        "planner_s": doc.get("timings", {}).get("total", 0.0),
        "time_limit_hit": doc["planner"]["time_limit_hit"],
        "experts_moved": mig.get("moves", 0),
        "migration_bytes": mig.get("bytes") if mig.get("cost_model") else None,
        "materialization_seconds": mig.get("materialization_seconds"),
        "compute_seconds": mig.get("compute_seconds"),
        "modelled_seconds": mig.get("modelled_seconds"),
    })
    return line


# ---------------------------------------------------------------------------------------------
# The output folder


def _write_atomic(path: str, text: str) -> None:
    """Writes `text` to `path` through a temporary file in the same folder and a rename."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _chain_names(topologies: Sequence) -> list:
    """One folder name per chain: a topology file's stem or a shipped topology's name (positions
    appended on a clash)."""
    names, used = [], set()
    for k, t in enumerate(topologies):
        base = os.path.splitext(os.path.basename(os.fspath(t)))[0] if isinstance(t, (str, os.PathLike)) else ""
        stem = plan_file_names([base or f"topology-{k}"])[0][: -len(".plan.json")]
        if stem in used:
            stem += f"-{k}"
        used.add(stem)
        names.append(stem)
    return names


def _open_out(out: str, settings: dict) -> None:
    """Creates OUT with its run.json, or checks that an existing OUT holds a run of the same
    settings (ValueError naming the first setting that differs)."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "run.json")
    old = _read_json(path)
    if old is None:
        if os.path.exists(path):
            raise ValueError(f"{path}: is not a run description; give another --out")
        _write_atomic(path, json.dumps(settings, indent=2) + "\n")
        return
    for key in settings:
        if old.get(key) != settings[key]:
            raise ValueError(f"{out}: holds a run with another {key} ({json.dumps(old.get(key))} != "
                             f"{json.dumps(settings[key])}); give another --out or the same settings")


# ---------------------------------------------------------------------------------------------
# The chains


class _Chain:
    """One topology's chain: where it stands and the placement its next step starts from."""

    def __init__(self, name, topology_json, out, files, previous_rows, previous_label):
        self.name, self.topology_json, self.folder, self.files = name, topology_json, os.path.join(out, name), files
        self.pos = 0
        self.previous, self.previous_from = previous_rows, previous_label
        self.busy = None  # (step index, plan future) while a step is planned
        self.routes = _needs_routes(_core.Topology.from_json(topology_json))
        os.makedirs(self.folder, exist_ok=True)

    def paths(self, k):
        stem = os.path.join(self.folder, self.files[k][: -len(".plan.json")])
        return stem + ".plan.json", stem + ".step.json", stem + ".failed.json"

    def kept(self, k):
        """The record of step k when it is finished in OUT and started from the chain's placement."""
        plan, step, _ = self.paths(k)
        rec = _read_json(step)
        if rec is None or rec.get("previous_key") != _placement_key(self.previous) or not os.path.isfile(plan):
            return None
        return rec

    def done(self):
        return self.pos >= len(self.files)


def _placement_key(previous) -> str:
    """What a step started from, as its record keeps it: a digest of the placement rows (or of the
    --previous file's content; None = the identity). A kept step must have started from the very
    placement the chain now gives it."""
    text = json.dumps(previous, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _finish(chain, k, name, result, read_future) -> None:
    """Writes a planned step (plan file, then its record) or a failed one, and advances the chain."""
    plan, step, failed = chain.paths(k)
    if isinstance(result, BaseException):
        err = read_future.exception() if read_future is not None and read_future.status == "error" else result
        message = str(err)
        stage = "read" if err is not result else "plan"
        _write_atomic(failed, json.dumps({"window": name, "stage": stage, "error": message,
                                          "previous_from": chain.previous_from}, indent=2) + "\n")
    else:
        _write_atomic(plan, result["plan"] + "\n")
        rec = dict(result["line"])
        rec.update({"window": name, "plan_file": os.path.basename(plan), "worker": result["worker"],
                    "task_seconds": result["seconds"], "previous_from": chain.previous_from,
                    "previous_key": _placement_key(chain.previous)})
        _write_atomic(step, json.dumps(rec, indent=2) + "\n")
        if os.path.exists(failed):
            os.unlink(failed)
        chain.previous, chain.previous_from = result["placement"], name
    chain.pos = k + 1


def _advance(chain, steps) -> None:
    """Moves the chain past the steps OUT already holds for its current placement."""
    while not chain.done():
        rec = chain.kept(chain.pos)
        if rec is None:
            return
        doc = _read_json(chain.paths(chain.pos)[0])
        chain.previous, chain.previous_from = doc["placement"], steps[chain.pos][0]
        chain.pos += 1


def sweep(client, run, *, model, topologies: Sequence, out: str, seed: int = 1, previous=None,
          max_moves: Optional[int] = None, threads: int = 1, budgets: Optional[dict] = None, format: str = "auto",
          trace_name: Optional[str] = None, lookahead: Optional[int] = None, layer_base: str = "auto",
          progress=None) -> dict:
    """Plans every step of `run` (a folder of steps or a list of step paths, see run_steps) on every
    topology (one chain each) on the Dask cluster of `client` (a ``dask.distributed.Client``), into
    the resumable folder `out` (module docstring). Returns the summary (what summary.json holds).

    model: as :func:`routepack.read_trace` takes it (a shipped name, a config.json path, a dict).
    topologies: topology files or shipped names (``routepack plan --topology``). seed, threads
    (planner workers per step; the plans are the same for any count, the plan file records it),
    budgets (the plan file's budget keys), max_moves (budgets["max_moves"]): as ``routepack sweep``.
    previous: the placement step 0 starts from (a plan or expert map file, as ``--previous``);
    None: the identity. trace_name: the plans' ``inputs.trace`` (default: the run folder's name;
    ``routepack sweep`` records its library trace's name). lookahead: steps read at once from the
    slowest chain's step on (default: the workers; 1 reads no step ahead; at least 1). progress: called as progress(chain, window, status)
    after every step.

    ValueError for bad settings (unknown topology or model, an OUT of another run); a step's own
    failure is recorded, never raised.
    """
    from distributed import wait

    if lookahead is not None and (isinstance(lookahead, bool) or not isinstance(lookahead, int) or lookahead < 1):
        raise ValueError(f"lookahead: must be an integer of at least 1, got {lookahead!r}")
    steps = run_steps(run)
    if isinstance(run, (str, os.PathLike)):
        trace_name = trace_name or os.path.basename(os.path.normpath(os.fspath(run)))
    trace_name = trace_name or "run"
    budgets = dict(budgets or {})
    if max_moves is not None:
        budgets["max_moves"] = int(max_moves)
    topo_json = [_core.Topology.load(os.fspath(t)).to_json() for t in topologies]
    if not topo_json:
        raise ValueError("give at least one topology")
    chain_names = _chain_names(topologies)
    files = plan_file_names([w for w, _ in steps])
    previous_doc, previous_label = None, "identity"
    if previous is not None:
        # Read here (the workers need not see the file); each step 0 matches its rows to the window's
        # MoE layers as routepack.plan(previous=) does.
        with open(os.fspath(previous), encoding="utf-8") as f:
            try:
                previous_doc = json.load(f)
            except ValueError as e:
                raise ValueError(f"{os.fspath(previous)}: not a plan or expert map file ({e})") from None
        previous_label = "previous:" + os.path.abspath(os.fspath(previous))
    settings = {"format": RUN_FORMAT, "version": 1, "trace": trace_name, "model": model,
                "topologies": dict(zip(chain_names, [json.loads(t) for t in topo_json])), "seed": seed,
                "threads": threads, "budgets": budgets, "previous": previous_label, "read_format": format}
    _open_out(out, settings)
    chains = [_Chain(n, t, out, files, previous_doc, previous_label) for n, t in zip(chain_names, topo_json)]
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    lookahead = lookahead or workers
    any_routes = any(c.routes for c in chains)
    reads = {}  # step index -> read future (released once no chain needs it)

    def read(k):
        if k not in reads:
            reads[k] = client.submit(read_step, steps[k][1], model=model, format=format, routes=any_routes,
                                     layer_base=layer_base, pure=False, key=f"read-{k}-{os.urandom(4).hex()}")
        return reads[k]

    while True:
        for c in chains:
            if c.busy is None:
                _advance(c, steps)
                if not c.done():
                    k = c.pos
                    fut = client.submit(plan_step, read(k), c.topology_json, trace_name=trace_name,
                                        window_name=steps[k][0], previous=c.previous, seed=seed, threads=threads,
                                        budgets=budgets or None, pure=False,
                                        key=f"plan-{c.name}-{k}-{os.urandom(4).hex()}")
                    c.busy = (k, fut)
        active = [c for c in chains if c.busy is not None]
        if not active:
            break
        low = min(c.pos for c in active)
        for k in list(reads):
            if k < low:
                del reads[k]
        for k in range(low, min(low + lookahead, len(steps))):
            if any(not c.done() and c.pos <= k and not os.path.isfile(c.paths(k)[1]) for c in chains):
                read(k)
        wait([c.busy[1] for c in active], return_when="FIRST_COMPLETED")
        for c in active:
            k, fut = c.busy
            if fut.status not in ("finished", "error", "cancelled"):
                continue
            try:
                result = fut.result()
            except Exception as e:  # noqa: BLE001 - a step's failure is recorded, the run goes on
                result = e
            c.busy = None
            _finish(c, k, steps[k][0], result, reads.get(k))
            if progress:
                progress(c.name, steps[k][0], "failed" if isinstance(result, BaseException) else "planned")
    reads.clear()
    return write_summary(out, chains, steps)


def write_summary(out: str, chains, steps) -> dict:
    """summary.json and summary.csv of OUT from its step records (each through a temporary file and
    a rename): one line per chain and step, planned or failed (with the step's file or folder as
    "path"), and the failed steps listed. ``routepack import-run OUT --db LIB`` stores summary.json
    in a library."""
    lines, failed = [], []
    for c in chains:
        for k, (name, path) in enumerate(steps):
            plan, step, fail = c.paths(k)
            rec = _read_json(step) if os.path.isfile(plan) else None
            if rec is not None:
                line = {"topology": c.name, "window": name, "path": path, "status": "planned", "error": None}
                line.update({key: v for key, v in rec.items() if key not in ("window", "previous_key")})
            else:
                f = _read_json(fail) or {"error": "not planned", "stage": None}
                line = {"topology": c.name, "window": name, "path": path, "status": "failed", "error": f["error"],
                        "stage": f.get("stage")}
                failed.append({"topology": c.name, "window": name, "path": path, "error": f["error"]})
            lines.append(line)
    summary = {"format": "routepack-cluster-summary", "version": 1, "steps": len(steps),
               "topologies": [c.name for c in chains], "lines": lines, "failed": failed}
    _write_atomic(os.path.join(out, "summary.json"), json.dumps(summary, indent=2) + "\n")
    _write_atomic(os.path.join(out, "summary.csv"), summary_csv(lines))
    return summary


CSV_COLUMNS = ("topology", "window", "status", "samples", "rows", "certified") + _METHODS + (
    "routepack_vs_baseline_pct", "routepack_vs_reorder_pct", "lower_bound", "experts_moved", "migration_bytes",
    "materialization_seconds", "compute_seconds", "modelled_seconds", "planner_s", "task_seconds", "worker",
    "previous_from", "plan_file", "error")


def summary_csv(lines) -> str:
    """summary.csv: a header and one CRLF-ended line per chain and step (RFC 4180); numbers as
    ``%.17g`` (sweep.csv's form), an empty field where a value is unknown."""
    def cell(v):
        if v is None:
            return ""
        if isinstance(v, bool):
            return "1" if v else "0"
        if isinstance(v, float):
            return format(v, ".17g")
        return str(v)

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(CSV_COLUMNS)
    for line in lines:
        w.writerow([cell(line.get(c)) for c in CSV_COLUMNS])
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# python3 -m routepack.run


def _model_arg(args):
    if args.model_config:
        return args.model_config
    spec = {}
    if args.model:
        spec["model"] = args.model
    for key in ("experts", "top_k", "num_hidden_layers"):
        if getattr(args, key):
            spec[key] = getattr(args, key)
    if args.moe_layers:
        spec["moe_layers"] = _layer_list(args.moe_layers)
    if list(spec) == ["model"]:
        return spec["model"]
    return spec or None


def _layer_list(text: str) -> list:
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def _at_least_one(text: str) -> int:
    """argparse type of --lookahead: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python3 -m routepack.run sweep RUN_DIR --model M --topology T [--topology T2 ...] --out OUT
    [--seed S] [--previous FILE] [--max-moves N] [--threads N] [--lookahead N]
    [--scheduler ADDRESS | --workers N]``.
    Exit status 0 when every step of every chain was planned, 1 when some failed (listed), 2 for bad
    arguments or settings."""
    p = argparse.ArgumentParser(prog="python3 -m routepack.run",
                                description="whole-run sweeps on a Dask cluster (docs/cluster-runs.md)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="plan every step of a run folder on every topology (one chain each)")
    s.add_argument("run", nargs="+", help="the run folder (its entries are the steps), or the step paths in order")
    s.add_argument("--model", default="", help="shipped model description (as routepack import --model)")
    s.add_argument("--model-config", default="", help="Hugging Face config.json of the model")
    s.add_argument("--experts", type=int, default=0)
    s.add_argument("--top-k", type=int, default=0)
    s.add_argument("--num-hidden-layers", "--layers", dest="num_hidden_layers", type=int, default=0)
    s.add_argument("--moe-layers", default="", help="MoE layer ids, e.g. 1-26")
    s.add_argument("--format", default="auto", help="format of the step files (routepack import --format)")
    s.add_argument("--topology", action="append", required=True, help="topology file or shipped name; repeat "
                   "for independent chains")
    s.add_argument("--out", required=True, help="output folder (resumable: a rerun plans only what is missing)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--previous", default=None, help="placement of the step before the first (plan or map file)")
    s.add_argument("--max-moves", type=int, default=None, help="experts moved per step at most (all MoE layers)")
    s.add_argument("--threads", type=int, default=1, help="planner threads per step (default 1)")
    s.add_argument("--trace-name", default=None, help="the plans' inputs.trace (default: the run folder's name)")
    s.add_argument("--lookahead", type=_at_least_one, default=None,
                   help="steps read at once from the slowest chain's step on (default: the workers; 1: none ahead)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--scheduler", default=None, help="address of a running dask-scheduler (tcp://host:8786)")
    g.add_argument("--workers", type=int, default=None,
                   help="start a local cluster of N worker processes, one thread each (default 1)")
    s.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = p.parse_args(argv)
    from distributed import Client, LocalCluster

    run = args.run[0] if len(args.run) == 1 and os.path.isdir(args.run[0]) else args.run
    cluster = None
    try:
        if args.scheduler:
            client = Client(args.scheduler)
        else:
            cluster = LocalCluster(n_workers=args.workers or 1, threads_per_worker=1, processes=True,
                                   dashboard_address=":0")
            client = Client(cluster)
        try:
            report = None if args.quiet else (lambda c, w, st: print(f"{c} {w} {st}", file=sys.stderr, flush=True))
            summary = sweep(client, run, model=_model_arg(args), topologies=args.topology, out=args.out,
                            seed=args.seed, previous=args.previous, max_moves=args.max_moves, threads=args.threads,
                            format=args.format, trace_name=args.trace_name, lookahead=args.lookahead,
                            progress=report)
        finally:
            client.close()
    except ValueError as e:
        print(f"routepack.run: error: {e}", file=sys.stderr)
        return 2
    finally:
        if cluster is not None:
            cluster.close()
    planned = sum(1 for line in summary["lines"] if line["status"] == "planned")
    print(f"sweep: {planned} of {len(summary['lines'])} steps planned ({summary['steps']} steps x "
          f"{len(summary['topologies'])} chains); written to {args.out}")
    for f in summary["failed"]:
        print(f"failed: {f['topology']} {f['window']}: {f['error']}")
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
