"""RoutePack as a library call inside the training job.

The planner, the placement and the plan file of the C++ core (``routepack._core``, pybind11), with
the names of the paper (``../shared/papers/routepack-paper.txt``): a window of N samples with lengths
t_i and routing counts a[i][l][e] (``[N, L, E]``, L = MoE layers in ``moe_layers`` order, absolute
decoder-layer ids), a :class:`Topology` (P EP ranks, D DP slots in EDP shards, token cap C), and a
:class:`Plan`: R x D execution rows of whole samples plus the placement of experts on EP ranks (LPT,
refined for the rows).

Errors are ``ValueError`` with the CLI's texts (``routepack: error: ...`` without the prefix).
Arguments follow one set of rules (``app/python/py_convert.h``): integers are Python ints or
anything with ``__index__`` (numpy integers), never bools, checked against the argument's range;
arrays may be of either byte order; an exception an argument raises itself (other than a plain
TypeError of the conversion) propagates unchanged, KeyboardInterrupt included; text that comes from
a library is decoded with ``'surrogateescape'``.
"""

from __future__ import annotations

import json
from typing import Callable, Optional, Sequence

from . import _core
from ._core import Library, Placement, Topology, Window, counts_from_routes

__all__ = [
    "Library",
    "Placement",
    "Plan",
    "Topology",
    "Window",
    "counts_from_routes",
    "expert_loads",
    "identity",
    "load_plan",
    "place",
    "plan",
    "plan_from_json",
    "read_trace",
]

Plan = _core.Plan


def plan(
    lengths,
    counts,
    topology: Topology,
    *,
    moe_layers: Sequence[int],
    seed: int = 1,
    workers: int = 1,
    time_limit_s: float = 0.0,
    budgets: Optional[dict] = None,
    progress: Optional[Callable[[str, float], Optional[bool]]] = None,
    top_k: Optional[int] = None,
    num_hidden_layers: Optional[int] = None,
    sample_ids: Optional[Sequence[str]] = None,
    trace_name: str = "python",
    window_name: str = "",
    model_name: str = "",
    previous=None,
) -> Plan:
    """Plans one window: LPT placement (Algorithm 1), certified row count R* (eq. 9), RoutePack
    packing (seeding + population annealing + the final search) with the placement refined for the
    packing (``placement_rounds``; the plan's placement), and the three baselines (on LPT).

    lengths: integer [N], t_i >= 1 tokens. counts: integer [N, L, E] (any integer dtype, values in
    0..2^32-1), L = len(moe_layers). moe_layers: absolute decoder-layer ids, ascending.
    seed: master seed. workers: planner threads (1 by default, a Ray actor usually reserves one CPU;
    0 = all cores); the plan is the same for a seed whatever ``workers``, as long as
    ``time_limit_s`` is 0. budgets: optional dict with the plan file's planner.budgets keys (seeds_M,
    population, choice_width, eta, projections, pair_candidates, levels, t0, cooling, steps_per_level,
    p_guide, rho, p_straggler, row_nodes, polish_evaluations, polish_kick_moves, placement_rounds,
    anytime; the old names seeds and steps still work with a DeprecationWarning; anytime needs
    time_limit_s > 0 and then runs the final search to the limit, so such plans depend on timing). progress: called on the calling thread as ``progress(stage, fraction)`` at every planner event
    and, while a stage runs without events, again with the last stage and fraction every 0.1 s; returning
    False cancels within about as long as Ctrl-C takes (the best valid plan so far comes back with
    ``plan.cancelled`` True). The GIL is
    released while the planner runs; Ctrl-C (KeyboardInterrupt) stops it and propagates.
    top_k / num_hidden_layers / model_name / sample_ids / trace_name / window_name are recorded in
    the plan file (defaults: 1, max(moe_layers) + 1, "", "0".."N-1", "python", "").

    previous: the placement the previous step ran on (a :class:`Plan`, a :class:`Placement`, an
    expert map as a dict or a file path in any shape ``routepack rewrite --map`` reads, or an [L, E]
    logical -> slot array), read and checked as ``routepack plan --previous`` reads it: a path must
    be a regular file (a FIFO, device or folder is refused unread); its MoE layers, experts and EP
    ranks must be the window's. The plan's placement then starts there and pays for its moves: within
    ``budgets["max_moves"]`` (experts moved over all MoE layers; default unlimited, which plans as a
    budget of every expert of every layer) for the paper's
    score, or, when the topology has a ``migration`` section, for the modelled step time (compute +
    materialization). ``plan.migration`` reports the moves, bytes and seconds.

    Raises ValueError for bad input (a sample longer than C, fewer samples than D, E not divisible
    by P, bad shapes or dtypes, negative counts, NaN), with the CLI's text.
    """
    return _core._plan(
        lengths,
        counts,
        topology,
        moe_layers=moe_layers,
        seed=seed,
        workers=workers,
        time_limit_s=time_limit_s,
        budgets=budgets,
        progress=progress,
        top_k=top_k,
        num_hidden_layers=num_hidden_layers,
        sample_ids=sample_ids,
        trace_name=trace_name,
        window_name=window_name,
        model_name=model_name,
        previous=previous,
    )


