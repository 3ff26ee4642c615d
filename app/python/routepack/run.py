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
worker, the plan task's seconds, the step read's seconds, the step its placement started from), ``<chain>/<window>.failed.json`` (a failed
step's message), and ``summary.json`` / ``summary.csv`` (every chain's steps; written last, each
through a temporary file and a rename). Every file appears whole (temporary file + rename), with
the mode a plain ``open`` gives (0666 less the umask), as ``routepack sweep --out`` writes.

Faults: a step whose files cannot be read, or whose window cannot be planned, fails with the
importer's or planner's message; its chain continues from the last good placement (the placement
the job keeps running on when a step has no plan), and the summary lists the failed steps. A rerun
retries the failed steps; a kept step whose recorded starting placement (a digest in its record)
differs from the chain's (a step before it failed then, and is planned now), or whose files changed
since it was planned (their names, sizes, modification and change times: a digest in its record),
is planned again.

Every setting is checked before a cluster starts or OUT is touched (:func:`sweep` raises
routepack.InputError, a ValueError; MissingFileError for a missing run folder or step).
OUT that cannot be written (a read-only or full file system) raises :class:`OutWriteError` naming the
file; the files written before stay whole, and a rerun of the same sweep resumes.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import operator
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time
from typing import Optional, Sequence

from . import _core
from . import read_trace as _read_trace
from . import plan_window as _plan_window
from ._core import Error as _Error
from ._core import InputError as _InputError
from ._core import MissingFileError as _MissingFileError

__all__ = ["OutWriteError", "local_cluster", "plan_step", "read_step", "run_steps", "sweep", "sweep_step",
           "window_name_of"]

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
    left out), or the given list of paths in its order. ValueError for a missing folder or step, an
    empty run, or two steps with one window name."""
    if isinstance(run, (str, os.PathLike)):
        folder = os.fspath(run)
        if not os.path.isdir(folder):
            raise _InputError(f"{folder}: is not a folder (a run is a folder whose entries are the steps)")
        names = [n for n in os.listdir(folder) if not n.startswith(".") and n != "config.json"]
        paths = [os.path.join(folder, n) for n in _core._natural_sorted(names)]
    else:
        paths = [os.fspath(p) for p in run]
        for p in paths:
            if not os.path.exists(p):
                raise _MissingFileError(f"{p}: no such run folder or step (a run is a folder whose entries are the "
                                 "steps, or the steps' paths in order)")
    if not paths:
        raise _InputError(f"{run}: the run has no steps")
    steps, seen = [], {}
    for p in paths:
        w = window_name_of(p)
        if w in seen:
            raise _InputError(f"{p}: step name '{w}' is also the name of {seen[w]}; step names must be unique")
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


def _read_timed(path, **kwargs):
    """The cluster runner's read task: read_step's Window and the read's wall seconds."""
    t0 = time.perf_counter()
    window = read_step(path, **kwargs)
    return window, time.perf_counter() - t0


def _plan_read(read, topology_json: str, **kwargs) -> dict:
    """The cluster runner's plan task: plan_step on a :func:`_read_timed` result, with the read's
    seconds added as "read_seconds" (the step's read task, run once for all its chains)."""
    window, read_seconds = read
    out = plan_step(window, topology_json, **kwargs)
    out["read_seconds"] = read_seconds
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


class OutWriteError(_Error, OSError):
    """OUT could not be written (a read-only or full file system, a permission): a routepack.Error and
    an OSError; ``filename`` is the file or folder, ``strerror`` the reason. What was written before
    stays whole (every file appears through a temporary file and a rename), so a rerun of the same
    sweep resumes."""

    def __str__(self):
        return f"{self.filename}: {self.strerror}"


def _out_error(e: OSError, path: str) -> OutWriteError:
    return OutWriteError(e.errno, e.strerror or str(e), path)


