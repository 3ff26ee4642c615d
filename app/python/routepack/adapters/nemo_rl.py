"""NeMo-RL: RoutePack as a sequence packer.

Contract of NVIDIA-NeMo/RL 7ea279ab, ``nemo_rl/data/packing/algorithms.py``: a packer is built as
``Packer(bin_capacity, collect_metrics=False, min_bin_count=None, bin_count_multiple=None)``;
``pack(sequence_lengths) -> list[list[int]]`` returns bins of indices into ``sequence_lengths``,
at least ``min_bin_count`` of them and a multiple of ``bin_count_multiple``; a sequence longer
than the capacity is ``ValueError("Sequence length {l} exceeds bin capacity {c}")``.
``BatchedDataDict.shard_by_batch_size`` (``nemo_rl/distributed/batched_data_dict.py``) builds the
packer with ``min_bin_count = bin_count_multiple = shards`` and deals the bins round-robin,
``bins[shard::shards]``, so bin b runs on DP shard b % D as its (b // D)-th micro-batch.

:class:`RoutePackPacker` returns the plan's cells in that order: bin b = cell (b // D, b % D), so
DP shard d runs exactly the plan's row sequence (0, d), (1, d), ... and every shard the same
number R of micro-batches. D (``dp_slots``) defaults to ``bin_count_multiple`` (else
``min_bin_count``, else 1). Routing counts for the next ``pack`` call are given with
:meth:`RoutePackPacker.set_routing` (``[N, L, E]`` per sequence, e.g. from
``routepack.counts_from_routes``); without them the plan balances lengths alone. That call
consumes them, whether it returns or raises.

Upstream's answers at the edges are kept: ``pack([])`` returns no bins (unless min_bin_count /
bin_count_multiple ask for some), and too few sequences for the bins asked raise upstream's
``ValueError("Cannot create {bins} bins with only {n} sequences. ...")`` (``_adjust_bin_count``).
Lengths are whole token counts: integral floats are accepted (upstream only adds them up), a
fractional one is ``ValueError("sequence_lengths[i] = 1.7 is not a whole number of tokens")``.
NeMo-RL's own ``tests/unit/data/packing/test_algorithms.py`` at 7ea279ab, run unchanged through a
shim whose ``get_packer`` answers every algorithm with this class: 59 of 59 pass.

Consecutive calls are chained: a ``pack`` with routing starts its placement from the last plan
(``last_plan``, kept across a failed call) and moves at most ``max_moves`` experts (None:
unlimited), as ``routepack plan --previous FILE --max-moves N``.

``shard_by_batch_size`` builds its packer inside each call and hands it lengths only, so the
packers :func:`install` builds share what a hand-built packer keeps for itself: the routing of
:func:`set_routing` (the whole batch's counts, in the data dict's order; each ``pack`` takes the next
``len(sequence_lengths)`` rows, as the chunks come) and the chain (this module's ``last_plan``).

Fallback: when planning fails (any exception other than upstream's errors above) or runs past
``time_limit_s`` seconds (None: no limit), ``pack`` logs one warning (logger
``routepack.adapters.nemo_rl``) and returns the bins of NeMo-RL's own packer: ``fallback`` (the
packer the configuration names, which :func:`install` builds with upstream's ``get_packer``),
else the adapter's plain packing (first fit decreasing, bins split up to the count asked);
``last_plan`` then stays the previous one. ``strict=True`` raises instead.
"""

from __future__ import annotations

import logging
import re
from typing import List, Optional, Sequence

from ._common import (Deadline, first_fit_bins, plan_or_fallback, plan_rows, rows_multiple_for_bins, split_to,
                      stack_error, whole_tokens)

log = logging.getLogger(__name__)

#: The plan of the last pack() that planned, of the packers install() builds (their chain).
last_plan = None
#: set_routing's counts for the packers install() builds: [counts, moe_layers, rows taken], or None.
_routing: Optional[list] = None


def set_routing(counts, moe_layers: Sequence[int]) -> None:
    """Routing counts a[i][l][e] ([N, L, E], L = len(moe_layers), e.g. ``routepack.counts_from_routes``
    of ``train_data["routed_experts"]``) of the batch the next ``shard_by_batch_size`` shards, in its
    data dict's order, for the packers :func:`install` builds: each ``pack`` takes the next
    ``len(sequence_lengths)`` rows (``shard_by_batch_size`` packs its chunks of ``batch_size``
    sequences in order) and the last chunk's call drops them. A ``pack`` asking for more rows than
    are left raises ValueError and drops them too. A later call replaces what is left."""
    global _routing
    _routing = [counts, list(moe_layers), 0]


