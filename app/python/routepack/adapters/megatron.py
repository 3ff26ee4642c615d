"""Megatron-Core: RoutePack as a sequence-packing scheduler.

Contract of NVIDIA/Megatron-LM dev d48bd6be, ``megatron/core/datasets/data_schedule.py``: a
scheduler is built as ``Scheduler(max_seqlen_per_dp_cp_rank, cp_size, dp_size,
microbatch_group_size_per_vp_stage, max_num_seqs=None)``;
``get_groups_and_subsamples(sample_id_seqlens)`` takes ``[(global_id, seqlen), ...]`` and returns
``sample_id_groups[microbatch][j]`` for ``j in range(cp_size * dp_size)``: the list of INDICES
into ``sample_id_seqlens`` that DP x CP rank j runs in that micro-batch (the CP ranks of one DP
rank, j // cp_size, share a group), each group holding <= ``max_seqlen_per_dp_cp_rank * cp_size``
tokens and the micro-batch count (times dp_size) a multiple of ``dp_size *
microbatch_group_size_per_vp_stage`` (when that is not None). ``run`` then checks that every
sample appears exactly once.

:class:`RoutePackScheduler` answers with a RoutePack plan: micro-batch r, DP rank d is cell (r, d).
Routing counts for the next call are given with :meth:`RoutePackScheduler.set_routing`; that call
consumes them, whether it returns or raises. As upstream, no samples give no micro-batches and
too few samples to fill every DP rank's micro-batches is an AssertionError ("Not enough samples
to move"). The plan keeps the scheduler's rules itself (docs/batch-rules.md; it is ``routepack
plan`` with the same topology options): cap C = ``max_seqlen_per_dp_cp_rank * cp_size`` tokens per
group, a sample longer than C gets a micro-batch of its own (``oversize`` ``alone``, as upstream's
packing gives it), at most ``max_num_seqs`` sequences per group (``max_samples_per_cell``), the
micro-batch count a multiple of ``microbatch_group_size_per_vp_stage`` (``row_multiple``).

Consecutive calls are chained: a call with routing starts its placement from the last plan
(``last_plan``) and moves at most ``max_moves`` experts (None: unlimited), as ``routepack plan
--previous FILE --max-moves N``.

Fallback: when planning fails (any exception other than upstream's AssertionError above) or runs
past ``time_limit_s`` seconds (None: no limit), the call logs one warning (logger
``routepack.adapters.megatron``) and returns the groups of Megatron's own scheduler: ``fallback``
(an object with ``get_groups_and_subsamples``; :func:`install` keeps the scheduler class it
replaces for it), else the adapter's plain schedule (first fit decreasing under the cap and
``max_num_seqs``, a longer sample alone, split up to D x the row multiple); ``last_plan`` then
stays the previous one. ``strict=True`` raises instead.
"""

from __future__ import annotations

import logging
from typing import Optional, Sequence

from ._common import Deadline, first_fit_bins, plan_or_fallback, plan_rows, split_to, stack_error, whole_tokens

log = logging.getLogger(__name__)