def _makedirs(path: str) -> None:
    """os.makedirs(path, exist_ok=True), an OSError raised as OutWriteError naming the folder."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise _out_error(e, e.filename or path) from None


def _write_atomic(path: str, text: str) -> None:
    """Writes `text` to `path` through a temporary file in the same folder and a rename, with the mode
    a plain open gives (0666 less the umask). Nothing is written when `path` already holds `text`.
    OutWriteError naming `path` when it cannot be written; the temporary file is then removed."""
    data = text.encode("utf-8")
    try:
        with open(path, "rb") as f:
            if f.read(len(data) + 1) == data:
                return
    except OSError:
        pass
    folder = os.path.dirname(path) or "."
    tmp = None
    try:
        while tmp is None:
            name = os.path.join(folder, f".tmp-{os.getpid()}-{os.urandom(6).hex()}")
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            except FileExistsError:
                continue
            tmp = name
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise _out_error(e, path) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


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


def _check_out(out: str, settings: dict) -> bool:
    """Whether OUT already holds a run (of these settings); ValueError, before anything is written,
    for an OUT that is not a folder, whose run.json is not a run description, or that holds a run
    of other settings (naming the first setting that differs)."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise _InputError(f"{out}: is not a folder; give another --out")
    path = os.path.join(out, "run.json")
    if not os.path.exists(path):
        return False
    old = _read_json(path)
    if not isinstance(old, dict) or old.get("format") != RUN_FORMAT:
        raise _InputError(f"{path}: is not a run description; give another --out")
    for key in settings:
        if old.get(key) != settings[key]:
            raise _InputError(f"{out}: holds a run with another {key} ({json.dumps(old.get(key))} != "
                             f"{json.dumps(settings[key])}); give another --out or the same settings")
    return True


def _open_out(out: str, settings: dict, chain_names: Sequence[str]) -> None:
    """Creates OUT with its run.json and a folder per chain, or checks that an existing OUT holds a
    run of the same settings (ValueError, see _check_out). OutWriteError when OUT cannot be written."""
    if not _check_out(out, settings):
        _makedirs(out)
        _write_atomic(os.path.join(out, "run.json"), json.dumps(settings, indent=2) + "\n")
    for name in chain_names:
        _makedirs(os.path.join(out, name))


