"""RoutePack as a library call inside the training job.

The planner, the placement and the plan file of the C++ core (``routepack._core``, pybind11), with
the names of the paper (``../shared/papers/routepack-paper.txt``): a window of N samples with lengths
t_i and routing counts a[i][l][e] (``[N, L, E]``, L = MoE layers in ``moe_layers`` order, absolute
decoder-layer ids), a :class:`Topology` (P EP ranks, D DP slots in EDP shards, token cap C), and a
:class:`Plan`: R x D execution rows of whole samples plus the placement of experts on EP ranks (LPT,
refined for the rows).

Errors: every error the module raises is a :class:`routepack.Error`, and also the built-in
exception of its kind: :class:`InputError` (a ``ValueError``) for bad input, with the CLI's texts
(``routepack: error: ...`` without the prefix); :class:`MissingFileError` (an ``InputError`` and a
``FileNotFoundError``) when a file the input names does not exist. :class:`Cancelled` is a
``KeyboardInterrupt``, outside ``Error``. Arguments follow one set of rules
(``app/python/py_convert.h``): integers are Python ints or anything with ``__index__`` (numpy
integers), never bools, checked against the argument's range; arrays may be of either byte order; an
exception an argument raises itself (other than a plain TypeError of the conversion) propagates
unchanged, KeyboardInterrupt included; text that comes from a library is decoded with
``'surrogateescape'``. The arrays of a :class:`Plan`, a :class:`Placement` and a :class:`Window` are
read-only (the plan's own values, not copies). ``__version__`` is the CLI's ``routepack --version``.
"""

from __future__ import annotations as _annotations

import json as _json
import os as _os
import typing as _typing
from collections.abc import Mapping as _Mapping

from . import _core
from ._core import (
    Cancelled,
    Error,
    InputError,
    Library,
    MissingFileError,
    Placement,
    Plan,
    Topology,
    Window,
    __version__,
)

if _typing.TYPE_CHECKING:
    import os
    from typing import Any, Callable, Literal, Sequence, SupportsIndex

    from collections.abc import Mapping

    import numpy as np
    import numpy.typing as npt

    #: What ``previous=`` takes: a Plan, a Placement, an expert map (a dict, or a file), or an
    #: [L, E] logical -> slot array.
    _Previous = Plan | Placement | Mapping[str, Any] | str | os.PathLike[str] | npt.ArrayLike | None

__all__ = [
    "Cancelled",
    "Error",
    "InputError",
    "Library",
    "MissingFileError",
    "Placement",
    "Plan",
    "Topology",
    "Window",
    "calibrate",
    "counts_from_routes",
    "expert_loads",
    "identity",
    "load_plan",
    "place",
    "plan",
    "plan_from_json",
    "plan_window",
    "rank_max_over_mean",
    "read_trace",
]


def _budgets_dict(budgets: Mapping[str, float] | None) -> Mapping[str, float] | None:
    """A Mapping of budgets as the dict the module reads (anything else is passed on, refused there)."""
    if budgets is not None and not isinstance(budgets, dict) and isinstance(budgets, _Mapping):
        return dict(budgets)
    return budgets


