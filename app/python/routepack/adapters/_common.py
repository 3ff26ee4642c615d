"""Shared planning step of the adapters: a RoutePack plan under a stack's batch rules (the
topology's row multiple, samples per DP slot, samples per cell, samples at most per cell, oversize
samples), starting from the placement the previous step ran on."""

from __future__ import annotations

import math
import operator
from math import gcd
from typing import Optional, Sequence

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
    shapes give the moves' bytes and seconds (the plan's migration section), as the CLI's model."""
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
    return routepack.plan(lengths, counts, topo, moe_layers=moe_layers, seed=seed, workers=workers, budgets=budgets,
                          previous=previous, model_name=model_name)


def usable_previous(previous, moe_layers: Sequence[int], num_experts: int, ep_ranks: int):
    """`previous` (a Plan) when it places the same MoE layers, experts and EP ranks as the step
    about to be planned; None otherwise (no previous plan yet, a lengths-only plan, or a change of
    model or EP size: nothing to keep, the step is planned from scratch)."""
    if previous is None:
        return None
    if (list(previous.moe_layers) != list(moe_layers) or previous.num_experts != num_experts
            or previous.placement.ep_ranks != ep_ranks):
        return None
    return previous


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