def _input_key(path: str) -> str:
    """What a step's files were when it was read, as its record keeps it: a digest of the name, size,
    modification and change time of each (a folder: every file under it, in name order; symbolic
    links to files followed). A kept step whose files differ now is planned again."""
    def stat(f):
        try:
            st = os.stat(f)
        except OSError as e:
            return [f"error {e.errno}"]
        return [st.st_size, st.st_mtime_ns, st.st_ctime_ns]

    entries = []
    if os.path.isdir(path):
        for root, dirs, names in os.walk(path):
            dirs.sort()
            for n in sorted(names):
                f = os.path.join(root, n)
                entries.append([os.path.relpath(f, path)] + stat(f))
    else:
        entries.append([""] + stat(path))
    text = json.dumps(entries, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


# ---------------------------------------------------------------------------------------------
# The settings, checked before a cluster starts or OUT is touched


def _check_read_settings(model, format: str, layer_base: str) -> None:
    """The model, format and layer base of the reads, checked as read_step resolves them, on an empty
    folder (no step is read): ValueError with the reader's message for an unknown model or format, a
    config.json that does not read, bad model flags."""
    with tempfile.TemporaryDirectory(prefix="routepack-run-check-") as empty:
        try:
            read_step(empty, model=model, format=format, layer_base=layer_base)
        except ValueError as e:
            if not str(e).startswith(empty):
                raise
        except OSError as e:
            raise _InputError(f"{e.filename}: {e.strerror}" if e.filename else str(e)) from None


def _check_planner_settings(seed, threads, budgets: dict) -> None:
    """seed, threads and budgets checked as plan_step passes them to the planner (ValueError with the
    planner's message), by planning a one-sample window on one EP rank and cancelling it at once."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise _InputError(f"threads: must be an integer of at least 0 (0 = all cores), got {threads!r}")
    from . import plan as _plan

    import numpy as np

    topology = _core.Topology.from_json(json.dumps({"ep_ranks": 1, "dp_slots": 1, "token_cap": 2,
                                                    "attention_stages": [{"name": "a", "alpha": 1.0, "beta": 1.0}]}))
    _plan(np.array([2]), np.zeros((1, 1, 1), dtype=np.uint32), topology, moe_layers=[0], seed=seed, workers=1,
          budgets=budgets or None, progress=lambda stage, fraction: False)




def _read_previous(path):
    """The previous placement's file (a plan or an expert map) as a dict, read by the module's one
    checked reader (``_core._read_placement_text``: a regular file of at most 256 MiB; a FIFO, device
    or folder refused without blocking or reading). Its MoE layers and EP ranks are checked against
    each chain's first window when that step is planned (``routepack.plan_window(previous=)``).
    ValueError naming the file otherwise, or when it is not JSON."""
    path = os.fspath(path)
    data = _core._read_placement_text(path)
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as e:
        raise _InputError(f"{path}: not a plan or expert map file ({e})") from None


class _Job:
    """A sweep's checked settings: the steps, the chains' topologies and names, the previous
    placement, the settings run.json records. Building one reads no step and writes nothing."""

    def __init__(self, run, *, model, topologies, out, seed, previous, max_moves, threads, budgets, format,
                 trace_name, lookahead, layer_base):
        if lookahead is not None and (isinstance(lookahead, bool) or not isinstance(lookahead, int) or lookahead < 1):
            raise _InputError(f"lookahead: must be an integer of at least 1, got {lookahead!r}")
        self.steps = run_steps(run)
        if isinstance(run, (str, os.PathLike)):
            trace_name = trace_name or os.path.basename(os.path.normpath(os.fspath(run)))
        self.trace_name = trace_name or "run"
        self.budgets = dict(budgets or {})
        if max_moves is not None:
            try:
                if isinstance(max_moves, bool):
                    raise TypeError
                self.budgets["max_moves"] = operator.index(max_moves)
            except TypeError:
                raise _InputError(f"max_moves: must be an integer, got {max_moves!r}") from None
        _check_planner_settings(seed, threads, self.budgets)
        self.topo_json = [_core.Topology.load(os.fspath(t)).to_json() for t in topologies]
        if not self.topo_json:
            raise _InputError("give at least one topology")
        _check_read_settings(model, format, layer_base)
        self.chain_names = _chain_names(topologies)
        self.files = plan_file_names([w for w, _ in self.steps])
        self.previous_doc, self.previous_label = None, "identity"
        if previous is not None:
            # Read here (the workers need not see the file); each step 0 matches its rows to the window's
            # MoE layers as routepack.plan(previous=) does.
            self.previous_doc = _read_previous(previous)
            self.previous_label = "previous:" + os.path.abspath(os.fspath(previous))
        self.model, self.format, self.layer_base, self.seed, self.threads = model, format, layer_base, seed, threads
        self.lookahead, self.out = lookahead, os.fspath(out)
        self.settings = {"format": RUN_FORMAT, "version": 1, "trace": self.trace_name, "model": model,
                         "topologies": dict(zip(self.chain_names, [json.loads(t) for t in self.topo_json])),
                         "seed": seed, "threads": threads, "budgets": self.budgets, "previous": self.previous_label,
                         "read_format": format}
        _check_out(self.out, self.settings)

    def open(self) -> None:
        """Creates OUT (or checks the run it holds): OutWriteError when it cannot be written."""
        _open_out(self.out, self.settings, self.chain_names)


# ---------------------------------------------------------------------------------------------
# The chains


class _Chain:
    """One topology's chain: where it stands and the placement its next step starts from."""

    def __init__(self, name, topology_json, out, files, previous_rows, previous_label, input_key):
        self.name, self.topology_json, self.folder, self.files = name, topology_json, os.path.join(out, name), files
        self.pos = 0
        self.previous, self.previous_from = previous_rows, previous_label
        self.busy = None  # (step index, plan future) while a step is planned
        self.routes = _needs_routes(_core.Topology.from_json(topology_json))
        self.input_key = input_key  # step index -> _input_key of its files, taken once per sweep

    def paths(self, k):
        stem = os.path.join(self.folder, self.files[k][: -len(".plan.json")])
        return stem + ".plan.json", stem + ".step.json", stem + ".failed.json"

    def recorded(self, k):
        """The record of step k when OUT holds its plan and the record says it was read from the step's
        files as they are now (any starting placement)."""
        plan, step, _ = self.paths(k)
        rec = _read_json(step)
        if not isinstance(rec, dict) or rec.get("input_key") != self.input_key(k) or not os.path.isfile(plan):
            return None
        return rec

    def kept(self, k):
        """The record of step k when it is finished in OUT, from the step's files as they are now and
        the chain's placement."""
        rec = self.recorded(k)
        if rec is None or rec.get("previous_key") != _placement_key(self.previous):
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


def _remove(path: str) -> None:
    """Removes a file of OUT if it is there (OutWriteError naming it when it cannot be removed)."""
    if not os.path.lexists(path):
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise _out_error(e, path) from None


def _finish(chain, k, name, result, read_future) -> None:
    """Writes a planned step (plan file, then its record, then the step's old failure removed) or a
    failed one (its message, then an older plan of the step removed), and advances the chain."""
    plan, step, failed = chain.paths(k)
    if isinstance(result, BaseException):
        err = read_future.exception() if read_future is not None and read_future.status == "error" else result
        message = str(err)
        stage = "read" if err is not result else "plan"
        _write_atomic(failed, json.dumps({"window": name, "stage": stage, "error": message,
                                          "previous_from": chain.previous_from}, indent=2) + "\n")
        _remove(step)
        _remove(plan)
    else:
        _write_atomic(plan, result["plan"] + "\n")
        rec = dict(result["line"])
        rec.update({"window": name, "plan_file": os.path.basename(plan), "worker": result["worker"],
                    "task_seconds": result["seconds"], "read_seconds": result.get("read_seconds"),
                    "previous_from": chain.previous_from,
                    "previous_key": _placement_key(chain.previous), "input_key": chain.input_key(k)})
        _write_atomic(step, json.dumps(rec, indent=2) + "\n")
        _remove(failed)
        chain.previous, chain.previous_from = _next_previous(result["plan"], result["placement"]), name
    chain.pos = k + 1


def _next_previous(plan, placement):
    """What the step after a plan starts from: its placement rows, or the whole plan (text or dict) when
    it carries the run's history (budget history_decay > 0), which the next step folds its loads into."""
    doc = json.loads(plan) if isinstance(plan, str) else plan
    return doc if doc.get("history") is not None else placement


def _advance(chain, steps) -> None:
    """Moves the chain past the steps OUT already holds for its current placement (removing a failed
    step's message left beside a kept plan)."""
    while not chain.done():
        rec = chain.kept(chain.pos)
        if rec is None:
            return
        doc = _read_json(chain.paths(chain.pos)[0])
        _remove(chain.paths(chain.pos)[2])
        chain.previous, chain.previous_from = _next_previous(doc, doc["placement"]), steps[chain.pos][0]
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

    ValueError for bad settings (a missing run folder or step, an unknown topology or model, a bad
    seed or budget, an OUT of another run), raised before OUT is touched; OutWriteError (an OSError
    naming the file) when OUT cannot be written, the steps written before kept; a step's own failure
    is recorded, never raised.
    """
    job = _Job(run, model=model, topologies=topologies, out=out, seed=seed, previous=previous, max_moves=max_moves,
               threads=threads, budgets=budgets, format=format, trace_name=trace_name, lookahead=lookahead,
               layer_base=layer_base)
    job.open()
    return _run(client, job, progress)


def _run(client, job: _Job, progress=None) -> dict:
    """The sweep of an opened job on the cluster of `client` (see sweep)."""
    from distributed import wait

    steps, out, budgets = job.steps, job.out, job.budgets
    keys = {}

    def input_key(k):
        if k not in keys:
            keys[k] = _input_key(steps[k][1])
        return keys[k]

    chains = [_Chain(n, t, out, job.files, job.previous_doc, job.previous_label, input_key)
              for n, t in zip(job.chain_names, job.topo_json)]
    workers = max(1, len(client.scheduler_info().get("workers", {})))
    lookahead = job.lookahead or workers
    any_routes = any(c.routes for c in chains)
    reads = {}  # step index -> read future (released once no chain needs it)

    def read(k):
        if k not in reads:
            input_key(k)  # the files' state before they are read
            reads[k] = client.submit(_read_timed, steps[k][1], model=job.model, format=job.format, routes=any_routes,
                                     layer_base=job.layer_base, pure=False, key=f"read-{k}-{os.urandom(4).hex()}")
        return reads[k]

    while True:
        for c in chains:
            if c.busy is None:
                _advance(c, steps)
                if not c.done():
                    k = c.pos
                    fut = client.submit(_plan_read, read(k), c.topology_json, trace_name=job.trace_name,
                                        window_name=steps[k][0], previous=c.previous, seed=job.seed,
                                        threads=job.threads, budgets=budgets or None, pure=False,
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
            if any(not c.done() and c.pos <= k and c.recorded(k) is None for c in chains):
                read(k)
        with client.as_current():  # distributed.wait runs on the default client's event loop
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
                line.update({key: v for key, v in rec.items() if key not in ("window", "previous_key", "input_key")})
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
    "materialization_seconds", "compute_seconds", "modelled_seconds", "planner_s", "task_seconds", "read_seconds",
    "worker", "previous_from", "plan_file", "error")


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
# A local cluster


def local_cluster(workers: int = 1, *, dashboard: bool = False):
    """The Dask cluster ``python3 -m routepack.run sweep --workers N`` starts on this machine (a
    ``distributed.LocalCluster``; close it when done): `workers` worker processes of one thread each,
    the scheduler and the workers on 127.0.0.1 only. Dask starts an HTTP server in the scheduler and
    in every worker; each listens on 127.0.0.1 and serves no page, unless `dashboard`: then the
    scheduler's serves its dashboard (``cluster.dashboard_link``, a free port on 127.0.0.1; its
    pages need bokeh). The worker processes ignore SIGINT (Ctrl-C in a terminal reaches the whole
    process group; only the client answers it, closing the cluster): called on the main thread, this
    process ignores it while the cluster starts (a few seconds), so that the worker processes begin
    with it ignored, and each worker ignores it (a worker Dask starts again, too)."""
    import dask
    from distributed import LocalCluster, Nanny

    class LoopbackNanny(Nanny):
        """A worker process whose HTTP server (on 127.0.0.1, as worker_dashboard_address says) serves
        no dashboard (LocalCluster turns the workers' dashboards on with any address) and that
        ignores SIGINT."""

        def __init__(self, *a, **kw):
            kw["dashboard"] = False
            kw["worker_class"] = _sigint_ignoring_worker
            super().__init__(*a, **kw)

    routes = {} if dashboard else {"distributed.scheduler.http.routes": [], "distributed.worker.http.routes": []}
    handler = None
    if threading.current_thread() is threading.main_thread():
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a disposition the spawned processes inherit
    try:
        with dask.config.set(routes):
            return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                dashboard_address="127.0.0.1:0", worker_dashboard_address="127.0.0.1:0",
                                scheduler_kwargs={"dashboard": dashboard}, worker_class=LoopbackNanny)
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)


def _sigint_ignoring_worker(**kwargs):
    """A Dask Worker made in a worker process of local_cluster (the Nanny's worker class, called on
    the process's main thread), the process set to ignore SIGINT first."""
    from distributed import Worker

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return Worker(**kwargs)


# ---------------------------------------------------------------------------------------------
# python3 -m routepack.run

# Exit statuses of `python3 -m routepack.run sweep` (docs/cluster-runs.md).
EXIT_PLANNED = 0      # every step of every chain planned
EXIT_STEPS_FAILED = 1  # some steps failed (listed on stdout, in summary.json)
EXIT_USAGE = 2        # bad arguments or settings; nothing started, OUT untouched
EXIT_STOPPED = 3      # OUT could not be written, or the scheduler not reached; OUT resumable
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT); OUT resumable


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
        spec["moe_layers"] = args.moe_layers
    if list(spec) == ["model"]:
        return spec["model"]
    return spec or None


def _typed(type_name: str):
    """Marks an argparse type function with the type --help shows (INT, UINT, TEXT), as the CLI's."""
    def mark(parse):
        parse.type_name = type_name
        return parse

    return mark


@_typed("TEXT")
def _layer_list(text: str) -> list:
    """argparse type of --moe-layers: layer ids and ranges, e.g. ``1-26`` or ``0,2,4-7``."""
    out = []
    try:
        for part in text.split(","):
            if "-" in part:
                a, b = part.split("-", 1)
                out.extend(range(int(a), int(b) + 1))
            elif part:
                out.append(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a list of layer ids and ranges such as 1-26 (got {text!r})") \
            from None
    return out


@_typed("INT")
def _integer(text: str) -> int:
    """argparse type of the model's counts (--experts, --top-k, --layers): a decimal integer."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer (got {text!r})") from None


@_typed("INT")
def _at_least_one(text: str) -> int:
    """argparse type of --lookahead and --workers: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1 (got {text!r})")
    return value


def _float_in(low: float, high: float):
    """argparse type: a finite number in [low, high], the range in the error."""
    @_typed("X")
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = None
        if value is None or not (low <= value <= high):
            raise argparse.ArgumentTypeError(f"must be a number in [{low:g}, {high:g}] (got {text!r})")
        return value

    return parse


def _int_in(low: int, high: int, also: Optional[int] = None, note: str = ""):
    """argparse type: an integer in low..high (or `also`), the range in the error; --help shows it as
    UINT when no value below 0 is taken, INT otherwise."""
    @_typed("UINT" if low >= 0 and (also is None or also >= 0) else "INT")
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not (low <= value <= high or value == also):
            raise argparse.ArgumentTypeError(f"must be an integer in {low}..{high}{note} (got {text!r})")
        return value

    return parse


_HELP_COLUMN = 30  # where a help line's description starts, as in `routepack --help` (CLI11's layout)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


class _Parser(argparse.ArgumentParser):
    """argparse in the conventions of the `routepack` CLI: --help laid out as `routepack CMD --help`
    is (the description, ``Usage: PROG [OPTIONS] ...``, then ``Positionals:``, ``Options:`` and
    ``Subcommands:``, one entry a line: the names, the value's type (TEXT, INT, UINT), ``...`` for a
    list and ``REQUIRED``, the description from column 30), and every command-line error as one line
    ``routepack.run: error: <lower-case text>`` on stderr, exit status 2: a flag's value refused by
    its reader as ``sweep: --seed must be an integer in 0..18446744073709551615 (got '-1')``, any
    other error followed by `` (see PROG --help)`` (``the following argument was not expected:
    --bogus``, ``unknown command 'frob'``, ``--out is required``, ``give either --workers or
    --scheduler, not both``). A flag the command does not have is named before any other error, and
    flags are given whole (no abbreviations), as in the CLI."""

    def __init__(self, *args, **kwargs):
        kwargs["add_help"] = False
        kwargs["allow_abbrev"] = False  # as the CLI: a flag is given whole
        super().__init__(*args, **kwargs)
        self.add_argument("-h", "--help", action="help", help="print this help message and exit")

    @staticmethod
    def _entry(names: str, description: str) -> str:
        first = "  " + names
        if len(first) >= _HELP_COLUMN:
            return first + "\n" + " " * _HELP_COLUMN + description
        return first.ljust(_HELP_COLUMN) + description

    @staticmethod
    def _names(action) -> str:
        if isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction)):
            return ",".join(action.option_strings)
        names = ",".join(action.option_strings) or action.dest
        type_name = getattr(action.type, "type_name", "TEXT")
        many = action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction)
        return names + " " + type_name + (" ..." if many else "") + (" REQUIRED" if action.required else "")

    def format_help(self) -> str:
        positionals, options, commands = [], [], []
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                commands += [self._entry(c.dest, c.help or "") for c in action._choices_actions]
            elif action.option_strings:
                options.append(self._entry(self._names(action), action.help or ""))
            else:
                positionals.append(self._entry(self._names(action), action.help or ""))
        usage = "Usage: " + self.prog + " [OPTIONS]"
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                usage += " SUBCOMMAND"
            elif not action.option_strings:
                usage += " " + action.dest + ("..." if action.nargs in ("+", "*") else "")
        text = (_lower_first(self.description) + "\n" if self.description else "") + usage + "\n"
        for title, lines in (("Positionals", positionals), ("Options", options), ("Subcommands", commands)):
            if lines:
                text += "\n" + title + ":\n" + "\n".join(lines) + "\n"
        return text + "\n"

    def parse_known_args(self, args=None, namespace=None):
        """argparse's parse_known_args, keeping the arguments given to this parser (a subcommand's
        parser gets those after its name) for error()."""
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):
        """argparse's parse_args; arguments left unused are reported by the command given (its help
        in the hint)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = self
            for action in self._actions:
                if isinstance(action, argparse._SubParsersAction):
                    owner = action.choices.get(getattr(parsed, action.dest, None), self)
            owner.error("unrecognized arguments: " + " ".join(extras))
        return parsed

    def _unknown_flags(self) -> list:
        """The arguments given to this parser that look like flags it does not have (not negative
        numbers): a misspelt flag, named before any other error of the command line, as the CLI does."""
        known = {name for action in self._actions for name in action.option_strings}
        return [a for a in getattr(self, "_given", []) if a.startswith("-") and len(a) > 1
                and not re.fullmatch(r"-[0-9.]+", a) and a.split("=", 1)[0] not in known]

    def error(self, message: str):
        """Prints the one error line of a command-line error and exits with status 2."""
        command = self.prog.split()[-1]
        hint = f" (see {self.prog} --help)"
        unknown = self._unknown_flags()
        if m := re.fullmatch(r"argument \S+: invalid choice: '(.*)' \(choose from .*\)", message):
            line = f"unknown command '{m.group(1)}'" + hint
        elif (m := re.fullmatch(r"unrecognized arguments: (.*)", message)) or unknown:
            words = m.group(1).split() if m else unknown
            line = ("the following arguments were not expected: " if len(words) > 1 else
                    "the following argument was not expected: ") + " ".join(words) + hint
        elif m := re.fullmatch(r"argument (\S+): (must be .*)", message):  # a value refused by its reader
            line = f"{command}: {m.group(1)} {m.group(2)}"
        elif m := re.fullmatch(r"the following arguments are required: (.*)", message):
            names = m.group(1).split(", ")
            if names == ["command"]:
                line = "a command is required" + hint
            else:
                line = (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]) + \
                    (" is required" if len(names) == 1 else " are required") + hint
        elif m := re.fullmatch(r"argument (\S+): not allowed with argument (\S+)", message):
            line = f"give either {m.group(1)} or {m.group(2)}, not both" + hint
        elif m := re.fullmatch(r"argument (\S+): expected one argument", message):
            line = f"{m.group(1)} needs a value" + hint
        else:
            line = _lower_first(message) + hint
        self.exit(EXIT_USAGE, f"routepack.run: error: {line}\n")


def _parser():
    """The command line's parser and its sweep subparser (_Parser: the CLI's help layout and error
    lines)."""
    p = _Parser(prog="python3 -m routepack.run",
                description="whole-run sweeps on a Dask cluster (docs/cluster-runs.md)")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sweep", help="plan every step of a run folder on every topology (one chain each)",
                       description="plans every step of a run on every topology (one chain each) into the "
                       "resumable folder OUT. Exit status: 0 every step planned, 1 some steps failed (listed), "
                       "2 bad arguments or settings (nothing started, OUT untouched), 3 OUT could not be "
                       "written or the scheduler not reached, 130 interrupted; after 3 or 130, OUT keeps the "
                       "finished steps and the same command resumes.")
    s.add_argument("run", nargs="+", help="the run folder (its entries are the steps), or the step paths in order")
    s.add_argument("--model", default="", help="shipped model description (as routepack import --model)")
    s.add_argument("--model-config", default="", help="Hugging Face config.json of the model")
    s.add_argument("--experts", type=_integer, default=0, help="routed experts per MoE layer (E)")
    s.add_argument("--top-k", type=_integer, default=0, help="experts per token (k)")
    s.add_argument("--num-hidden-layers", "--layers", dest="num_hidden_layers", type=_integer, default=0,
                   help="decoder layers (num_hidden_layers)")
    s.add_argument("--moe-layers", type=_layer_list, default=None, help="MoE layer ids, e.g. 1-26")
    s.add_argument("--format", default="auto", help="format of the step files (routepack import --format)")
    s.add_argument("--topology", action="append", required=True, help="topology file or shipped name; repeat "
                   "for independent chains")
    s.add_argument("--out", required=True, help="output folder (resumable: a rerun plans only what is missing)")
    s.add_argument("--seed", type=_int_in(0, 2**64 - 1), default=1, help="random seed; default 1, in 0..2^64-1")
    s.add_argument("--previous", default=None, help="placement of the step before the first (plan or map file)")
    s.add_argument("--max-moves", type=_int_in(0, 10**9, -1, ", or -1 (unlimited)"), default=None,
                   help="experts moved per step at most (all MoE layers)")
    s.add_argument("--history-decay", type=_float_in(0, 1), default=None,
                   help="run-level base placement: choose each step's moves on the run's expert loads so far, "
                   "each earlier step weighted by this factor per step back (routepack sweep --history-decay)")
    s.add_argument("--threads", type=_int_in(0, 4096), default=1,
                   help="planner threads per step (default 1; 0: all cores)")
    s.add_argument("--trace-name", default=None, help="the plans' inputs.trace (default: the run folder's name)")
    s.add_argument("--lookahead", type=_at_least_one, default=None,
                   help="steps read at once from the slowest chain's step on (default: the workers; 1: none ahead)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--scheduler", default=None, help="address of a running dask-scheduler (tcp://host:8786)")
    g.add_argument("--workers", type=_at_least_one, default=None,
                   help="start a local cluster of N worker processes, one thread each, on 127.0.0.1 (default 1)")
    s.add_argument("--dashboard", action="store_true",
                   help="the local cluster's scheduler serves its dashboard on 127.0.0.1 (the link on stderr)")
    s.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p, s


def _quiet_logs() -> None:
    """Dask's own log of this process reduced to its critical messages."""
    import logging

    logging.getLogger("distributed").setLevel(logging.CRITICAL)