def plan(
    lengths: npt.ArrayLike,
    counts: npt.ArrayLike,
    topology: Topology,
    *,
    moe_layers: Sequence[SupportsIndex],
    seed: SupportsIndex = 1,
    workers: SupportsIndex = 1,
    time_limit_s: float = 0.0,
    budgets: Mapping[str, float] | None = None,
    progress: Callable[[str, float], object] | None = None,
    top_k: SupportsIndex | None = None,
    num_hidden_layers: SupportsIndex | None = None,
    sample_ids: Sequence[str] | None = None,
    trace_name: str = "python",
    window_name: str = "",
    model_name: str = "",
    previous: _Previous = None,
) -> Plan:
    """Plans one window given as arrays: its rows and the placement of its experts.

    LPT placement (Algorithm 1), the certified row count R* (eq. 9), RoutePack packing
    (seeding, population annealing, the final search) with the placement refined for
    the packing (``placement_rounds``), and the three baselines (on LPT). The same plan
    as ``routepack plan`` for the same window, topology, seed and budgets. The GIL is
    released while the planner runs; Ctrl-C (KeyboardInterrupt) stops it and
    propagates.

    Parameters
    ----------
    lengths : array_like of int, shape (N,)
        t_i >= 1, the tokens of each sample.
    counts : array_like of int, shape (N, L, E)
        a[i][l][e], the tokens of sample i routed to expert e at MoE layer index l
        (any integer dtype, values in 0..2^32-1); L = len(moe_layers).
    topology : Topology
        P, D, the EDP shards, C, the attention stages and the batch rules.
    moe_layers : sequence of int
        The absolute decoder-layer ids of the L MoE layers, ascending.
    seed : int, default 1
        The master seed (0..2^64-1).
    workers : int, default 1
        Planner threads (0: all cores; a Ray actor usually reserves one CPU). The plan
        is the same for a seed whatever ``workers``, as long as time_limit_s is 0.
    time_limit_s : float, default 0.0
        Seconds the search may take (0: no limit); with a limit, plans depend on
        timing.
    budgets : mapping of str to number, optional
        The plan file's ``planner.budgets`` keys (seeds_M, population, choice_width,
        eta, projections, pair_candidates, levels, t0, cooling, steps_per_level,
        p_guide, rho, p_straggler, row_nodes, polish_evaluations, polish_kick_moves,
        placement_rounds, anytime, max_moves; docs/budgets.md). The old names seeds
        and steps still work, with a DeprecationWarning. anytime needs time_limit_s
        > 0 and then runs the final search to the limit.
    progress : callable, optional
        Called on the calling thread as ``progress(stage, fraction)`` at every planner
        event and, while a stage runs without events, again every 0.1 s; returning
        False cancels within about as long as Ctrl-C takes, and the best valid plan
        so far comes back with ``plan.cancelled`` True.
    top_k : int, optional
        The experts per token, recorded in the plan file (default 1).
    num_hidden_layers : int, optional
        The model's decoder layers, recorded (default max(moe_layers) + 1).
    sample_ids : sequence of str, optional
        Unique ids of the samples, recorded (default "0".."N-1").
    trace_name : str, default 'python'
        The trace name the plan file records as its input.
    window_name : str, default ''
        The window name the plan file records.
    model_name : str, default ''
        A model name, recorded; a shipped model's name gives a previous placement's
        moves their bytes and seconds.
    previous : Plan, Placement, dict, path or array_like, optional
        The placement the previous step ran on: a Plan, a Placement, an expert map
        (a dict, or a file path in any shape ``routepack rewrite --map`` reads; a
        regular file of at most 256 MiB), or an [L, E] logical -> slot array. Its MoE
        layers, experts and EP ranks must be the window's. The placement then starts
        there and pays for its moves: at most ``budgets["max_moves"]`` experts moved
        over all MoE layers (default unlimited) for the paper's score, or, when the
        topology has a ``migration`` section, for the modelled step time.
        ``Plan.migration`` reports the moves, bytes and seconds.

    Returns
    -------
    Plan
        The plan: rows, placement, scores and metrics of every method.

    Raises
    ------
    InputError
        Bad input, with the CLI's text: a sample longer than C, fewer samples than
        D, E not divisible by P, bad shapes or dtypes, negative counts, NaN, a
        budget out of its range (``budgets['levels'] = 1001 is too large (at most
        1000)``), a previous placement of another model.
    MissingFileError
        ``previous`` names a file that does not exist.

    See Also
    --------
    plan_window : plans a Window (a library's, or one step's files).
    """
    return _core._plan(
        lengths,
        counts,
        topology,
        moe_layers=moe_layers,
        seed=seed,
        workers=workers,
        time_limit_s=time_limit_s,
        budgets=_budgets_dict(budgets),
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
    seed: SupportsIndex = 1,
    workers: SupportsIndex = 1,
    time_limit_s: float = 0.0,
    budgets: Mapping[str, float] | None = None,
    progress: Callable[[str, float], object] | None = None,
    previous: _Previous = None,
) -> Plan:
    """Plans a Window as ``routepack plan --db`` plans a library's window.

    Its lengths, counts, model, sample ids and per-token routes are planned, so on a
    topology of more than one node the plan carries the communication figures and
    the grouter and routepack+comm methods; the plan's inputs name the window's trace
    and window. For a window of a library, the CLI's plan bit for bit.

    Parameters
    ----------
    window : Window
        From Library.load, read_trace, or Window(lengths, counts, ...).
    topology : Topology
        P, D, the EDP shards, C, the attention stages and the batch rules.
    seed : int, default 1
        The master seed, as for :func:`plan`.
    workers : int, default 1
        Planner threads, as for :func:`plan`.
    time_limit_s : float, default 0.0
        Seconds the search may take (0: no limit).
    budgets : mapping of str to number, optional
        The plan file's ``planner.budgets`` keys, as for :func:`plan`.
    progress : callable, optional
        ``progress(stage, fraction)``; returning False cancels, as for :func:`plan`.
    previous : Plan, Placement, dict, path or array_like, optional
        The placement the previous step ran on, as for :func:`plan`.

    Returns
    -------
    Plan
        The plan of the window.

    Raises
    ------
    InputError
        Bad input, with the CLI's text, as for :func:`plan`.
    MissingFileError
        ``previous`` names a file that does not exist.
    """
    return _core._plan_window(
        window,
        topology,
        seed=seed,
        workers=workers,
        time_limit_s=time_limit_s,
        budgets=_budgets_dict(budgets),
        progress=progress,
        previous=previous,
    )