class RoutePackScheduler:
    """``get_groups_and_subsamples`` from a RoutePack plan (see the module docstring). Upstream's
    five arguments, then RoutePack's: ep_ranks, edp_shards, stages, seed, workers, budgets,
    max_moves (as :func:`routepack.plan`), time_limit_s (seconds a call may plan; None: no limit),
    strict (raise where the fallback would answer), fallback (Megatron's own scheduler for the same
    arguments). ValueError for a bad time_limit_s."""

    def __init__(self, max_seqlen_per_dp_cp_rank: int, cp_size: int, dp_size: int,
                 microbatch_group_size_per_vp_stage: Optional[int], max_num_seqs: Optional[int] = None, *,
                 ep_ranks: int = 1, edp_shards=None, stages=(("attention", 1.0, 0.0),), seed: int = 1,
                 workers: int = 1, budgets: Optional[dict] = None, max_moves: Optional[int] = None,
                 time_limit_s: Optional[float] = None, strict: bool = False, fallback=None):
        Deadline(time_limit_s)
        self.max_seqlen_per_dp_cp_rank = max_seqlen_per_dp_cp_rank
        self.cp_size = cp_size
        self.dp_size = dp_size
        self.microbatch_group_size_per_vp_stage = microbatch_group_size_per_vp_stage
        self.max_num_seqs = max_num_seqs
        self.max_seq_len_all_ranks = max_seqlen_per_dp_cp_rank * cp_size
        self.is_dynamic_cp = False
        self.ep_ranks = ep_ranks
        self.edp_shards = edp_shards
        self.stages = stages
        self.seed = seed
        self.workers = workers
        self.budgets = budgets
        self.max_moves = max_moves
        self.time_limit_s = time_limit_s
        self.strict = strict
        #: Megatron's own scheduler for the same arguments (``get_groups_and_subsamples``): the fallback's answer.
        self.fallback = fallback
        self._counts = None
        self._moe_layers = None
        self.last_plan = None

    def get_required_sample_keys(self):
        """The sample keys Megatron's DpBalancedScheduler needs (the same batches feed this one)."""
        return ["tokens", "labels", "loss_mask", "position_ids", "original_seq_len", "padded_seq_len"]

    def set_routing(self, counts, moe_layers: Sequence[int]) -> None:
        """Routing counts [N, L, E] of the samples of the next call, in sample_id_seqlens order.
        That call consumes them whether it succeeds or raises: a later call never plans with them."""
        self._counts = counts
        self._moe_layers = list(moe_layers)

    def get_groups_and_subsamples(self, sample_id_seqlens):
        """``sample_id_groups[microbatch][j]`` (see the module docstring), from a RoutePack plan with
        the routing of ``set_routing`` (consumed here), starting its placement from ``last_plan``
        (within ``max_moves``). No samples give no micro-batches, as upstream. Sequence lengths are whole token counts (ValueError "sample_id_seqlens[i][1] = 1.7
        is not a whole number of tokens"); too few samples to give every DP rank a micro-batch (at
        the required multiple) is upstream's AssertionError "Not enough samples to move"."""
        counts, moe_layers = self._counts, self._moe_layers
        self._counts = self._moe_layers = None
        lengths = [whole_tokens(s[1], f"sample_id_seqlens[{i}][1]") for i, s in enumerate(sample_id_seqlens)]
        if counts is not None and len(counts) != len(lengths):
            raise ValueError(f"set_routing gave counts for {len(counts)} samples; got {len(lengths)}")
        if not lengths:
            return []

        def plan(deadline):
            try:
                return plan_rows(lengths, dp_slots=self.dp_size, token_cap=self.max_seq_len_all_ranks, counts=counts,
                                 moe_layers=moe_layers, ep_ranks=self.ep_ranks, edp_shards=self.edp_shards,
                                 stages=self.stages, row_multiple=self.microbatch_group_size_per_vp_stage or 1,
                                 max_samples_per_cell=self.max_num_seqs or 0, oversize="alone",
                                 previous=self.last_plan, max_moves=self.max_moves, seed=self.seed,
                                 workers=self.workers, budgets=self.budgets, deadline=deadline)
            except ValueError as e:
                if str(e).startswith("no rectangular layout exists: "):
                    raise stack_error(AssertionError(f"Not enough samples to move: {e}")) from e
                raise

        def fallback():
            if self.fallback is not None:
                return self.fallback.get_groups_and_subsamples(sample_id_seqlens)
            return self._plain_groups(lengths)

        planned, p = plan_or_fallback(plan, fallback, logger=log, replaced="Megatron get_groups_and_subsamples",
                                      fallback_name="Megatron's own scheduler" if self.fallback is not None else
                                      "the adapter's plain schedule", time_limit_s=self.time_limit_s,
                                      strict=self.strict)
        if not planned:
            return p
        self.last_plan = p
        return [[list(row[j // self.cp_size]) for j in range(self.cp_size * self.dp_size)] for row in p.rows]

    def _plain_groups(self, lengths):
        """The adapter's own groups where Megatron's scheduler is not at hand: first fit decreasing
        under the cap and max_num_seqs (a longer sample alone), split (a group's shortest sample into
        a new group) up to a multiple of D x the row multiple; group b is micro-batch b // D of DP
        rank b % D. AssertionError "Not enough samples to move: ..." when the samples cannot fill them."""
        D = self.dp_size
        multiple = D * (self.microbatch_group_size_per_vp_stage or 1)
        bins = first_fit_bins(lengths, self.max_seq_len_all_ranks, max_items=self.max_num_seqs or 0)
        wanted = -(-len(bins) // multiple) * multiple
        if wanted > len(lengths):
            raise AssertionError(f"Not enough samples to move: {len(lengths)} samples cannot fill {wanted} groups "
                                 f"({D} DP ranks)")
        bins = [sorted(b) for b in split_to(bins, wanted, lengths)]
        return [[bins[r * D + j // self.cp_size] for j in range(self.cp_size * D)] for r in range(wanted // D)]


def install(module, name: str = "dp_balanced", **settings):
    """Replaces ``module.scheduler_map[name]`` (``megatron.core.datasets.data_schedule``) with a
    subclass of the scheduler class it holds whose ``get_groups_and_subsamples`` is a
    :class:`RoutePackScheduler`'s (``settings`` are its keywords) and whose fallback is the class's
    own method; everything else (``run``, the required sample keys) stays Megatron's. The instance's
    ``routepack`` attribute is the RoutePackScheduler (``set_routing``, ``last_plan``). Returns the
    new class. KeyError for an unknown name."""
    base = module.scheduler_map[name]

    class _Own:
        def __init__(self, scheduler):
            self.scheduler = scheduler

        def get_groups_and_subsamples(self, sample_id_seqlens):
            return base.get_groups_and_subsamples(self.scheduler, sample_id_seqlens)

    class RoutePackPackingScheduler(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.routepack = RoutePackScheduler(self.max_seqlen_per_dp_cp_rank, self.cp_size, self.dp_size,
                                                self.microbatch_group_size_per_vp_stage,
                                                getattr(self, "max_num_seqs", None), fallback=_Own(self), **settings)

        def get_groups_and_subsamples(self, sample_id_seqlens):
            return self.routepack.get_groups_and_subsamples(sample_id_seqlens)

    module.scheduler_map[name] = RoutePackPackingScheduler
    return RoutePackPackingScheduler