def _close(client, cluster, quietly: bool) -> None:
    """Closes the client and the local cluster; `quietly` (the command always closes so, finished or
    stopped): with Ctrl-C ignored and without Dask's messages about the tasks it drops, the busy
    workers it stops and the heartbeats that race the shutdown (here and in the local cluster's
    workers), both as they were here again afterwards."""
    import logging

    logger = logging.getLogger("distributed")
    level, handler = logger.level, None
    if quietly:
        logger.setLevel(logging.CRITICAL)
        if threading.current_thread() is threading.main_thread():
            handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        if client is not None and cluster is not None:
            try:
                client.run(_quiet_logs)
            except Exception:  # noqa: BLE001 - a worker already gone has nothing left to say
                pass
    try:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    finally:
        if quietly:
            logger.setLevel(level)
            if handler is not None:
                signal.signal(signal.SIGINT, handler)


def _checked_job(args, run):
    """(None, None, the _Job of the command line's settings), or (EXIT_USAGE, its line, None)."""
    try:
        job = _Job(run, model=_model_arg(args), topologies=args.topology, out=args.out, seed=args.seed,
                   previous=args.previous, max_moves=args.max_moves, threads=args.threads,
                   budgets=None if args.history_decay is None else {"history_decay": args.history_decay},
                   format=args.format, trace_name=args.trace_name, lookahead=args.lookahead, layer_base="auto")
    except ValueError as e:
        return EXIT_USAGE, f"routepack.run: error: {e}", None
    return None, None, job