def _summed_loads(loads: npt.ArrayLike) -> object:
    """[N, L, E] per-sample counts summed over N exactly (uint64, or float64 for float loads); any
    other shape as given (the module converts it and names a bool inside nested lists)."""
    import numpy as np

    a = np.asarray(loads)
    if a.ndim != 3:
        return loads
    if not isinstance(loads, np.ndarray) and a.dtype.kind != "b":
        kinds = {type(x) for x in np.asarray(loads, dtype=object).flat}
        if bool in kinds or np.bool_ in kinds:
            raise InputError("loads must hold integers (got a bool inside the nested lists)")
    if a.dtype.kind not in "iuf":
        raise InputError(f"loads must hold integers (got dtype {a.dtype})")
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise InputError("loads must be finite")
    if a.dtype.kind in "iu" and a.size and a.min() < 0:
        raise InputError("loads must be non-negative")
    if a.dtype.kind == "f":
        return a.sum(axis=0, dtype=np.float64)
    if a.size and a.sum(axis=0, dtype=np.float64).max() >= 2.0**63:
        # numpy's uint64 sum wraps silently: near the top of the range, sum exactly.
        exact = a.astype(object).sum(axis=0)
        l, e = np.unravel_index(int(np.argmax(exact)), exact.shape)
        if exact[l, e] > 2**64 - 1:
            raise InputError(f"loads[:, {l}, {e}] sums to {exact[l, e]}, more than a uint64 holds "
                             f"(at most {2**64 - 1})")
        return exact.astype(np.uint64)
    return a.sum(axis=0, dtype=np.uint64)


def place(
    loads: npt.ArrayLike,
    ep_ranks: SupportsIndex,
    *,
    moe_layers: Sequence[SupportsIndex] | None = None,
    num_hidden_layers: SupportsIndex | None = None,
    previous: _Previous = None,
    max_moves: SupportsIndex | None = None,
) -> Placement:
    """The LPT placement of experts from their loads alone (Algorithm 1, the planner's stage 1).

    As ``routepack place``: per MoE layer, experts in descending load go to the EP rank
    with the least load that has a free slot.

    Parameters
    ----------
    loads : array_like, shape (L, E) or (N, L, E)
        Non-negative tokens per MoE layer index and expert: integers, or floats holding
        whole numbers (SGLang's expert-distribution recorder, an EPLB load tensor);
        per-sample counts [N, L, E] are summed over N.
    ep_ranks : int
        P, the EP ranks; P must divide E.
    moe_layers : sequence of int, optional
        The absolute decoder-layer ids of the L rows (default 0..L-1).
    num_hidden_layers : int, optional
        The model's decoder layers (default max(moe_layers) + 1).
    previous : Plan, Placement, dict, path or array_like, optional
        The placement the previous step ran on, as :func:`plan` takes it. The placement
        then starts there, moves at most ``max_moves`` experts over all layers and
        balances the busiest EP rank per layer.
    max_moves : int, optional
        The most experts moved from ``previous`` (None: unlimited, the placement a
        budget of every expert of every layer gives).

    Returns
    -------
    Placement
        The placement, on P EP ranks.

    Raises
    ------
    InputError
        A negative, fractional or non-finite load, sums past 2**64-1, E not divisible
        by P, a previous placement of another model or EP size (as ``routepack place
        --previous`` refuses it).
    MissingFileError
        ``previous`` names a file that does not exist.
    """
    return _core._place(_summed_loads(loads), ep_ranks, None if moe_layers is None else list(moe_layers),
                        num_hidden_layers, previous, max_moves)