def plan_window(
    window: Window,
    topology: Topology,
    *,
    seed: int = 1,
    workers: int = 1,
    time_limit_s: float = 0.0,
    budgets: Optional[dict] = None,
    progress: Optional[Callable[[str, float], Optional[bool]]] = None,
    previous=None,
) -> Plan:
    """Plans a :class:`Window` read from a :class:`Library` as ``routepack plan --db`` does: its
    lengths, counts, model, sample ids and per-token routes (so on a topology with more than one
    node the plan carries the communication figures and the grouter / routepack+comm methods); the
    plan's inputs name its trace and window. seed, workers, time_limit_s, budgets, progress,
    previous: as :func:`plan`."""
    return _core._plan_window(
        window,
        topology,
        seed=seed,
        workers=workers,
        time_limit_s=time_limit_s,
        budgets=budgets,
        progress=progress,
        previous=previous,
    )


def place(loads, ep_ranks: int, *, moe_layers: Optional[Sequence[int]] = None,
          num_hidden_layers: Optional[int] = None, previous=None, max_moves: Optional[int] = None) -> Placement:
    """LPT placement (Algorithm 1, the planner's stage 1) from aggregate expert loads alone.

    loads: [L, E] non-negative token counts (integers, or floats holding whole numbers, e.g. SGLang's
    expert-distribution recorder or an EPLB load tensor), or [N, L, E] per-sample counts (summed
    over N). ep_ranks: P, must divide E. moe_layers: absolute ids of the L rows (default 0..L-1).
    previous: the placement the previous step ran on (as :func:`plan` takes it): the placement then
    starts there, moves at most ``max_moves`` experts over all layers (None: unlimited, the same
    placement as a budget of every expert of every layer) and balances the busiest EP rank per layer.
    A previous placement from another model's layers or another EP size is refused (ValueError), as
    ``routepack place --previous`` refuses it.
    """
    import numpy as np

    a = np.asarray(loads)
    if a.ndim != 3:
        a = loads  # the module converts it (and names a bool inside nested lists)
    else:
        if not isinstance(loads, np.ndarray) and a.dtype.kind != "b":
            kinds = {type(x) for x in np.asarray(loads, dtype=object).flat}
            if bool in kinds or np.bool_ in kinds:
                raise ValueError("loads must hold integers (got a bool inside the nested lists)")
        if a.dtype.kind not in "iuf":
            raise ValueError(f"loads must hold integers (got dtype {a.dtype})")
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise ValueError("loads must be finite")
        if a.dtype.kind in "iu" and a.size and a.min() < 0:
            raise ValueError("loads must be non-negative")
        if a.dtype.kind == "f":
            a = a.sum(axis=0, dtype=np.float64)
        elif a.size and a.sum(axis=0, dtype=np.float64).max() >= 2.0**63:
            # numpy's uint64 sum wraps silently: near the top of the range, sum exactly.
            exact = a.astype(object).sum(axis=0)
            l, e = np.unravel_index(int(np.argmax(exact)), exact.shape)
            if exact[l, e] > 2**64 - 1:
                raise ValueError(f"loads[:, {l}, {e}] sums to {exact[l, e]}, more than a uint64 holds "
                                 f"(at most {2**64 - 1})")
            a = exact.astype(np.uint64)
        else:
            a = a.sum(axis=0, dtype=np.uint64)
    return _core._place(a, ep_ranks, None if moe_layers is None else list(moe_layers), num_hidden_layers,
                        previous, max_moves)


