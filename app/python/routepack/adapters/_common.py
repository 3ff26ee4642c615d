"""Shared planning step of the adapters: a RoutePack plan under a stack's batch rules (the
topology's row multiple, samples per DP slot, samples per cell, samples at most per cell, oversize
samples), starting from the placement the previous step ran on; and the fallback every adapter
shares: when planning fails or runs past its time limit, one warning and the stack's own answer."""

from __future__ import annotations

import logging
import math
import operator
import time
from math import gcd
from typing import Callable, Optional, Sequence, Union

import numpy as np

import routepack


def plan_rows(
    lengths: Sequence[int],
    *,
    dp_slots: int,
    token_cap: int,
    counts=None,
    moe_layers: Optional[Sequence[int]] = None,
    ep_ranks: int = 1,
    edp_shards=None,
    stages=(("attention", 1.0, 0.0),),
    row_multiple: int = 1,
    min_rows: int = 0,
    samples_per_dp_slot: int = 0,
    samples_per_cell: int = 0,
    max_samples_per_cell: int = 0,
    oversize: str = "refuse",
    previous=None,
    max_moves: Optional[int] = None,
    model_name: str = "",
    seed: int = 1,
    workers: int = 1,
    budgets: Optional[dict] = None,
    deadline: Optional["Deadline"] = None,
) -> "routepack.Plan":
    """Plans `lengths` (and `counts` [N, L, E] when given; otherwise a lengths-only plan with zero
    routing counts on one EP rank) on D = dp_slots DP slots with cap C = token_cap (0 with
    samples_per_cell: derived from the window), with a row count R that is a multiple of
    `row_multiple` and >= min_rows, under the batch rules samples_per_dp_slot / samples_per_cell /
    max_samples_per_cell (0 = free) and `oversize` ('refuse' or 'alone'): exactly the plan of
    ``routepack plan`` with the same topology options (docs/batch-rules.md), so R is the certified
    R* of those constraints (or the best known, as the plan says).

    previous: the plan the previous step ran on (see :func:`usable_previous`); the placement then
    starts there and moves at most `max_moves` experts over all MoE layers (None: unlimited), as
    ``routepack plan --previous FILE --max-moves N``. Ignored for a lengths-only plan.
    model_name: a shipped model's name, recorded in the plan; with a previous placement its expert
    shapes give the moves' bytes and seconds (the plan's migration section), as the CLI's model.
    deadline: a :class:`Deadline`; the planner is cancelled when it passes, and TimeoutError is
    raised instead of returning the cancelled plan."""
    n = len(lengths)
    if counts is None:
        counts = np.zeros((n, 1, 1), dtype=np.uint32)
        moe_layers = [0]
        ep_ranks = 1
        previous = None
    elif moe_layers is None:
        raise ValueError("moe_layers is required with counts")
    lengths = np.asarray(lengths, dtype=np.int64) if not isinstance(lengths, np.ndarray) else lengths
    topo = routepack.Topology(ep_ranks, dp_slots, edp_shards, token_cap, stages=list(stages),
                              min_rows=max(min_rows, 0), row_multiple=row_multiple,
                              samples_per_dp_slot=samples_per_dp_slot, samples_per_cell=samples_per_cell,
                              max_samples_per_cell=max_samples_per_cell, oversize=oversize)
    if max_moves is not None:
        budgets = dict(budgets or {}, max_moves=max_moves)
    previous = usable_previous(previous, moe_layers, int(np.shape(counts)[2]), ep_ranks)
    p = routepack.plan(lengths, counts, topo, moe_layers=moe_layers, seed=seed, workers=workers, budgets=budgets,
                       previous=previous, model_name=model_name,
                       progress=None if deadline is None else deadline.progress)
    if deadline is not None:
        deadline.check()
    return p


def usable_previous(previous, moe_layers: Sequence[int], num_experts: int, ep_ranks: int):
    """`previous` (a Plan or a Placement) when it places the same MoE layers, experts and EP ranks as
    the step about to be planned; None otherwise (no previous plan yet, a lengths-only plan, or a
    change of model or EP size: nothing to keep, the step is planned from scratch)."""
    if previous is None:
        return None
    placement = getattr(previous, "placement", previous)
    if (list(previous.moe_layers) != list(moe_layers) or previous.num_experts != num_experts
            or placement.ep_ranks != ep_ranks):
        return None
    return previous


def placement_in_use(applied, moe_layers: Sequence[int], num_experts: int, ep_ranks: int):
    """The placement a model runs, at which a rank's local micro-batch plans are scored: `applied`
    (the plan an adapter's ``apply_in_actor`` applied last in this process) when it places these MoE
    layers, experts and EP ranks, else the identity."""
    if applied is not None and (list(applied.moe_layers), applied.num_experts, applied.placement.ep_ranks) == (
            list(moe_layers), num_experts, ep_ranks):
        return applied
    return routepack.identity(len(moe_layers), num_experts, ep_ranks, moe_layers=list(moe_layers))


def rows_multiple_for_bins(bin_multiple: int, dp_slots: int) -> int:
    """Smallest m such that R * D is a multiple of `bin_multiple` whenever R is a multiple of m."""
    return bin_multiple // gcd(bin_multiple, dp_slots)


def whole_tokens(value, where: str) -> int:
    """`value` as a whole token count: a Python or numpy integer, or a float with an integral value
    (30.0 -> 30, as the stacks' own packers accept floats they only add up). ValueError
    "<where> = 1.7 is not a whole number of tokens" for a fractional, non-finite, boolean or
    non-numeric value (never truncated: 1.7 would otherwise plan as 1 token)."""
    if not isinstance(value, (bool, np.bool_)):
        try:
            return operator.index(value)
        except TypeError:
            pass
        if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
            return int(value)
    text = str(value) if isinstance(value, (int, float, np.number, np.bool_)) else repr(value)
    raise ValueError(f"{where} = {text} is not a whole number of tokens")