def expert_loads(
    inputs: str | bytes | os.PathLike[str] | Sequence[str | bytes | os.PathLike[str]],
    *,
    format: str = "auto",
    model: str | None = None,
    num_experts: SupportsIndex | None = None,
    top_k: SupportsIndex | None = None,
    num_hidden_layers: SupportsIndex | None = None,
    moe_layers: Sequence[SupportsIndex] | None = None,
    router_layer_base: Literal["auto", "0", "1", 0, 1] = "auto",
) -> dict[str, Any]:
    """Per-layer expert loads L[l][e] = sum_i a[i][l][e] read straight from trace files.

    As ``routepack place --input`` reads them: per-sample formats summed sample by
    sample, aggregate files and Megatron-LM router traces as their totals; for
    :func:`place`.

    Parameters
    ----------
    inputs : path or list of paths
        Trace files or folders (str, bytes or os.PathLike).
    format : str, default 'auto'
        A ``--format`` name; 'auto' detects it.
    model : str, optional
        A shipped model's name (``--model``).
    num_experts : int, optional
        E, over the model's (``--experts``).
    top_k : int, optional
        The experts per token, over the model's (``--top-k``).
    num_hidden_layers : int, optional
        The decoder layers, over the model's (``--layers``).
    moe_layers : sequence of int, optional
        The absolute MoE layer ids, over the model's (``--moe-layers``).
    router_layer_base : {'auto', 0, 1}, default 'auto'
        The base of a Megatron-LM router trace's ``layer`` ids
        (``--router-layer-base``): 'auto' detects it where the file and the model show
        it (refused when both bases fit), 0 the training hooks' decoder.layers index,
        1 inference's layer_number. Ignored by every other format.

    Returns
    -------
    dict
        loads (numpy.ndarray of uint64, shape (L, E)), moe_layers, num_hidden_layers,
        num_experts, top_k, format (the format read), files, notes (the import
        summary's notes, e.g. the layer base a router trace was read with).

    Raises
    ------
    InputError
        A bad file, model or base, with the CLI's text.
    MissingFileError
        An input that does not exist.
    """
    return _core._expert_loads(inputs, format=format, model=model, num_experts=num_experts, top_k=top_k,
                               num_hidden_layers=num_hidden_layers, moe_layers=moe_layers,
                               router_layer_base=router_layer_base)


def identity(
    layers: SupportsIndex,
    num_experts: SupportsIndex,
    ep_ranks: SupportsIndex,
    *,
    moe_layers: Sequence[SupportsIndex] | None = None,
    num_hidden_layers: SupportsIndex | None = None,
) -> Placement:
    """The identity placement pi_l(e) = e: what a job runs before any placement.

    Parameters
    ----------
    layers : int
        L, the MoE layers.
    num_experts : int
        E, the experts per layer.
    ep_ranks : int
        P, the EP ranks; P must divide E.
    moe_layers : sequence of int, optional
        The absolute decoder-layer ids of the L rows (default 0..L-1).
    num_hidden_layers : int, optional
        The model's decoder layers (default max(moe_layers) + 1).

    Returns
    -------
    Placement
        Slot e holds logical expert e at every layer.

    Raises
    ------
    InputError
        E not divisible by P, or moe_layers that do not name L layers.
    """
    return _core._identity(layers, num_experts, ep_ranks, moe_layers, num_hidden_layers)