def expert_loads(inputs, *, format: str = "auto", model: Optional[str] = None, num_experts: Optional[int] = None,
                 top_k: Optional[int] = None, num_hidden_layers: Optional[int] = None,
                 moe_layers: Optional[Sequence[int]] = None, router_layer_base="auto") -> dict:
    """Per-layer expert loads L[l][e] = sum_i a[i][l][e] read straight from trace files, as
    ``routepack place --input`` reads them (per-sample formats summed sample by sample, aggregate
    files and Megatron-LM router traces as their totals), for :func:`place`.

    inputs: a path (str, bytes, os.PathLike) or a list of them (files or folders). format: a
    ``--format`` name ("auto" detects it). model: a shipped model name (``--model``); num_experts,
    top_k, num_hidden_layers, moe_layers (absolute decoder-layer ids) override it (``--experts``,
    ``--top-k``, ``--layers``, ``--moe-layers``). router_layer_base: the base of a Megatron-LM
    router trace's ``layer`` ids (``--router-layer-base``): "auto" (detected where the file and the
    model show it, e.g. an id reaching num_hidden_layers; refused when both bases fit), 0 (the
    training hooks' 0-based decoder.layers index) or 1 (inference's 1-based layer_number); ignored
    by every other format.

    Returns a dict: loads (uint64 [L, E]), moe_layers, num_hidden_layers, num_experts, top_k,
    format (the format read), files, notes (the import summary's notes, e.g. which layer base a
    router trace was read with). ValueError with the CLI's text for a bad file, model or base."""
    return _core._expert_loads(inputs, format=format, model=model, num_experts=num_experts, top_k=top_k,
                               num_hidden_layers=num_hidden_layers, moe_layers=moe_layers,
                               router_layer_base=router_layer_base)


def identity(layers: int, num_experts: int, ep_ranks: int, *, moe_layers: Optional[Sequence[int]] = None,
             num_hidden_layers: Optional[int] = None) -> Placement:
    """The identity placement pi_l(e) = e (what a job runs before any placement). moe_layers:
    absolute ids of the L = layers rows (default 0..layers-1)."""
    return _core._identity(layers, num_experts, ep_ranks, moe_layers, num_hidden_layers)


def rank_max_over_mean(G) -> list:
    """Per-layer max/mean of rank loads G [L, P] (1.0 = balanced)."""
    return _core._rank_max_over_mean(G)


def load_plan(path) -> Plan:
    """Reads a plan file (format routepack-plan) as written by ``routepack plan`` or
    :meth:`Plan.to_json`. path: str, bytes or os.PathLike. The file is read as the CLI reads it: a
    regular file of at most 256 MiB (a FIFO, device or folder is refused without blocking or
    reading). ValueError naming the file (and the field when it is not a valid plan), with the CLI's
    text, e.g. "<path>: is a pipe (FIFO), not a plan file"."""
    return _core._load_plan(path)


def plan_from_json(text: str) -> Plan:
    """Parses plan file text (see :func:`load_plan`)."""
    return _core._plan_from_json(text)


def _dp_partitions(self) -> list:
    """Per DP slot d, its samples in row order (cells (0, d), (1, d), ...), concatenated."""
    return [[i for row in self.rows for i in row[d]] for d in range(self.dp_slots)]


def _micro_batches(self) -> list:
    """Per DP slot d, per row r, the sample indices of cell (r, d): every DP slot runs
    ``row_count`` micro-batches."""
    return [[row[d] for row in self.rows] for d in range(self.dp_slots)]