def _connect(address: str, resume: str):
    """(None, None, a Client of the scheduler at `address`), or (EXIT_USAGE, its line, None) for an
    address that is not one, (EXIT_STOPPED, its line, None) for a scheduler not reached."""
    from distributed import Client

    try:
        return None, None, Client(address, set_as_default=False)
    except ValueError as e:
        return EXIT_USAGE, f"routepack.run: error: --scheduler {address}: {e}", None
    except (OSError, TimeoutError) as e:
        return EXIT_STOPPED, f"routepack.run: error: {address}: cannot reach the scheduler ({e}); {resume}", None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python3 -m routepack.run sweep RUN_DIR --model M --topology T [--topology T2 ...] --out OUT
    [--seed S] [--previous FILE] [--max-moves N] [--history-decay D] [--threads N] [--lookahead N]
    [--scheduler ADDRESS | --workers N [--dashboard]]``.

    Every setting is checked before a cluster starts or OUT is touched. Exit status: 0 when every step
    of every chain was planned; 1 when some failed (listed on stdout); 2 for bad arguments or
    settings (``routepack.run: error: ...`` on stderr); 3 when OUT could not be written
    (``routepack.run: error: FILE: REASON; OUT keeps ...``) or the scheduler was not reached; 130 on
    Ctrl-C (``routepack.run: interrupted; OUT keeps ...``). After 3 and 130 the same command resumes."""
    p, s = _parser()
    args = p.parse_args(argv)
    if args.dashboard and args.scheduler:
        s.error("argument --dashboard: not allowed with argument --scheduler")
    run = args.run[0] if len(args.run) == 1 and os.path.isdir(args.run[0]) else args.run
    resume = f"{args.out} keeps the finished steps: rerun the same command to resume"
    client = cluster = None
    status, message = None, None
    try:
        try:
            status, message, job = _checked_job(args, run)
            if status is None and args.scheduler:
                status, message, client = _connect(args.scheduler, resume)
            if status is None:
                job.open()
                if client is None:
                    from distributed import Client

                    cluster = local_cluster(args.workers or 1, dashboard=args.dashboard)
                    client = Client(cluster, set_as_default=False)
                    if args.dashboard:
                        print(f"dashboard: {cluster.dashboard_link}", file=sys.stderr, flush=True)
                report = None if args.quiet else (
                    lambda c, w, st: print(f"{c} {w} {st}", file=sys.stderr, flush=True))
                summary = _run(client, job, report)
        except OSError as e:  # OutWriteError (the file and the reason), or the cluster lost
            status, message = EXIT_STOPPED, f"routepack.run: error: {e}; {resume}"
        except KeyboardInterrupt:
            status, message = EXIT_INTERRUPTED, f"routepack.run: interrupted; {resume}"
        _close(client, cluster, quietly=True)
    except KeyboardInterrupt:
        status, message = EXIT_INTERRUPTED, f"routepack.run: interrupted; {resume}"
    if status is not None:
        print(message, file=sys.stderr, flush=True)
        return status
    planned = sum(1 for line in summary["lines"] if line["status"] == "planned")
    print(f"sweep: {planned} of {len(summary['lines'])} steps planned ({summary['steps']} steps x "
          f"{len(summary['topologies'])} chains); written to {args.out}")
    for f in summary["failed"]:
        print(f"failed: {f['topology']} {f['window']}: {f['error']}")
    return EXIT_STEPS_FAILED if summary["failed"] else EXIT_PLANNED


if __name__ == "__main__":
    sys.exit(main())