def rank_max_over_mean(G: npt.ArrayLike) -> list[float]:
    """The imbalance of rank loads per layer: max_p G[l][p] / mean_p G[l][p].

    Parameters
    ----------
    G : array_like, shape (L, P)
        Rank loads, as Placement.rank_loads gives them (non-negative).

    Returns
    -------
    list of float
        Per layer, 1.0 when balanced (and for a layer without load).

    Raises
    ------
    InputError
        Another shape, or a negative load.
    """
    return _core._rank_max_over_mean(G)


def load_plan(path: str | bytes | os.PathLike[str]) -> Plan:
    """Reads a plan file, as written by ``routepack plan`` or Plan.save.

    The file is read as the CLI reads it: a regular file of at most 256 MiB (a FIFO,
    device or folder is refused without blocking or reading).

    Parameters
    ----------
    path : str, bytes or os.PathLike
        The plan file (format routepack-plan).

    Returns
    -------
    Plan
        The plan; its to_json() is the file's text.

    Raises
    ------
    MissingFileError
        No file at `path` ("<path>: no such plan file").
    InputError
        Not a regular file ("<path>: is a pipe (FIFO), not a plan file"), too large,
        or not a valid plan file (naming the file and the field).
    """
    return _core._load_plan(path)


def calibrate(measured: str | bytes | os.PathLike[str], topology: Topology) -> tuple[Topology, dict[str, Any]]:
    """Fits a topology's cost model to a measured step, as ``routepack calibrate`` does.

    The attention pieces of every plan in the file fit ``seconds = x1 * tokens + x2 *
    sum t_i^2``, the experts pieces ``seconds = a * invocations + b * tokens`` (least
    squares, coefficients >= 0, pieces without tokens left out). In cost units (the
    linear expert term keeps its weight, 1 per token / C): alpha = x1 / b, beta =
    x2 * C / b summed over the stages (several stages keep their shares), and
    expert_invocation_tokens = round(a / b). docs/measure.md, "Calibration".

    Parameters
    ----------
    measured : str, bytes or os.PathLike
        A measured step file (``python3 -m routepack.torch.measure --out``; format
        routepack-measured, version 1), read as the CLI reads it (a regular file of
        at most 1 GiB).
    topology : Topology
        The topology to calibrate; its token cap C converts the units, and every
        other setting is kept.

    Returns
    -------
    (Topology, dict)
        The calibrated topology, and the fit: ``plans``; ``attention`` and
        ``experts``, each ``{pieces, x1, x2, r2, rel_rms}`` (x1, x2 in seconds per
        token, per squared token, per invocation, per token); ``alpha``, ``beta``
        (the fitted stage sums), ``old_alpha``, ``old_beta``,
        ``expert_invocation_tokens`` and ``seconds_per_U`` (b * C: the measured
        machine's seconds per unit of max_g U, not written into the topology).

    Raises
    ------
    MissingFileError
        No file at `measured`.
    InputError
        Not a measured step file, naming the file and the field ("m.json:
        plans[0].pieces[3].seconds is -1, not a finite number >= 0"), fewer than 2
        attention or experts pieces with tokens, experts pieces whose seconds do
        not grow with tokens, or a topology without a token cap.
    """
    return _core._calibrate(measured, topology)


def plan_from_json(text: str) -> Plan:
    """Parses plan file text (the format of :func:`load_plan`); the same as Plan(text).

    Parameters
    ----------
    text : str
        The text of a plan file.

    Returns
    -------
    Plan
        The plan the text describes.

    Raises
    ------
    InputError
        Text that is not a valid plan file, naming the field.
    """
    return _core._plan_from_json(text)