def _save(self, path: str) -> None:
    """Writes the plan file (the same text as ``routepack plan --out``)."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(self.to_json())
        f.write("\n")


def _map_dict(fmt: str):
    def get(self) -> dict:
        return json.loads(self.export_map(fmt))

    get.__doc__ = f"The expert map as ``routepack export-map --format {fmt}`` writes it (a dict)."
    return get


Plan.dp_partitions = _dp_partitions
Plan.micro_batches = _micro_batches
Plan.save = _save
for _cls in (Plan, Placement):
    _cls.sglang_map = _map_dict("sglang")
    _cls.vllm_map = _map_dict("vllm")
    _cls.routepack_map = _map_dict("routepack")
Plan.moves = lambda self, previous: self.placement.moves(previous)
Plan.moves.__doc__ = Placement.moves.__doc__
Plan.slot_changes = lambda self, previous: self.placement.slot_changes(previous)
Plan.migration = property(lambda self: __import__("json").loads(self._migration_json), doc=(
    "The moves from the previous placement (plan(..., previous=)): a dict with previous_fingerprint, "
    "max_moves, objective, cost_model, moves, layer_moves, bytes, busiest_rank, materialization_seconds, "
    "compute_seconds, modelled_seconds; None without a previous placement."))
Plan.slot_changes.__doc__ = Placement.slot_changes.__doc__


def read_trace(path, format: str = "auto", model=None, *, routes: bool = True,
               layer_base: str = "auto") -> Window:
    """Reads one step's trace (a file, or a folder ``routepack import`` takes as one input: a padded
    batch of ``.npy`` files, or a folder walked for its trace files in natural order) into memory with
    the importers' exact rules (format detection, the length rule, per-sample validation), writing
    nothing. Returns a :class:`Window`: ``lengths`` (int64 [N], t_i), ``counts`` (uint32 [N, L, E],
    a[i][l][e]), ``sample_ids``, ``moe_layers``, ``num_experts``, ``top_k``, ``format``, and
    ``routes`` ([N] int32 [T, L, K] per-token routes, -1 = missing; None when the file has none or
    ``routes`` is False, which drops each sample's routes as it is read).

    format: ``auto`` or a ``routepack import --format`` name. model: the model that produced the
    trace: a shipped description's name (``routepack import --model``), a path to a Hugging Face
    ``config.json``, a dict with any of ``name``, ``experts``, ``top_k``, ``num_hidden_layers``,
    ``moe_layers`` (and optionally ``model`` / ``config`` to start from), or None (the config.json
    beside the input). layer_base: a Megatron router trace's layer-id base (``auto``, ``0``, ``1``).

    Raises ValueError with the importer's message (file, sample, field), as ``routepack import``
    prints it without the ``routepack: error:`` prefix. The GIL is released while reading.
    """
    import os

    spec = {}
    if isinstance(model, dict):
        spec = dict(model)
        unknown = set(spec) - {"model", "config", "name", "experts", "top_k", "num_hidden_layers", "moe_layers"}
        if unknown:
            raise ValueError(f"model: unknown key(s) {sorted(unknown)} (name, model, config, experts, top_k, "
                             "num_hidden_layers, moe_layers)")
    elif isinstance(model, (str, os.PathLike)):
        text = os.fspath(model)
        spec = {"config": text} if text.endswith(".json") else {"model": text}
    elif model is not None:
        raise ValueError(f"model must be a name, a config.json path, a dict or None (got {type(model).__name__})")
    return _core._read_trace(
        path,
        format=format,
        model_name=spec.get("model", ""),
        model_config=os.fspath(spec.get("config", "")),
        experts=spec.get("experts", 0),
        top_k=spec.get("top_k", 0),
        num_hidden_layers=spec.get("num_hidden_layers", 0),
        moe_layers=list(spec.get("moe_layers", [])),
        name=spec.get("name", ""),
        layer_base=layer_base,
        routes=routes,
    )
