"""Shared planning step of the adapters: a RoutePack plan whose row count honours a stack's
required micro-batch multiple."""

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
    seed: int = 1,
    workers: int = 1,
    budgets: Optional[dict] = None,
) -> "routepack.Plan":
    """Plans `lengths` (and `counts` [N, L, E] when given; otherwise a lengths-only plan with zero
    routing counts on one EP rank) on D = dp_slots DP slots with cap C = token_cap, with a row count
    R that is a multiple of `row_multiple` and >= min_rows: the topology's row_multiple, so R is the
    certified R* of that constraint (the smallest feasible multiple >= min_rows)."""
    n = len(lengths)
    if counts is None:
        counts = np.zeros((n, 1, 1), dtype=np.uint32)
        moe_layers = [0]
        ep_ranks = 1
    elif moe_layers is None:
        raise ValueError("moe_layers is required with counts")
    lengths = np.asarray(lengths, dtype=np.int64) if not isinstance(lengths, np.ndarray) else lengths
    topo = routepack.Topology(ep_ranks, dp_slots, edp_shards, token_cap, stages=list(stages),
                              min_rows=max(min_rows, 0), row_multiple=row_multiple)
    return routepack.plan(lengths, counts, topo, moe_layers=moe_layers, seed=seed, workers=workers, budgets=budgets)


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
