"""A planned step executed with real kernels (PyTorch on CPU) and timed piece by piece: the measured
step beside the cost model's (docs/measure.md).

The step is laid out as a plan lays it out (``rows[r][d]`` the samples of cell (r, d), DP slot d in
EDP shard g, the experts of each MoE layer on their EP ranks as ``physical_to_logical`` places them)
and cut into the pieces the cost model scores (DESIGN.md eqs. 11-15, ``core/plan/score/score.h``):

- attention (r, d): every sample of cell (r, d) through one attention block, on its own (causal, per
  sample inside its row): QKV projection ``[t, h] @ [h, 3h]``, causal softmax attention over
  ``heads`` heads of ``head_dim``, output projection ``[t, h] @ [h, h]``; forward and backward (the
  weights' gradients);
- experts (r, g, l, p): EP rank p's experts at MoE layer l on the tokens the replay routes to them
  from the cells of EDP shard g in row r (``counts[i][l][e]`` summed over those cells' samples, for
  every expert e whose slot is on p): a SwiGLU expert FFN each (``[n, h] @ [h, f]`` gate and up,
  ``[n, f] @ [f, h]`` down), forward and backward. Token counts are never scaled; ``width`` scales
  h (through head_dim) and f.

Each piece runs alone on this thread with ``torch.set_num_threads(1)`` (torch's intra-op pool would
run on other threads, which thread CPU time does not count), once to warm up and then ``repeats``
times; its time is the median of the thread CPU times (``time.thread_time_ns``), which other
processes on the machine do not distort. The step is composed by the step's own synchronization,
as the cost model composes it: a row-shard waits for its slowest cell's attention and, per MoE layer,
for its busiest EP rank (``J[r][g] = max_{d in g} A[r][d] + sum_l max_p X[r][g][l][p]``); a shard
runs its rows one after another (``U_g = sum_r J[r][g]``); the step waits for its slowest shard
(``max_g U_g``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

import routepack

FORMAT = "routepack-measured"
VERSION = 1
#: The paper's four methods, the ones every plan made in this process has.
METHODS = ("baseline", "reorder", "karmarkar_karp", "routepack")


@dataclass(frozen=True)
class Shapes:
    """The model's widths: hidden h, expert FFN f, attention heads, each head's width head_dim
    (default h / heads); ``width`` in (0, 1] scales head_dim (so h = heads x head_dim) and f, where
    the machine cannot hold or run the real ones."""

    hidden: int
    ffn: int
    heads: int
    head_dim: int = 0
    width: float = 1.0

    def __post_init__(self) -> None:
        for name in ("hidden", "ffn", "heads"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise routepack.InputError(f"shapes: {name} must be an integer >= 1 (got {v!r})")
        if self.head_dim == 0:
            if self.hidden % self.heads:
                raise routepack.InputError(f"shapes: hidden {self.hidden} is not a multiple of heads {self.heads}: "
                                           "give head_dim")
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        if isinstance(self.width, bool) or not isinstance(self.width, (int, float)) or not 0 < self.width <= 1:
            raise routepack.InputError(f"shapes: width must be a number in (0, 1] (got {self.width!r})")

    def run_widths(self) -> Tuple[int, int, int]:
        """(h, f, head_dim) the pieces run with: head_dim and f scaled by width (at least 1 each),
        h = heads x head_dim."""
        head_dim = max(1, round(self.head_dim * self.width))
        return self.heads * head_dim, max(1, round(self.ffn * self.width)), head_dim


@dataclass
class StepLayout:
    """One plan's layout of the window: ``rows`` R x D cells of sample indices (``Plan.rows``),
    ``physical_to_logical`` int64 [L, E] (slot v of MoE layer l holds expert p2l[l, v]); name: the
    method or plan it is; modelled_max_u: its ``max_g U`` in the cost model of the measuring topology
    (None: composed from the pieces' modelled costs as the step is, which is the plan's ``max_g U``
    with one attention stage; with several, each cell's stages are summed before the maximum)."""

    name: str
    rows: List[List[List[int]]]
    physical_to_logical: np.ndarray
    modelled_max_u: Optional[float] = None

    def digest(self) -> str:
        """The layout's fingerprint: the first 16 hex digits of the SHA-256 of its rows and
        physical_to_logical as canonical JSON."""
        text = json.dumps([self.rows, np.asarray(self.physical_to_logical).tolist()], separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def method_layouts(plan, methods: Sequence[str] = METHODS) -> List[StepLayout]:
    """The layouts of ``methods`` of a plan made in this process (``Plan.method_layout``), each with
    its ``max_g U`` from the plan's metrics. InputError as Plan.method_layout."""
    out = []
    for m in methods:
        rows, p2l = plan.method_layout(m)
        out.append(StepLayout(m, rows, np.asarray(p2l), float(plan.metrics[m]["score"][0])))
    return out


class _Kernels:
    """The attention block and the expert FFN at the run widths, with inputs drawn once (seeded)."""

    def __init__(self, shapes: Shapes, max_tokens: int, seed: int):
        h, f, head_dim = shapes.run_widths()
        self.heads, self.head_dim, self.h = shapes.heads, head_dim, h
        g = torch.Generator().manual_seed(seed)
        scale = 1.0 / math.sqrt(h)
        self.w_qkv = (torch.randn(h, 3 * h, generator=g) * scale).requires_grad_()
        self.w_o = (torch.randn(h, h, generator=g) * scale).requires_grad_()
        self.w_gate = (torch.randn(h, f, generator=g) * scale).requires_grad_()
        self.w_up = (torch.randn(h, f, generator=g) * scale).requires_grad_()
        self.w_down = (torch.randn(f, h, generator=g) / math.sqrt(f)).requires_grad_()
        self.x = torch.randn(max(1, max_tokens), h, generator=g)

    def attention(self, t: int) -> None:
        x = self.x[:t]
        q, k, v = (x @ self.w_qkv).view(t, 3, self.heads, self.head_dim).permute(1, 2, 0, 3)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        out = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1) @ v
        y = out.permute(1, 0, 2).reshape(t, self.h) @ self.w_o
        torch.autograd.grad(y.sum(), (self.w_qkv, self.w_o))

    def expert(self, n: int) -> None:
        x = self.x[:n]
        y = (torch.nn.functional.silu(x @ self.w_gate) * (x @ self.w_up)) @ self.w_down
        torch.autograd.grad(y.sum(), (self.w_gate, self.w_up, self.w_down))

    def cell(self, lengths: Sequence[int]) -> Callable[[], None]:
        """An attention piece: every sample of a cell through the attention block, one by one."""
        def run() -> None:
            for t in lengths:
                if t > 0:
                    self.attention(t)
        return run

    def rank(self, tokens: Sequence[int]) -> Callable[[], None]:
        """An experts piece: one expert FFN per entry of ``tokens`` (its tokens), one by one."""
        def run() -> None:
            for n in tokens:
                self.expert(n)
        return run


def attention_name(row: int, dp_slot: int) -> str:
    """The ``torch.profiler`` range name of attention piece (row, DP slot): ``routepack:attention:
    row=R:dp_slot=D`` (docs/measure.md "Profiler ranges")."""
    return f"routepack:attention:row={row}:dp_slot={dp_slot}"


def experts_name(row: int, edp_shard: int, moe_layer: int, ep_rank: int) -> str:
    """The ``torch.profiler`` range name of experts piece (row, EDP shard, absolute MoE layer, EP
    rank): ``routepack:experts:row=R:edp_shard=G:moe_layer=L:ep_rank=P``."""
    return f"routepack:experts:row={row}:edp_shard={edp_shard}:moe_layer={moe_layer}:ep_rank={ep_rank}"


def step_name(fingerprint: str, plan: str) -> str:
    """The ``torch.profiler`` range name of a whole step of plan ``plan`` (a method or plan name) on
    the window of fingerprint ``fingerprint``: ``routepack:step:window=F:plan=NAME``; the importer
    counts the piece ranges inside it (docs/measure.md "Profiler ranges")."""
    return f"routepack:step:window={fingerprint}:plan={plan}"


def _timed(run: Callable[[], None], repeats: int, name: str) -> float:
    """Seconds of thread CPU time of ``run``: the median of ``repeats`` runs after one warm-up run.
    Every timed run (not the warm-up) is a ``torch.autograd.profiler.record_function(name)`` range,
    so a ``torch.profiler`` trace of the measurement names each piece ``repeats`` times."""
    run()
    times = []
    for _ in range(repeats):
        with torch.autograd.profiler.record_function(name):
            t0 = time.thread_time_ns()
            run()
            times.append(time.thread_time_ns() - t0)
    return statistics.median(times) / 1e9


def _check_layout(layout: StepLayout, n: int, dp_slots: int, layers: int, experts: int) -> None:
    where = f"layout {layout.name!r}"
    if not layout.rows or any(len(row) != dp_slots for row in layout.rows):
        raise routepack.InputError(f"{where}: rows must be R >= 1 rows of {dp_slots} cells (the topology's DP slots)")
    seen = sorted(i for row in layout.rows for cell in row for i in cell)
    if seen != list(range(n)):
        raise routepack.InputError(f"{where}: the cells must hold every sample of the window's {n} once")
    p2l = np.asarray(layout.physical_to_logical)
    if p2l.shape != (layers, experts):
        raise routepack.InputError(f"{where}: physical_to_logical must be [{layers}, {experts}] (got "
                                   f"{list(p2l.shape)})")


def measure(window, topology, layouts: Sequence[StepLayout], shapes: Shapes, *, repeats: int = 3, seed: int = 0,
            progress: Optional[Callable[[str, int, int], None]] = None) -> Dict[str, Any]:
    """Executes each layout's step and times every piece (module docstring); returns the measured
    document (docs/measure.md "The measured file"), as :func:`write_measured` writes it.

    window: a ``routepack.Window`` (lengths [N], counts [N, L, E]); topology: a
    ``routepack.Topology`` (D DP slots in its EDP shards, P EP ranks); layouts: the steps to run
    (:func:`method_layouts`, or a saved plan's rows and physical_to_logical); shapes: the widths;
    repeats: timed runs per piece (>= 1), median; seed: the inputs' and weights' seed; progress:
    called as progress(layout name, pieces done, pieces) after every piece. Uses one torch thread
    while it runs (the caller's setting is restored). InputError for a layout that does not fit the
    window and topology, a topology without a token cap, or repeats < 1."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise routepack.InputError(f"repeats must be an integer >= 1 (got {repeats!r})")
    lengths = np.asarray(window.lengths, dtype=np.int64)
    counts = np.asarray(window.counts, dtype=np.int64)
    n, L, E = counts.shape
    D, P, C = topology.dp_slots, topology.ep_ranks, topology.token_cap
    invocation = topology.expert_invocation_tokens
    if C < 1:
        raise routepack.InputError("the topology has no token cap C (a samples_per_cell topology derives it from the "
                                   "window; the modelled costs are in units of C): give a topology with token_cap")
    shards = [list(s) for s in topology.edp_shards]
    shard_of = {d: g for g, s in enumerate(shards) for d in s}
    stages = topology.stages
    for layout in layouts:
        _check_layout(layout, n, D, L, E)
    cell_max = max((int(lengths[list(cell)].sum()) for lay in layouts for row in lay.rows for cell in row), default=1)
    kernels = _Kernels(shapes, max(int(lengths.max(initial=1)), cell_max), seed)
    h, f, head_dim = shapes.run_widths()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    plans = []
    try:
        for layout in layouts:
            p2l = np.asarray(layout.physical_to_logical, dtype=np.int64)
            rank_of_expert = np.empty((L, E), dtype=np.int64)
            for l in range(L):
                rank_of_expert[l, p2l[l]] = np.arange(E) // (E // P)
            R = len(layout.rows)
            total = R * D + R * len(shards) * L * P
            done = 0
            pieces: List[Dict[str, Any]] = []
            with torch.autograd.profiler.record_function(step_name(window.fingerprint, layout.name)):
                for r, row in enumerate(layout.rows):
                    for d, cell in enumerate(row):
                        ts = [int(lengths[i]) for i in cell]
                        seconds = _timed(kernels.cell(ts), repeats, attention_name(r, d))
                        modelled = sum(a * sum(ts) / C + b * sum(t * t for t in ts) / (C * C) for _, a, b in stages)
                        pieces.append({"kind": "attention", "row": r, "dp_slot": d, "edp_shard": shard_of[d],
                                       "samples": len(ts), "tokens": sum(ts), "sq_tokens": sum(t * t for t in ts),
                                       "modelled": modelled, "seconds": seconds})
                        done += 1
                        if progress:
                            progress(layout.name, done, total)
                    for g, slots in enumerate(shards):
                        members = [i for d in slots for i in row[d]]
                        per_expert = counts[members].sum(axis=0) if members else np.zeros((L, E), dtype=np.int64)
                        for l in range(L):
                            for p in range(P):
                                tokens = [int(x) for x in per_expert[l][rank_of_expert[l] == p] if x > 0]
                                seconds = _timed(kernels.rank(tokens), repeats,
                                                 experts_name(r, g, window.moe_layers[l], p)) if tokens else 0.0
                                pieces.append({"kind": "experts", "row": r, "edp_shard": g,
                                               "moe_layer": window.moe_layers[l], "ep_rank": p, "experts": len(tokens),
                                               "tokens": sum(tokens), "seconds": seconds,
                                               "modelled": (sum(tokens) + invocation * len(tokens)) / C})
                                done += 1
                                if progress:
                                    progress(layout.name, done, total)
            modelled_max_u = layout.modelled_max_u
            if modelled_max_u is None:
                modelled_max_u = compose([dict(pc, seconds=pc["modelled"]) for pc in pieces], R, shards,
                                         window.moe_layers)["step_seconds"]
            plans.append({"name": layout.name, "layout_digest": layout.digest(), "rows": R,
                          "modelled_max_u": modelled_max_u,
                          "measured": compose(pieces, R, shards, window.moe_layers), "pieces": pieces})
    finally:
        torch.set_num_threads(threads)
    return {"format": FORMAT, "version": VERSION,
            "window": {"trace": window.trace_name, "window": window.window_name, "fingerprint": window.fingerprint,
                       "samples": int(n), "moe_layers": list(window.moe_layers), "experts": int(E)},
            "topology": json.loads(topology.to_json()),
            "shapes": {"hidden": shapes.hidden, "ffn": shapes.ffn, "heads": shapes.heads, "head_dim": shapes.head_dim,
                       "width": shapes.width, "run_hidden": h, "run_ffn": f, "run_head_dim": head_dim,
                       "dtype": "float32"},
            "timing": {"clock": "thread_time", "torch_threads": 1, "warmup": 1, "repeats": repeats,
                       "statistic": "median", "torch": torch.__version__},
            "plans": plans}


def compose(pieces: Sequence[Dict[str, Any]], rows: int, edp_shards: Sequence[Sequence[int]],
            moe_layers: Sequence[int]) -> Dict[str, Any]:
    """The step time from its pieces' seconds, by the step's synchronization (module docstring):
    ``J[r][g] = max_{d in g} attention[r][d] + sum_l max_p experts[r][g][l][p]`` (MoE layers in
    ``moe_layers`` order, left fold), ``U_g = sum_r J[r][g]`` (rows in order), step = max_g U_g.
    Returns {"step_seconds", "shard_seconds" [G], "row_shard_seconds" [R][G]}. Pieces: the
    dicts :func:`measure` records (kind, row, dp_slot or edp_shard / moe_layer / ep_rank, seconds)."""
    G = len(edp_shards)
    shard_of = {d: g for g, s in enumerate(edp_shards) for d in s}
    layer_index = {l: k for k, l in enumerate(moe_layers)}
    attention = [[0.0] * G for _ in range(rows)]
    experts = [[[0.0] * len(moe_layers) for _ in range(G)] for _ in range(rows)]
    for pc in pieces:
        r, s = pc["row"], pc["seconds"]
        if pc["kind"] == "attention":
            g = shard_of[pc["dp_slot"]]
            attention[r][g] = max(attention[r][g], s)
        else:
            k = layer_index[pc["moe_layer"]]
            experts[r][pc["edp_shard"]][k] = max(experts[r][pc["edp_shard"]][k], s)
    J = []
    for r in range(rows):
        line = []
        for g in range(G):
            total = attention[r][g]
            for x in experts[r][g]:
                total += x
            line.append(total)
        J.append(line)
    U = []
    for g in range(G):
        total = 0.0
        for r in range(rows):
            total += J[r][g]
        U.append(total)
    return {"step_seconds": max(U) if U else 0.0, "shard_seconds": U, "row_shard_seconds": J}


def write_measured(doc: Dict[str, Any], path: str) -> None:
    """Writes a measured document (:func:`measure`) as indented JSON through a temporary file and a
    rename, so that ``path`` is either the old file or the whole new one."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(doc, indent=1) + "\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def check_measured(doc: Any, origin: str = "measured", fingerprint: Optional[str] = None) -> Dict[str, Any]:
    """Checks a measured document as read from JSON (``origin`` names it in errors) and returns it,
    with the format's one reader, which ``routepack calibrate`` uses too (core/plan/measured.h
    parse_measured): the format and version, the
    window (and, given ``fingerprint``, that it is that window's), the topology (the topology file's
    rules), the shapes, and every plan's pieces: each field in range (seconds finite and >= 0), every
    attention piece (row, DP slot) and experts piece (row, EDP shard, MoE layer, EP rank) present
    exactly once, and ``measured`` equal to what the pieces compose to (:func:`compose`).
    InputError "<origin>: <field path> ..." otherwise (a NaN or infinity is not JSON: "<origin>:
    malformed JSON ...")."""
    routepack._core._check_measured(json.dumps(doc), origin, fingerprint or "")
    return doc


def read_measured(path: str, fingerprint: Optional[str] = None) -> Dict[str, Any]:
    """A measured file (docs/measure.md), checked by :func:`check_measured` (``fingerprint``: the
    window it must be of). MissingFileError for a missing file; InputError naming the file for text
    that is not JSON (a truncated file) and for every bad field."""
    text = routepack._core._read_measured_text(path)
    routepack._core._check_measured(text, str(path), fingerprint or "")
    return json.loads(text)


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> Optional[float]:
    """The Pearson correlation of two equal-length series; None with fewer than 2 points or a
    constant series."""
    if len(xs) < 2:
        return None
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    sx, sy = x.std(), y.std()
    if sx == 0 or sy == 0:
        return None
    return float(((x - x.mean()) * (y - y.mean())).mean() / (sx * sy))


def report(doc: Dict[str, Any]) -> str:
    """The measured document as the command prints it: per plan its rows, modelled max_g U, measured
    step seconds and the gain of each plan against the first one in both; then, over every plan's
    pieces with tokens, the correlation of modelled and measured piece costs per kind."""
    plans = doc["plans"]
    first = plans[0]
    lines = [f"{'plan':<16} {'rows':>4} {'modelled max_g U':>17} {'measured s':>11} "
             f"{'vs ' + first['name'] + ' modelled':>24} {'measured':>9}"]
    for p in plans:
        mu, ms = p["modelled_max_u"], p["measured"]["step_seconds"]
        gain_m = "" if mu is None or not first["modelled_max_u"] else \
            f"{100 * (mu / first['modelled_max_u'] - 1):+.1f}%"
        gain_s = f"{100 * (ms / first['measured']['step_seconds'] - 1):+.1f}%" \
            if first["measured"]["step_seconds"] else ""
        lines.append(f"{p['name']:<16} {p['rows']:>4} {'' if mu is None else format(mu, '.3f'):>17} "
                     f"{ms:>11.6f} {gain_m:>24} {gain_s:>9}")
    for kind in ("attention", "experts"):
        pieces = [pc for p in plans for pc in p["pieces"] if pc["kind"] == kind and pc["tokens"] > 0]
        r = _pearson([pc["modelled"] for pc in pieces], [pc["seconds"] for pc in pieces])
        lines.append(f"{kind} pieces: {len(pieces)}, correlation of modelled and measured cost "
                     f"{'n/a' if r is None else format(r, '.3f')}")
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python3 -m routepack.torch.measure",
        description="Execute a planned step with real kernels (PyTorch, CPU) and time its pieces; the measured "
                    "step beside the cost model's (docs/measure.md).")
    src = p.add_argument_group("the window")
    src.add_argument("--db", help="library file (with --trace, --window)")
    src.add_argument("--trace", help="trace name in the library")
    src.add_argument("--window", default="", help="window name (default: the whole trace)")
    src.add_argument("--input", help="a trace file or folder read straight (routepack.read_trace), with --model")
    src.add_argument("--model", help="shipped model name or config.json of --input")
    p.add_argument("--topology", required=True, help="topology file or shipped name")
    p.add_argument("--methods", default=",".join(METHODS),
                   help=f"methods to run, planned here (default {','.join(METHODS)}; 'none' for --plan only)")
    p.add_argument("--plan", action="append", default=[], metavar="FILE",
                   help="also run a saved plan of the window (its routepack layout); repeatable")
    p.add_argument("--seed", type=int, default=1, help="planner seed (default 1)")
    p.add_argument("--hidden", type=int, required=True, help="model hidden size h")
    p.add_argument("--ffn", type=int, required=True, help="one routed expert's FFN width f")
    p.add_argument("--heads", type=int, required=True, help="attention heads")
    p.add_argument("--head-dim", type=int, default=0, help="width of a head (default hidden / heads)")
    p.add_argument("--width", type=float, default=1.0, help="fraction of head_dim and f the pieces run with (0, 1]")
    p.add_argument("--repeats", type=int, default=3, help="timed runs per piece, median (default 3)")
    p.add_argument("--profile", metavar="TRACE", help="also record the measurement with torch.profiler (CPU) and "
                   "write its Chrome trace here (routepack import-measured TRACE --plan ... reads it)")
    p.add_argument("--out", required=True, help="measured file to write")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def _export_trace(prof, path: str) -> None:
    """A profiler's Chrome trace written through a temporary file and a rename."""
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        prof.export_chrome_trace(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _window(args, p: argparse.ArgumentParser):
    if args.db and args.input:
        p.error("give either --db (with --trace) or --input (with --model), not both")
    if args.db:
        if not args.trace:
            p.error("--db needs --trace")
        return routepack.Library(args.db).load(args.trace, args.window)
    if args.input:
        return routepack.read_trace(args.input, model=args.model)
    p.error("give the window: --db LIB --trace T [--window W], or --input PATH --model M")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python3 -m routepack.torch.measure``: plans the window for ``--methods`` (and reads the
    ``--plan`` files), runs every plan's step (:func:`measure`), writes the measured file and prints
    :func:`report`. Exit status 0; 2 for bad arguments (argparse's usage line); 1 for bad input
    (``measure: error: ...`` on stderr)."""
    p = _parser()
    args = p.parse_args(argv)
    try:
        window = _window(args, p)
        topology = routepack.Topology.load(args.topology)
        shapes = Shapes(args.hidden, args.ffn, args.heads, args.head_dim, args.width)
        methods = [] if args.methods == "none" else [m for m in args.methods.split(",") if m]
        layouts = []
        if methods:
            layouts += method_layouts(routepack.plan_window(window, topology, seed=args.seed), methods)
        for path in args.plan:
            plan = routepack.load_plan(path)
            if plan.fingerprint != window.fingerprint:
                raise routepack.InputError(f"{path}: a plan of another window (fingerprint {plan.fingerprint}, the "
                                           f"window's {window.fingerprint})")
            # The plan's own max_g U is in its topology's cost model; under another (a calibrated one)
            # the pieces' modelled costs compose it.
            same = routepack.Topology.from_json(json.dumps(json.loads(plan.to_json())["topology"])) == topology
            layouts.append(StepLayout(os.path.basename(path), plan.rows, np.asarray(plan.physical_to_logical),
                                      float(plan.score[0]) if same else None))
        if not layouts:
            p.error("nothing to run: give --methods or --plan")
        last: Dict[str, int] = {}

        def progress(name, done, total):
            if not args.quiet and (done == total or done - last.get(name, 0) >= max(1, total // 10)):
                last[name] = done
                print(f"{name}: {done}/{total} pieces", file=sys.stderr, flush=True)

        if args.profile:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                doc = measure(window, topology, layouts, shapes, repeats=args.repeats, seed=args.seed,
                              progress=progress)
            _export_trace(prof, args.profile)
        else:
            doc = measure(window, topology, layouts, shapes, repeats=args.repeats, seed=args.seed, progress=progress)
        write_measured(doc, args.out)
    except ValueError as e:
        print(f"measure: error: {e}", file=sys.stderr)
        return 1
    print(report(doc))
    if args.profile:
        print(f"profiler trace written to {args.profile}")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