def counts_from_routes(
    routes: npt.ArrayLike | Sequence[npt.ArrayLike],
    num_experts: SupportsIndex,
    *,
    moe_layers: Sequence[SupportsIndex],
    layer_axis: Literal["all", "moe"] = "all",
    valid: npt.ArrayLike | None = None,
) -> npt.NDArray[np.int32]:
    """Routing counts a[i][l][e] from per-token routes (the rollout's replay).

    A route of -1 never counts. Arrays of either byte order are read by value (a
    '>i2' array gives the counts of its native twin). The GIL is released while
    counting.

    Parameters
    ----------
    routes : array_like of int, shape (B, S, L, K), or list of array_like, shape (T, L, K)
        Expert ids per token, layer and choice: a padded batch, or one array per
        sample; int16, int32 or uint8 (int8 and int64 accepted). L is every decoder
        layer (layer_axis 'all'; rows of dense layers ignored) or only the MoE layers
        (layer_axis 'moe').
    num_experts : int
        E; a route outside -1..E-1 is refused.
    moe_layers : sequence of int
        The absolute decoder-layer ids of the MoE layers to count, ascending.
    layer_axis : {'all', 'moe'}, default 'all'
        What the L axis of ``routes`` holds.
    valid : array_like of bool or int, shape (B, S), optional
        The tokens that count (nonzero) of a padded batch.

    Returns
    -------
    numpy.ndarray of int32, shape (N, len(moe_layers), E)
        a[i][l][e], N = B samples of a batch or the list's length.

    Raises
    ------
    InputError
        A route outside 0..E-1 other than -1 (named by its index), bad shapes or
        dtypes, a mask with a list of arrays.
    """
    return _core._counts_from_routes(routes, num_experts, moe_layers=moe_layers, layer_axis=layer_axis, valid=valid)


def read_trace(
    path: str | bytes | os.PathLike[str],
    format: str = "auto",
    model: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    *,
    routes: bool = True,
    layer_base: Literal["auto", "0", "1"] = "auto",
) -> Window:
    """Reads one step's trace into memory with the importers' exact rules, writing nothing.

    A file, or a folder ``routepack import`` takes as one input (a padded batch of
    ``.npy`` files, or a folder walked for its trace files in natural order), read with
    format detection, the length rule and per-sample validation. The GIL is released
    while reading.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        The file or folder.
    format : str, default 'auto'
        'auto' or a ``routepack import --format`` name.
    model : str, os.PathLike, dict or None, optional
        The model that produced the trace: a shipped description's name (``routepack
        import --model``), a path to a Hugging Face ``config.json``, a dict with any of
        name, experts, top_k, num_hidden_layers, moe_layers (and model or config to
        start from), or None (the config.json beside the input).
    routes : bool, default True
        Keep the per-token routes (False drops each sample's routes as it is read).
    layer_base : {'auto', '0', '1'}, default 'auto'
        A Megatron router trace's layer-id base.

    Returns
    -------
    Window
        lengths (int64 [N], t_i), counts (uint32 [N, L, E]), sample_ids, moe_layers,
        num_experts, top_k, format, and routes ([N] int32 [T, L, K] per-token routes,
        -1 = missing; None when the file has none or ``routes`` is False).

    Raises
    ------
    InputError
        The importer's message (file, sample, field), as ``routepack import`` prints it
        without the ``routepack: error:`` prefix; a model dict with an unknown key.
    MissingFileError
        No file or folder at `path`, or a model config.json that does not exist.
    """
    spec: dict[str, Any] = {}
    if isinstance(model, _Mapping):
        spec = dict(model)
        unknown = set(spec) - {"model", "config", "name", "experts", "top_k", "num_hidden_layers", "moe_layers"}
        if unknown:
            raise InputError(f"model: unknown key(s) {sorted(unknown)} (name, model, config, experts, top_k, "
                             "num_hidden_layers, moe_layers)")
    elif isinstance(model, (str, _os.PathLike)):
        text = _os.fspath(model)
        spec = {"config": text} if text.endswith(".json") else {"model": text}
    elif model is not None:
        raise InputError(f"model must be a name, a config.json path, a dict or None (got {type(model).__name__})")
    return _core._read_trace(
        path,
        format=format,
        model_name=spec.get("model", ""),
        model_config=_os.fspath(spec.get("config", "")),
        experts=spec.get("experts", 0),
        top_k=spec.get("top_k", 0),
        num_hidden_layers=spec.get("num_hidden_layers", 0),
        moe_layers=list(spec.get("moe_layers", [])),
        name=spec.get("name", ""),
        layer_base=layer_base,
        routes=routes,
    )


# ---------------------------------------------------------------------------------------------
# Methods of Plan and Placement written in Python