#: The attribute that marks an exception as the stack's own answer (an upstream assertion or
#: error reproduced by an adapter): it is raised as it is, never answered by the fallback.
_STACK_ERROR = "_routepack_stack_error"


def stack_error(error: BaseException) -> BaseException:
    """Marks `error` (an upstream exception type with upstream's text, e.g. slime's AssertionError
    for a static micro-batch count off its multiple) as the stack's own answer: :func:`plan_or_fallback`
    raises it instead of falling back, because the stack's function raises it too. Returns `error`."""
    setattr(error, _STACK_ERROR, True)
    return error


class Deadline:
    """A time limit on one adapter call, in seconds of wall time from construction (None: none).
    :meth:`progress` is the planner's progress callback (``routepack.plan(..., progress=)``): it
    returns False, cancelling the planner, once the limit has passed. ValueError for a limit that
    is not a positive finite number of seconds."""

    def __init__(self, seconds: Optional[float]):
        if seconds is not None:
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(seconds) or seconds <= 0:
                raise ValueError(f"time_limit_s must be a positive number of seconds or None, not {seconds!r}")
            seconds = float(seconds)
        self.seconds = seconds
        self.start = time.monotonic()

    def expired(self) -> bool:
        return self.seconds is not None and time.monotonic() - self.start > self.seconds

    def progress(self, stage: str, fraction: float) -> bool:
        return not self.expired()

    def check(self) -> None:
        """TimeoutError "planning ran past time_limit_s = 0.5 s" once the limit has passed."""
        if self.expired():
            raise TimeoutError(f"planning ran past time_limit_s = {self.seconds:g} s")


def plan_or_fallback(plan: Callable[[Deadline], object], fallback: Callable[[], object], *, logger: logging.Logger,
                     replaced: str, fallback_name: Union[str, Callable[[], str]],
                     time_limit_s: Optional[float] = None, strict: bool = False):
    """(True, ``plan(deadline)``), or, when it raises (any Exception; KeyboardInterrupt and SystemExit
    pass) or runs past `time_limit_s` seconds (the planner is cancelled then), one warning on `logger`
    with the reason and (False, ``fallback()``): the answer of the stack's own function that the
    adapter replaced (`fallback_name` names it in the warning, or returns its name when called then;
    `replaced` names the adapter's function).
    An exception marked with :func:`stack_error` is the stack's own answer and is raised as it is;
    with `strict` every exception is raised (a run past the limit as TimeoutError) and nothing falls
    back. ValueError for a `time_limit_s` that is not None or a positive number of seconds."""
    deadline = Deadline(time_limit_s)
    try:
        return True, plan(deadline)
    except Exception as e:
        if strict or getattr(e, _STACK_ERROR, False):
            raise
        logger.warning("%s: RoutePack planning failed (%s: %s); answering with %s", replaced, type(e).__name__, e,
                       fallback_name() if callable(fallback_name) else fallback_name)
    return False, fallback()


def lpt_parts(weights: Sequence[int], parts: int, capacity: Optional[int] = None) -> list:
    """Longest processing time first: items in nonincreasing weight (ties by index), each to the part of
    least weight (ties by lowest part) among those with fewer than `capacity` items (None: no limit).
    Returns `parts` lists of item indices, each ascending. The first `parts` items open one part each,
    so with len(weights) >= parts no part is empty. The adapters' own plain fallback, never a
    stack's algorithm."""
    load = [0] * parts
    out = [[] for _ in range(parts)]
    for i in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
        open_parts = [p for p in range(parts) if capacity is None or len(out[p]) < capacity]
        p = min(open_parts, key=lambda p: (load[p], p))
        out[p].append(i)
        load[p] += weights[i]
    return [sorted(part) for part in out]


def first_fit_bins(lengths: Sequence[int], cap: int, *, max_items: int = 0) -> list:
    """First fit decreasing: items in nonincreasing length (ties by index), each into the first bin
    (lowest index) with room under `cap` tokens and below `max_items` items (0: no limit); an item
    longer than `cap` gets a bin of its own. Returns bins of item indices (in placing order). The
    adapters' own plain fallback."""
    bins, sums = [], []
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        t = lengths[i]
        for b in range(len(bins)):
            if sums[b] + t <= cap and (not max_items or len(bins[b]) < max_items):
                bins[b].append(i)
                sums[b] += t
                break
        else:
            bins.append([i])
            sums.append(t)
    return bins


def split_to(bins: list, count: int, lengths: Sequence[int]) -> list:
    """Grows `bins` (lists of item indices) to `count` bins by moving, one at a time, the shortest
    item of the bin with the most tokens among those holding two or more items into a new bin (ties
    by lowest bin, then by the item's lowest index). Every bin keeps at most its tokens and items.
    ValueError when fewer than `count` items exist."""
    bins = [list(b) for b in bins]
    if sum(len(b) for b in bins) < count:
        raise ValueError(f"{sum(len(b) for b in bins)} items cannot fill {count} bins")
    while len(bins) < count:
        b = max((b for b in range(len(bins)) if len(bins[b]) > 1),
                key=lambda b: (sum(lengths[i] for i in bins[b]), -b))
        i = min(bins[b], key=lambda i: (lengths[i], i))
        bins[b].remove(i)
        bins.append([i])
    return bins