def _take_shared_routing(n: int):
    """The next n rows of set_routing's counts (and the MoE layers), or (None, None) without any."""
    global _routing
    if _routing is None:
        return None, None
    counts, moe_layers, taken = _routing
    left = len(counts) - taken
    if n > left:
        _routing = None
        raise ValueError(f"set_routing gave counts for {left} more sequences; pack got {n}")
    _routing = None if taken + n == len(counts) else [counts, moe_layers, taken + n]
    return counts[taken:taken + n], moe_layers


class RoutePackPacker:
    """A ``SequencePacker`` whose bins are a RoutePack plan's cells (see the module docstring).
    Upstream's four arguments, then RoutePack's: dp_slots (D), ep_ranks, edp_shards, stages, seed,
    workers, budgets, max_moves (as :func:`routepack.plan`), time_limit_s (seconds a ``pack`` may
    plan; None: no limit), strict (raise where the fallback would answer), fallback (NeMo-RL's own
    packer for the same arguments). ValueError for a negative min_bin_count, a bin_count_multiple
    below 1 or a bad time_limit_s."""

    def __init__(self, bin_capacity: int, collect_metrics: bool = False, min_bin_count: Optional[int] = None,
                 bin_count_multiple: Optional[int] = None, *, dp_slots: Optional[int] = None, ep_ranks: int = 1,
                 edp_shards=None, stages=(("attention", 1.0, 0.0),), seed: int = 1, workers: int = 1,
                 budgets: Optional[dict] = None, max_moves: Optional[int] = None, time_limit_s: Optional[float] = None,
                 strict: bool = False, fallback=None):
        Deadline(time_limit_s)
        if min_bin_count is not None and min_bin_count < 0:
            raise ValueError("min_bin_count must be nonnegative")
        if bin_count_multiple is not None and bin_count_multiple < 1:
            raise ValueError("bin_count_multiple must be positive")
        self.bin_capacity = bin_capacity
        self.collect_metrics = collect_metrics
        self.min_bin_count = min_bin_count
        self.bin_count_multiple = bin_count_multiple
        self.metrics = None
        self.dp_slots = dp_slots or bin_count_multiple or min_bin_count or 1
        self.ep_ranks = ep_ranks
        self.edp_shards = edp_shards
        self.stages = stages
        self.seed = seed
        self.workers = workers
        self.budgets = budgets
        self.max_moves = max_moves
        self.time_limit_s = time_limit_s
        self.strict = strict
        #: NeMo-RL's own packer for the same arguments (an object with ``pack``): the fallback's answer.
        self.fallback = fallback
        self._counts = None
        self._moe_layers = None
        self._last_plan = None
        self._shared = False  # built by install(): set_routing and last_plan of this module

    @property
    def last_plan(self):
        """The plan of the last pack() call that planned (the previous placement of the next one); for
        a packer :func:`install` built, this module's ``last_plan`` (shared by its packers)."""
        return globals()["last_plan"] if self._shared else self._last_plan

    @last_plan.setter
    def last_plan(self, plan) -> None:
        if self._shared:
            globals()["last_plan"] = plan
        else:
            self._last_plan = plan

    def set_routing(self, counts, moe_layers: Sequence[int]) -> None:
        """Routing counts a[i][l][e] ([N, L, E], L = len(moe_layers)) of the sequences the next
        ``pack`` call receives, in the same order. That call consumes them whether it succeeds or
        raises: a later call never plans with them."""
        self._counts = counts
        self._moe_layers = list(moe_layers)

    def _take_routing(self, n: Optional[int] = None):
        """set_routing's counts for this call (consumed), else, for a packer install() built and a
        call of n sequences, the next n rows of the module's :func:`set_routing`."""
        counts, moe_layers = self._counts, self._moe_layers
        self._counts = self._moe_layers = None
        if counts is None and self._shared and n is not None:
            return _take_shared_routing(n)
        return counts, moe_layers

    def _validate_sequence_lengths(self, sequence_lengths: List[int]) -> None:
        for length in sequence_lengths:
            if length > self.bin_capacity:
                raise ValueError(f"Sequence length {length} exceeds bin capacity {self.bin_capacity}")

    def _cannot_create(self, bins: int, sequences: int) -> ValueError:
        """Upstream's error (``SequencePacker._adjust_bin_count``) for too few sequences."""
        return ValueError(f"Cannot create {bins} bins with only {sequences} sequences. "
                          "Each bin must contain at least one sequence. "
                          "Either reduce min_bin_count/bin_count_multiple or provide more sequences.")

    def _pack_implementation(self, sequence_lengths: List[int]) -> List[List[int]]:
        """Bins of the plan, row-major: bin r * D + d = cell (r, d). Consumes the routing of
        ``set_routing``; the placement starts from ``last_plan`` (within ``max_moves``). An empty list gives no bins (upstream's answer) unless min_bin_count /
        bin_count_multiple ask for some; lengths are whole token counts (integral floats accepted,
        ValueError "sequence_lengths[i] = 1.7 is not a whole number of tokens" otherwise)."""
        counts, moe_layers = self._take_routing(len(sequence_lengths))
        lengths = [whole_tokens(x, f"sequence_lengths[{i}]") for i, x in enumerate(sequence_lengths)]
        self._validate_sequence_lengths(lengths)
        n = len(lengths)
        if counts is not None and len(counts) != n:
            raise ValueError(f"set_routing gave counts for {len(counts)} sequences; pack got {n}")
        D = self.dp_slots
        multiple = rows_multiple_for_bins(self.bin_count_multiple or 1, D)
        min_rows = -(-(self.min_bin_count or 0) // D)
        if n == 0:
            wanted = self.min_bin_count or 0
            if self.bin_count_multiple and wanted % self.bin_count_multiple:
                wanted += self.bin_count_multiple - wanted % self.bin_count_multiple
            if wanted:
                raise self._cannot_create(wanted, 0)
            return []
        fewest_cells = D * (-(-max(min_rows, 1) // multiple) * multiple)
        if n < fewest_cells:
            raise self._cannot_create(fewest_cells, n)

        def plan(deadline):
            try:
                return plan_rows(lengths, dp_slots=D, token_cap=self.bin_capacity, counts=counts,
                                 moe_layers=moe_layers, ep_ranks=self.ep_ranks, edp_shards=self.edp_shards,
                                 stages=self.stages, row_multiple=multiple, min_rows=min_rows,
                                 previous=self.last_plan, max_moves=self.max_moves, seed=self.seed,
                                 workers=self.workers, budgets=self.budgets, deadline=deadline)
            except ValueError as e:
                cells = re.search(r"= (\d+) non-empty cells", str(e))
                if str(e).startswith("no rectangular layout exists: ") and cells:
                    raise stack_error(self._cannot_create(int(cells.group(1)), n)) from e
                raise

        def fallback():
            if self.fallback is not None:
                return self.fallback.pack(sequence_lengths)
            return self._plain_bins(lengths)

        planned, p = plan_or_fallback(plan, fallback, logger=log, replaced="NeMo-RL SequencePacker.pack",
                                      fallback_name="NeMo-RL's own packer" if self.fallback is not None else
                                      "the adapter's plain packing", time_limit_s=self.time_limit_s,
                                      strict=self.strict)
        if not planned:
            return p
        self.last_plan = p
        return [list(cell) for row in p.rows for cell in row]

    def _plain_bins(self, lengths: List[int]) -> List[List[int]]:
        """The adapter's own bins where NeMo-RL's packer is not at hand: first fit decreasing under
        the capacity, then split (a bin's shortest sequence into a new bin) up to min_bin_count and
        the next multiple of bin_count_multiple; indices ascending in each bin."""
        bins = first_fit_bins(lengths, self.bin_capacity)
        wanted = max(len(bins), self.min_bin_count or 0)
        if self.bin_count_multiple:
            wanted = -(-wanted // self.bin_count_multiple) * self.bin_count_multiple
        if wanted > len(lengths):
            raise self._cannot_create(wanted, len(lengths))
        return [sorted(b) for b in split_to(bins, wanted, lengths)]

    def pack(self, sequence_lengths: List[int]) -> List[List[int]]:
        """The plan's bins; their count already meets min_bin_count and bin_count_multiple."""
        try:
            sequence_lengths = list(sequence_lengths)
        except TypeError:
            self._take_routing()
            raise
        return self._pack_implementation(sequence_lengths)


def install(*modules, **settings):
    """Replaces ``get_packer`` in each of `modules` (``nemo_rl.data.packing.algorithms``,
    ``nemo_rl.data.packing`` and modules that imported the name, e.g.
    ``nemo_rl.distributed.batched_data_dict``) with one that answers every algorithm with a
    :class:`RoutePackPacker` (``settings`` are its keywords) whose fallback is the packer the first
    module's ``get_packer`` builds for the same arguments (so an unknown algorithm is upstream's
    ValueError). Its packers take the routing of :func:`set_routing` and chain through this
    module's ``last_plan``. Returns the new ``get_packer``. TypeError without a module."""
    if not modules:
        raise TypeError("install needs the module(s) whose get_packer to replace")
    original = getattr(modules[0].get_packer, "_routepack_original", modules[0].get_packer)

    def get_packer(algorithm, bin_capacity, collect_metrics=False, min_bin_count=None, bin_count_multiple=None):
        own = original(algorithm, bin_capacity, collect_metrics, min_bin_count, bin_count_multiple)
        packer = RoutePackPacker(bin_capacity, collect_metrics, min_bin_count, bin_count_multiple, fallback=own,
                                 **settings)
        packer._shared = True
        return packer

    get_packer._routepack_original = original
    for module in modules:
        module.get_packer = get_packer
    return get_packer