def _dp_partitions(self: Plan) -> list[list[int]]:
    """The samples of each DP slot, in row order.

    Returns
    -------
    list of list of int
        Per DP slot d, the sample indices of cells (0, d), (1, d), ... concatenated.
    """
    return [[i for row in self.rows for i in row[d]] for d in range(self.dp_slots)]


def _micro_batches(self: Plan) -> list[list[list[int]]]:
    """The micro-batches of each DP slot: every DP slot runs ``row_count`` of them.

    Returns
    -------
    list of list of list of int
        Per DP slot d, per row r, the sample indices of cell (r, d).
    """
    return [[row[d] for row in self.rows] for d in range(self.dp_slots)]


def _save(self: Plan, path: str | os.PathLike[str]) -> None:
    """Writes the plan file: the text of ``routepack plan --out`` (to_json() and a newline).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (replaced when it exists).

    Raises
    ------
    OSError
        The file cannot be written.
    """
    with open(path, "w", encoding="utf-8") as f:
        f.write(self.to_json())
        f.write("\n")


def _moves(self: Plan, previous: Plan | Placement) -> list[list[tuple[int, int, int, int, int]]]:
    """The experts moved from `previous` to the plan's placement (Placement.moves).

    Parameters
    ----------
    previous : Placement or Plan
        The placement the job runs on now, of the same L, E and P.

    Returns
    -------
    list of list of tuple of int
        Per MoE layer index, the moves (expert, from_rank, to_rank, from_slot,
        to_slot), ascending expert.

    Raises
    ------
    InputError
        `previous` of another shape, or neither a Placement nor a Plan.
    """
    return self.placement.moves(previous)


def _slot_changes(self: Plan, previous: Plan | Placement) -> list[list[tuple[int, int, int, int]]]:
    """The slots whose expert changes from `previous` to the plan's placement.

    Parameters
    ----------
    previous : Placement or Plan
        The placement the job runs on now, of the same L, E and P.

    Returns
    -------
    list of list of tuple of int
        Per MoE layer index, the changes (slot, expert, from_slot, previous_expert),
        ascending slot (Placement.slot_changes).

    Raises
    ------
    InputError
        `previous` of another shape, or neither a Placement nor a Plan.
    """
    return self.placement.slot_changes(previous)


def _migration(self: Plan) -> dict[str, Any] | None:
    """dict or None: the moves from the previous placement (plan(..., previous=)).

    Keys previous_fingerprint, max_moves, objective, cost_model, moves, layer_moves,
    bytes, busiest_rank, materialization_seconds, compute_seconds, modelled_seconds
    (docs/migration.md); None without a previous placement.
    """
    return _json.loads(self._migration_json)


def _map_method(fmt: Literal["routepack", "sglang", "vllm"]) -> Callable[[Plan | Placement], dict[str, Any]]:
    def expert_map(self: Plan | Placement) -> dict[str, Any]:
        return _json.loads(self.export_map(fmt))

    expert_map.__name__ = f"{fmt}_map"
    expert_map.__doc__ = f"""The expert map as ``routepack export-map --format {fmt}`` writes it.

    Returns
    -------
    dict
        The map's JSON, parsed (export_map("{fmt}") gives the text).
    """
    return expert_map


def _add_methods(cls: type, methods: dict[str, Any]) -> None:
    """Adds `methods` (functions and properties) to the compiled class `cls` under their names, so
    that help(cls) lists them as its own."""
    for name, method in methods.items():
        fn = method.fget if isinstance(method, property) else method
        fn.__name__ = name
        fn.__qualname__ = f"{cls.__name__}.{name}"
        setattr(cls, name, method)


for _cls in (Library, Placement, Plan, Topology, Window):
    _cls.__module__ = __name__  # the name they are documented and pickled by: routepack.Plan
for _cls in (Plan, Placement):
    _add_methods(_cls, {"routepack_map": _map_method("routepack"), "sglang_map": _map_method("sglang"),
                        "vllm_map": _map_method("vllm")})
_add_methods(Plan, {
    "dp_partitions": _dp_partitions,
    "micro_batches": _micro_batches,
    "save": _save,
    "moves": _moves,
    "slot_changes": _slot_changes,
    "migration": property(_migration, doc=_migration.__doc__),
})
del _cls
