"""verl: the global plan at the trainer's ``_balance_batch``, a local plan at ``rearrange_micro_batches``.

Contracts of verl-project/verl 1dda039b:

- ``verl/trainer/ppo/ray_trainer.py`` ``RayPPOTrainer._balance_batch(self, batch, metrics,
  logging_prefix="global_seqlen", keep_minibatch=False)`` reorders ``batch`` (a DataProto) in
  place with ``batch.reorder(global_idx)``; the dispatch then hands DP rank d the d-th of
  ``dp_size`` EQUAL chunks (``DataProto.chunk``). Lengths are ``attention_mask.sum(-1)``.
- ``verl/utils/seqlen_balancing.py`` ``rearrange_micro_batches(batch, max_token_len, dp_group=None,
  num_batches_divided_by=None, same_micro_num_in_dp=True, min_num_micro_batch=None,
  use_dynamic_bsz_balance=True, force_group_size=1) -> (micro_batches, micro_bsz_idx)`` splits a
  rank's local batch (a TensorDict) into micro-batches; ``micro_bsz_idx[m]`` lists the local
  indices of micro-batch m. Lengths are the offsets of a nested ``input_ids``, else the row sums
  of ``attention_mask``. The micro-batch count is, exactly (verl's tests assert it):
  ``min(n_groups, ceil(sum_len / max_token_len))`` with n_groups = B / ``force_group_size``,
  raised to ``min_num_micro_batch``, then the maximum over ``dp_group`` (an all-reduce) when
  ``same_micro_num_in_dp`` and torch.distributed is initialized, then rounded up to a multiple of
  ``num_batches_divided_by``; the groups of ``force_group_size`` consecutive samples are balanced
  into exactly that many micro-batches (a micro-batch may exceed ``max_token_len``), which
  ``use_dynamic_bsz_balance`` orders heaviest in the middle, lightest at both ends.
- ``verl/workers/engine/utils.py`` ``prepare_micro_batches``: with ``use_dynamic_bsz`` it calls
  ``rearrange_micro_batches`` on every PPO mini-batch (``tu.make_iterator`` over the rank's chunk,
  contiguous, or shuffled with the actor's ``shuffle``); without it (verl's default) it cuts each
  mini-batch into contiguous chunks of ``micro_batch_size_per_gpu`` samples and calls nothing.

:func:`make_balance_batch` builds a ``_balance_batch`` that plans the whole batch (counts from the
``routed_experts`` int ``[B, S, L, K]`` field, masked by ``attention_mask``) and orders it
DP-slot-major, then by row, writing each sample's row into the batch field ``routepack_row``.
verl's dispatch contract is kept by the planner itself: the plan's topology has
``samples_per_dp_slot`` = B / D (docs/batch-rules.md), so DP slot d holds exactly the d-th equal
chunk, and the plan equals ``routepack plan --samples-per-dp-slot B/D`` on the same window. With
dynamic batch size the cap C is ``max_token_len``; without it (``micro_batch_size_per_gpu`` c) every
row holds exactly c samples on every DP slot (``samples_per_cell`` c, no token cap), so verl's
contiguous chunks of c ARE the plan's cells, in every mini-batch whose size is a multiple of c.
Why the equal chunk is a contract, not a preference:

- ``_balance_batch`` itself partitions with ``get_seqlen_balanced_partitions(workload_lst,
  k_partitions=dp_size, equal_size=True)`` and says "The data will be automatically equally
  partitioned by dispatch function" (verl/trainer/ppo/ray_trainer.py);
- the dispatch splits positionally: ``dispatch_nd_compute_dataproto`` -> ``_split_args_kwargs_data_proto``
  -> ``BatchData.chunk`` (verl/single_controller/base/decorator.py) -> ``DataProto.chunk``, which asserts
  ``len(self) % chunks == 0`` ("only support equal chunk", verl/protocol.py), or ``chunk_tensordict``
  ("Must evenly divide len(td)", verl/utils/tensordict_utils.py); no chunk-size argument exists;
- the only escape, auto padding (``DataProto.padding`` / ``_split_args_kwargs_data_proto_with_auto_padding``),
  appends copies of the last sample to the END of the batch, so the padded copies land on the last
  ranks and are trained on by ``update_actor``: it would change the gradient.

:func:`rearrange_micro_batches` is a drop-in for any local batch: it computes upstream's count and
plans the batch into exactly that many micro-batches (``max_token_len`` is the target cap of the
plan, raised only as far as that count needs). When the batch is one rank's planned chunk as
``_balance_batch`` ordered it (``routepack_row`` runs 0, 1, ... in order with exactly that many
rows) it returns the plan's rows in the plan's order, the same rows on every rank; any other batch (a PPO
mini-batch, shuffled or not, a subset, another order, a batch never planned) is planned locally, on
one DP slot, with its routes when the process is configured for them (:func:`install`,
:func:`make_rearrange_micro_batches`) and the batch carries ``routed_experts``, else by length,
scored at the placement the model runs (the plan :func:`apply_in_actor` applied last in this
process, else the identity).

The same mistakes raise upstream's exception types: a batch that D does not divide is the
AssertionError of verl's equal-size partition (``"{B} % {D} != 0"``), fewer samples than DP ranks
its ``"number of items:[B] < k_partitions:[D]"``; ``max_token_len`` below the padded sequence length,
a batch ``force_group_size`` does not divide and a count above the number of groups are
``rearrange_micro_batches``' AssertionErrors. ``keep_minibatch=True`` balances each PPO mini-batch
across the DP ranks on its own, as upstream does, and keeps each rank's share of mini-batch k as
its k-th local mini-batch (upstream sorts each rank's samples by workload afterwards, which mixes
them).

Fallback: when planning fails (any exception, e.g. bad routes or the PrefixGrouper branch, whose
uid groups the plan does not keep together) or runs past ``time_limit_s``, the adapter logs one
warning (logger ``routepack.adapters.verl``) and answers with verl's own function: the original
``_balance_batch`` (``original=``, :func:`install_balance_batch`, or the trainer class's own method)
and the original ``rearrange_micro_batches`` kept by :func:`install`; where none is at hand (a plain
import, as a monkeypatch installs it) with the adapter's own plain balancing (largest workload
``24576 t + t^2`` first to the lightest part). ``strict=True`` raises instead. The fallback answers
with the count already agreed over ``dp_group`` and never all-reduces again.

Steps are chained: a batch with routes starts its placement from ``trainer.routepack_plan`` (the
previous step's plan) and moves at most ``max_moves`` experts (None: unlimited), as ``routepack plan
--previous FILE --max-moves N``. The actor applies the step's plan before its update with
:func:`apply_in_actor` (the plan travels in the batch's ``meta_info``).

verl's own ``tests/utils/test_seqlen_balancing.py`` at 1dda039b, run unchanged against this
``rearrange_micro_batches`` (installed plainly, and with :func:`install`) through a shim with
stand-ins for ``tensordict.TensorDict`` and ``verl.DataProto`` and Debian's CPU torch (gloo): 6 of
6 pass (``test_dataproto_split_uneven`` deselected: it tests ``DataProto`` only); docs/adapters.md
has the commands.
"""

from __future__ import annotations

import logging
import types
from typing import List, Optional, Sequence

import numpy as np

import routepack

from ._common import Deadline, lpt_parts, placement_in_use, plan_or_fallback, plan_rows

ROW_KEY = "routepack_row"
#: The batch's ``meta_info`` key holding the step's plan file text (DataProto.chunk copies meta_info to
#: every worker's chunk, so the actor reads the plan where it updates).
PLAN_KEY = "routepack_plan"
#: The plan :func:`apply_in_actor` applied last in this process: the placement the model runs, at
#: which :func:`rearrange_micro_batches` scores its local plans.
applied_plan = None

log = logging.getLogger(__name__)


def _np(x):
    x = x.detach().cpu().numpy() if hasattr(x, "detach") else x
    return np.asarray(x)


def _like(values, ref):
    """An index/row array of the same library as `ref` (torch tensor or numpy)."""
    if hasattr(ref, "detach"):
        import torch  # only when verl hands torch tensors

        return torch.as_tensor(np.asarray(values, dtype=np.int64), dtype=torch.long, device=ref.device)
    return np.asarray(values, dtype=np.int64)


def workloads(lengths) -> np.ndarray:
    """verl's workload estimate per sample, ``24576 t + t^2`` for t tokens (verl-project/verl
    1dda039b ``verl/utils/seqlen_balancing.py`` ``calculate_workload``), int64 [N]."""
    t = np.asarray(lengths, dtype=np.int64)
    return 24576 * t + t * t


def mask_lengths(attention_mask) -> np.ndarray:
    """The token count of each sample of a verl batch: the row sums of ``attention_mask`` [B, S] (torch
    or numpy; bool, integer or float), int64 [B]. verl's masks hold 0 and 1 only (verl-project/verl
    1dda039b, ``verl/utils/seqlen_balancing.py``: ``attention_mask.sum(-1)``); any other value (0.3,
    2, NaN) is refused rather than summed into a length that is not a token count: ValueError
    "attention_mask[3, 7] = 0.3: an attention mask holds 0 or 1 (a sample's tokens are its row sum)"."""
    mask = _np(attention_mask)
    if mask.ndim < 1:
        raise ValueError("attention_mask must be [B, S], not a scalar")
    flat = mask.reshape(mask.shape[0], -1)
    if flat.dtype.kind != "b":
        if flat.dtype.kind not in "iuf":
            raise ValueError(f"attention_mask must hold 0 and 1 (bool, integer or float), not {flat.dtype}")
        bad = np.argwhere(~((flat == 0) | (flat == 1)))
        if len(bad):
            i, j = (int(x) for x in bad[0])
            raise ValueError(f"attention_mask[{i}, {j}] = {flat[i, j]}: an attention mask holds 0 or 1 "
                             f"(a sample's tokens are its row sum)")
    return flat.sum(-1, dtype=np.int64)


def plan_batch(attention_mask, dp_size: int, *, max_token_len: Optional[int] = None,
               micro_batch_size_per_gpu: Optional[int] = None, routed_experts=None, num_experts=None,
               moe_layers: Optional[Sequence[int]] = None, layer_axis: str = "all", ep_ranks: int = 1,
               edp_shards=None, stages=(("attention", 1.0, 0.0),), row_multiple: int = 1, previous=None,
               max_moves: Optional[int] = None, model_name: str = "", seed: int = 1, workers: int = 1,
               budgets: Optional[dict] = None, deadline: Optional[Deadline] = None):
    """The plan of a verl batch, and (global_idx, rows): global_idx orders the batch DP-slot-major
    then by row (DP rank d's equal chunk is global_idx[d * B/D:(d + 1) * B/D]); rows[j] is the row
    of the j-th sample after reordering.

    attention_mask: [B, S] (torch or numpy); lengths are its row sums. routed_experts: [B, S, L, K]
    expert ids (with num_experts, the absolute moe_layers and layer_axis as
    :func:`routepack.counts_from_routes` takes them); without it the plan balances lengths alone.
    The plan has D = dp_size DP slots of exactly B / D samples (``samples_per_dp_slot``), P = ep_ranks
    EP ranks, R a multiple of row_multiple, and either cap C = max_token_len tokens per cell (verl's
    ``use_dynamic_bsz``) or exactly micro_batch_size_per_gpu samples per cell and no token cap
    (verl's static micro-batches, ``ppo_micro_batch_size_per_gpu``; R = B / (D c)): give one of the
    two. previous: the previous step's plan (its placement is the start, at most max_moves experts
    move); model_name: a shipped model (its expert shapes size the moves in the plan's migration
    section); deadline: see :func:`routepack.adapters._common.plan_rows`.
    AssertionError "{B} % {D} != 0" and "number of items:[B] < k_partitions:[D]" as verl's
    equal-size partition; ValueError for a sample longer than max_token_len, a chunk B / D that c
    does not divide (the planner's texts), or neither or both of max_token_len and
    micro_batch_size_per_gpu."""
    if (max_token_len is None) == (micro_batch_size_per_gpu is None):
        raise ValueError("give max_token_len (verl's use_dynamic_bsz) or micro_batch_size_per_gpu (its static "
                         "micro-batches), exactly one of them")
    mask = _np(attention_mask)
    batch_size = mask.shape[0]
    assert batch_size >= dp_size, f"number of items:[{batch_size}] < k_partitions:[{dp_size}]"
    assert batch_size % dp_size == 0, f"{batch_size} % {dp_size} != 0"
    lengths = mask_lengths(mask)
    counts = None
    if routed_experts is not None:
        if num_experts is None or moe_layers is None:
            raise ValueError("routed_experts needs num_experts and moe_layers")
        counts = routepack.counts_from_routes(_np(routed_experts), int(num_experts), moe_layers=list(moe_layers),
                                              layer_axis=layer_axis, valid=mask.reshape(batch_size, -1).astype(bool))
    rules = (dict(token_cap=max_token_len) if micro_batch_size_per_gpu is None
             else dict(token_cap=0, samples_per_cell=micro_batch_size_per_gpu))
    p = plan_rows(lengths, dp_slots=dp_size, counts=counts, moe_layers=moe_layers, ep_ranks=ep_ranks,
                  edp_shards=edp_shards, stages=stages, row_multiple=row_multiple,
                  samples_per_dp_slot=batch_size // dp_size, previous=previous, max_moves=max_moves,
                  model_name=model_name, seed=seed, workers=workers, budgets=budgets, deadline=deadline, **rules)
    global_idx, rows = [], []
    for slot in p.micro_batches():
        for r, cell in enumerate(slot):
            global_idx.extend(cell)
            rows.extend([r] * len(cell))
    return p, global_idx, rows


def _plain_balance(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
    """The adapter's own ``_balance_batch`` where verl's is not at hand: equal chunks of B / D samples
    by workload (largest first to the lightest DP rank with room), whole uid groups per rank with
    the PrefixGrouper (ValueError, as verl, when D does not divide the number of groups)."""
    dp_size = self._get_dp_size(self.actor_rollout_wg, "actor")
    mask = batch.batch["attention_mask"]
    work = workloads(mask_lengths(mask)).tolist()
    uid = getattr(batch, "non_tensor_batch", {}).get("uid") if getattr(self, "use_prefix_grouper", False) else None
    if uid is None:
        parts = lpt_parts(work, dp_size, capacity=len(work) // dp_size)
    else:
        uid = list(uid)
        groups = []
        for i, u in enumerate(uid):
            if groups and uid[groups[-1][0]] == u:
                groups[-1].append(i)
            else:
                groups.append([i])
        if len(groups) % dp_size:
            raise ValueError(f"PrefixGrouper with balance_batch requires num_uid_groups ({len(groups)}) % dp_size "
                             f"({dp_size}) == 0")
        group_parts = lpt_parts([sum(work[i] for i in g) for g in groups], dp_size,
                                capacity=len(groups) // dp_size)
        parts = [sorted(i for g in part for i in groups[g]) for part in group_parts]
    batch.reorder(_like([i for part in parts for i in part], mask))


def plan_minibatches(attention_mask, dp_size: int, mini_batch_size: int, *, routed_experts=None, previous=None,
                     max_moves: Optional[int] = None, **settings):
    """:func:`plan_batch` of each PPO mini-batch on its own, as verl's ``_balance_batch(...,
    keep_minibatch=True)`` balances them: mini-batch k is the batch's samples k*M .. k*M+M-1 (M =
    ``mini_batch_size``, verl's ``ppo_mini_batch_size``), each DP rank gets M / D of every one, and its
    chunk is its shares of mini-batch 0, 1, ... in order, each in its plan's row order, so that the
    rank's k-th local mini-batch is its share of mini-batch k. The first mini-batch's plan places the
    experts (from ``previous``, within ``max_moves``); the others keep its placement (budget 0): one
    placement for the step. Returns (the first plan, global_idx, rows) as plan_batch (rows: each
    sample's row in its mini-batch's plan). ValueError for a batch that is not whole mini-batches;
    ``settings``: plan_batch's other keywords."""
    mask = _np(attention_mask)
    batch_size = mask.shape[0]
    if mini_batch_size < 1 or batch_size % mini_batch_size:
        raise ValueError(f"keep_minibatch: the batch of {batch_size} samples is not whole mini-batches of "
                         f"{mini_batch_size}")
    routes = None if routed_experts is None else _np(routed_experts)
    share = mini_batch_size // dp_size
    parts: List[List[int]] = [[] for _ in range(dp_size)]
    rows_of: List[List[int]] = [[] for _ in range(dp_size)]
    first = None
    for k in range(batch_size // mini_batch_size):
        lo = k * mini_batch_size
        p, idx, rows = plan_batch(mask[lo:lo + mini_batch_size], dp_size,
                                  routed_experts=None if routes is None else routes[lo:lo + mini_batch_size],
                                  previous=previous if first is None else first,
                                  max_moves=max_moves if first is None else 0, **settings)
        first = first or p
        for d in range(dp_size):
            parts[d] += [lo + i for i in idx[d * share:(d + 1) * share]]
            rows_of[d] += rows[d * share:(d + 1) * share]
    return first, [i for part in parts for i in part], [r for part in rows_of for r in part]


def make_balance_batch(*, max_token_len: Optional[int] = None, micro_batch_size_per_gpu: Optional[int] = None,
                       num_experts=None, moe_layers=None, layer_axis: str = "all", ep_ranks: int = 1,
                       edp_shards=None, stages=(("attention", 1.0, 0.0),), row_multiple: int = 1,
                       max_moves: Optional[int] = None, model_name: str = "", seed: int = 1, workers: int = 1,
                       budgets: Optional[dict] = None, time_limit_s: Optional[float] = None, strict: bool = False,
                       original=None, ppo_mini_batch_size: Optional[int] = None):
    """A replacement for ``RayPPOTrainer._balance_batch`` (bind it to the trainer:
    ``trainer._balance_batch = types.MethodType(make_balance_batch(...), trainer)``, or
    :func:`install_balance_batch`). The trainer's ``_get_dp_size(self.actor_rollout_wg, "actor")``
    gives D. max_token_len: verl's ``ppo_max_token_len_per_gpu`` (times the sequence-parallel size)
    with ``use_dynamic_bsz``; micro_batch_size_per_gpu: its ``ppo_micro_batch_size_per_gpu`` without
    it (verl's default): give one (see :func:`plan_batch`). The batch's ``routed_experts`` count
    with num_experts and moe_layers (without them the plan balances lengths). The last plan is kept as
    ``trainer.routepack_plan`` and its file text in ``batch.meta_info["routepack_plan"]`` (for
    :func:`apply_in_actor`); the next call starts its placement there (at most max_moves experts
    move). Metrics: ``<prefix>/routepack_rows``, ``routepack_score_max_u``,
    ``routepack_experts_moved`` (with a previous plan), ``routepack_fallback`` (1 when verl's own
    balancing answered, else 0). ``keep_minibatch=True`` plans each PPO mini-batch on its own
    (:func:`plan_minibatches`; its size: ppo_mini_batch_size, else the trainer's
    ``config.actor_rollout_ref.actor.ppo_mini_batch_size``, as verl reads it), and the kept plan is the
    first mini-batch's (the step's placement).

    Fallback: when planning fails or runs past time_limit_s seconds (None: no limit), one warning
    and the answer of ``original`` (called as ``original(batch, metrics, logging_prefix,
    keep_minibatch)``, e.g. the trainer's bound ``_balance_batch`` before it was replaced), else of
    the trainer class's own ``_balance_batch``, else of the adapter's plain equal-size balancing;
    ``trainer.routepack_plan`` then stays the placement the model runs, and the batch carries no
    plan. strict: raise instead. Raises as :func:`plan_batch` for the AssertionErrors verl raises
    itself; ValueError at once for a bad time_limit_s or neither or both of max_token_len and
    micro_batch_size_per_gpu."""
    if (max_token_len is None) == (micro_batch_size_per_gpu is None):
        raise ValueError("give max_token_len (verl's use_dynamic_bsz) or micro_batch_size_per_gpu (its static "
                         "micro-batches), exactly one of them")
    Deadline(time_limit_s)

    def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        dp_size = self._get_dp_size(self.actor_rollout_wg, "actor")
        mask = batch.batch["attention_mask"]
        batch_size = mask.shape[0]
        assert batch_size >= dp_size, f"number of items:[{batch_size}] < k_partitions:[{dp_size}]"
        assert batch_size % dp_size == 0, f"{batch_size} % {dp_size} != 0"

        def plan(deadline):
            if getattr(self, "use_prefix_grouper", False) and "uid" in getattr(batch, "non_tensor_batch", {}):
                raise ValueError("use_prefix_grouper keeps each uid group on one DP rank; the RoutePack plan "
                                 "balances samples, not groups")
            with_routes = num_experts is not None and "routed_experts" in batch.batch.keys()
            routes = batch.batch["routed_experts"] if with_routes else None
            if keep_minibatch:
                mini = ppo_mini_batch_size
                if mini is None:
                    try:
                        mini = self.config.actor_rollout_ref.actor.get("ppo_mini_batch_size")
                    except AttributeError:
                        mini = None
                if mini is None:
                    raise ValueError("keep_minibatch needs the PPO mini-batch size: give ppo_mini_batch_size, or a "
                                     "trainer whose config.actor_rollout_ref.actor has ppo_mini_batch_size")
                return plan_minibatches(mask, dp_size, int(mini), max_token_len=max_token_len,
                                        micro_batch_size_per_gpu=micro_batch_size_per_gpu, routed_experts=routes,
                                        num_experts=num_experts, moe_layers=moe_layers, layer_axis=layer_axis,
                                        ep_ranks=ep_ranks, edp_shards=edp_shards, stages=stages,
                                        row_multiple=row_multiple, previous=getattr(self, "routepack_plan", None),
                                        max_moves=max_moves, model_name=model_name, seed=seed, workers=workers,
                                        budgets=budgets, deadline=deadline)
            return plan_batch(mask, dp_size, max_token_len=max_token_len,
                              micro_batch_size_per_gpu=micro_batch_size_per_gpu, routed_experts=routes,
                              num_experts=num_experts, moe_layers=moe_layers, layer_axis=layer_axis,
                              ep_ranks=ep_ranks, edp_shards=edp_shards, stages=stages, row_multiple=row_multiple,
                              previous=getattr(self, "routepack_plan", None), max_moves=max_moves,
                              model_name=model_name, seed=seed, workers=workers, budgets=budgets,
                              deadline=deadline)

        own = getattr(type(self), "_balance_batch", None)
        if original is not None:
            name, answering = "verl's own _balance_batch", original
        elif callable(own) and not getattr(own, "_routepack_adapter", False):
            name, answering = "the trainer class's own _balance_batch", types.MethodType(own, self)
        else:
            name, answering = "the adapter's plain balancing", types.MethodType(_plain_balance, self)

        def fallback():
            answering(batch, metrics, logging_prefix, keep_minibatch)
            metrics[f"{logging_prefix}/routepack_fallback"] = 1

        planned, answer = plan_or_fallback(plan, fallback, logger=log, replaced="verl _balance_batch",
                                           fallback_name=name, time_limit_s=time_limit_s, strict=strict)
        if not planned:
            return
        p, global_idx, rows = answer
        batch.reorder(_like(global_idx, mask))
        batch.batch[ROW_KEY] = _like(rows, mask)
        if isinstance(getattr(batch, "meta_info", None), dict):
            batch.meta_info[PLAN_KEY] = p.to_json()
        self.routepack_plan = p
        metrics[f"{logging_prefix}/routepack_rows"] = p.row_count
        metrics[f"{logging_prefix}/routepack_score_max_u"] = p.score[0]
        metrics[f"{logging_prefix}/routepack_fallback"] = 0
        if p.migration is not None:
            metrics[f"{logging_prefix}/routepack_experts_moved"] = p.migration["moves"]

    _balance_batch._routepack_adapter = True
    _balance_batch._routepack_original = original
    return _balance_batch


def install_balance_batch(trainer, **settings):
    """Binds :func:`make_balance_batch` (``settings`` are its keywords) to `trainer` as its
    ``_balance_batch``, keeping the trainer's current ``_balance_batch`` as the fallback's
    original (the one it replaced, when the current one is the adapter already). Returns the bound
    method."""
    current = trainer._balance_batch
    if getattr(current, "_routepack_adapter", False):
        current = current._routepack_original
    method = types.MethodType(make_balance_batch(original=current, **settings), trainer)
    trainer._balance_batch = method
    return method


def _lengths(batch):
    """(lengths int64 [B], max_seq_len) of a local batch as upstream reads them: the offsets of a
    nested ``input_ids``, else the row sums of ``attention_mask`` and its width."""
    ids = batch["input_ids"] if "input_ids" in batch.keys() else None
    if ids is not None and getattr(ids, "is_nested", False):
        lengths = _np(ids.offsets().diff()).astype(np.int64)
        return lengths, int(lengths.max()) if len(lengths) else 0
    mask = batch["attention_mask"]
    return mask_lengths(mask), int(mask.shape[-1])


def _some_tensor(batch):
    for key in batch.keys():
        value = batch[key]
        if hasattr(value, "shape") and len(value.shape):
            return value
    return None


def micro_batch_count(total_tokens: int, groups: int, max_token_len: int, *, dp_group=None,
                      num_batches_divided_by=None, same_micro_num_in_dp=True, min_num_micro_batch=None,
                      device=None) -> int:
    """verl's micro-batch count (1dda039b ``rearrange_micro_batches``): min(groups, ceil(total_tokens
    / max_token_len)), raised to min_num_micro_batch, the maximum over dp_group (one all-reduce, on
    `device` or where the group's backend computes: cpu for gloo, cuda for nccl) when
    same_micro_num_in_dp and torch.distributed is initialized, rounded up to a multiple of
    num_batches_divided_by."""
    k = min(groups, -(-int(total_tokens) // int(max_token_len)))
    if min_num_micro_batch is not None:
        k = max(int(min_num_micro_batch), k)
    if same_micro_num_in_dp and dp_group is not None:
        import torch
        import torch.distributed as dist

        if dist.is_initialized():
            backend = dist.get_backend(dp_group)
            where = "cpu" if backend == "gloo" else "cuda" if backend == "nccl" else (device or "cpu")
            value = torch.tensor([k], device=where)
            dist.all_reduce(value, op=dist.ReduceOp.MAX, group=dp_group)
            k = int(value.cpu().item())
    if num_batches_divided_by is not None:
        m = int(num_batches_divided_by)
        k = -(-k // m) * m
    return k


def _bubble_order(parts: list, lengths) -> list:
    """`parts` (micro-batches as lists of sample indices) in the order of ``use_dynamic_bsz_balance``:
    ranked by workload (then first index) from the heaviest, the ranks 0, 2, 4, ... reversed, then
    1, 3, 5, ...: the lightest micro-batches at both ends, the heaviest in the middle."""
    work = workloads(lengths)
    ranked = sorted(parts, key=lambda p: (int(work[p].sum()) if p else 0, p[0] if p else 0), reverse=True)
    return ranked[0::2][::-1] + ranked[1::2]


def _fixed_row_ffd_fits(lengths, rows: int, cap: int) -> bool:
    """Whether FixedRowFFD (the planner's first construction, docs/planner.md) fills `rows` cells of one
    DP slot under `cap`: the `rows` longest seed the cells, the rest, longest first (ties by index),
    go to the first cell with room."""
    order = sorted(range(len(lengths)), key=lambda i: (-int(lengths[i]), i))
    sums = [int(lengths[i]) for i in order[:rows]]
    for i in order[rows:]:
        t = int(lengths[i])
        for c in range(rows):
            if sums[c] + t <= cap:
                sums[c] += t
                break
        else:
            return False
    return True


def target_cap(lengths, rows: int, max_token_len: int) -> int:
    """The token cap C for a plan of exactly `rows` micro-batches of one rank: max_token_len (at least
    the longest item) when FixedRowFFD fills `rows` cells under it, else the smallest cap found by
    bisection up to ceil(sum / rows) + longest, under which it always does; then the planner's row
    count is exactly `rows` (its lower bound is `rows`, met by that construction)."""
    longest = int(max(lengths))
    lo = max(int(max_token_len), longest)
    if _fixed_row_ffd_fits(lengths, rows, lo):
        return lo
    hi = -(-int(sum(int(t) for t in lengths)) // rows) + longest
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _fixed_row_ffd_fits(lengths, rows, mid):
            hi = mid
        else:
            lo = mid
    return hi


def _planned_rows(batch, n: int, k: int):
    """The plan's rows of a rank's planned chunk: the local index lists of rows 0..k-1 when the
    batch's ``routepack_row`` holds integer rows that run 0, 1, ..., k-1 in order; None otherwise."""
    if ROW_KEY not in batch.keys():
        return None
    rows = _np(batch[ROW_KEY])
    if rows.ndim != 1 or len(rows) != n or not np.issubdtype(rows.dtype, np.integer) or n == 0:
        return None
    if rows[0] != 0 or int(rows[-1]) != k - 1 or not np.isin(np.diff(rows), (0, 1)).all():
        return None
    return [np.flatnonzero(rows == r).tolist() for r in range(k)]


def _select(batch, idx):
    """The samples `idx` of a local batch, in that order: a dict of arrays is indexed key by key; a
    TensorDict with nested (jagged) tensors is rebuilt key by key, each nested tensor from its
    unbound rows (as verl's ``index_select_tensor_dict`` does); any other TensorDict is indexed
    with a long index tensor."""
    if isinstance(batch, dict):
        return {k: v[_like(idx, v)] if hasattr(v, "detach") else np.asarray(v)[np.asarray(idx, dtype=np.int64)]
                for k, v in batch.items()}
    values = {key: batch[key] for key in batch.keys()}
    if not any(getattr(v, "is_nested", False) for v in values.values()):
        return batch[_like(idx, _some_tensor(batch))]
    import torch

    out = {}
    for key, value in values.items():
        if getattr(value, "is_nested", False):
            rows = value.unbind()
            out[key] = torch.nested.as_nested_tensor([rows[i] for i in idx], layout=torch.jagged)
        elif hasattr(value, "shape") and len(value.shape):
            out[key] = value[_like(idx, value)]
        else:
            out[key] = value
    return type(batch)(source=out, batch_size=[len(idx)])


def _routes_counts(batch, n: int, num_experts, moe_layers, layer_axis):
    """Routing counts [B, L, E] of a local batch's ``routed_experts`` (padded [B, S, L, K] with
    ``attention_mask`` marking the tokens, or nested [T_i, L, K] per sample); None without routes or
    without num_experts / moe_layers."""
    if num_experts is None or "routed_experts" not in batch.keys():
        return None
    routes = batch["routed_experts"]
    if getattr(routes, "is_nested", False):
        return routepack.counts_from_routes([_np(r) for r in routes.unbind()], int(num_experts),
                                            moe_layers=list(moe_layers), layer_axis=layer_axis)
    valid = _np(batch["attention_mask"]).reshape(n, -1).astype(bool) if "attention_mask" in batch.keys() else None
    return routepack.counts_from_routes(_np(routes), int(num_experts), moe_layers=list(moe_layers),
                                        layer_axis=layer_axis, valid=valid)


def plan_micro_batches(lengths, rows: int, max_token_len: int, *, counts=None, moe_layers=None, ep_ranks: int = 1,
                       stages=(("attention", 1.0, 0.0),), seed: int = 1, workers: int = 1,
                       budgets: Optional[dict] = None, deadline: Optional[Deadline] = None) -> list:
    """Exactly `rows` micro-batches of one rank's items (samples or groups; lengths int [n] tokens,
    counts [n, L, E] or None), as lists of item indices, ascending, in the plan's row order: a
    RoutePack plan on one DP slot with cap :func:`target_cap` and min_rows `rows`, scored at the
    placement the model runs (:data:`applied_plan`, else the identity; none moves, so the placement rounds are
    skipped unless `budgets` asks for them). One row or one item per
    row are the only layouts and are returned without planning. RuntimeError if the plan's row count
    is not `rows`; the planner's exceptions as they come."""
    n = len(lengths)
    if rows == 1:
        return [list(range(n))]
    if rows == n:
        return [[i] for i in range(n)]
    cap = target_cap(lengths, rows, max_token_len)
    previous = None
    if counts is not None:
        previous = placement_in_use(applied_plan, moe_layers, int(np.shape(counts)[2]), ep_ranks)
        budgets = {"placement_rounds": 0, **(budgets or {})}
    p = plan_rows(np.asarray(lengths, dtype=np.int64), dp_slots=1, token_cap=cap, counts=counts,
                  moe_layers=moe_layers, ep_ranks=ep_ranks, stages=stages, min_rows=rows, previous=previous,
                  max_moves=0 if previous is not None else None, seed=seed, workers=workers, budgets=budgets,
                  deadline=deadline)
    if p.row_count != rows:
        raise RuntimeError(f"the plan has {p.row_count} micro-batches, not verl's {rows} (cap {cap})")
    return [sorted(row[0]) for row in p.rows]


def make_rearrange_micro_batches(original=None, *, num_experts=None, moe_layers: Optional[Sequence[int]] = None,
                                 layer_axis: str = "all", ep_ranks: int = 1, stages=(("attention", 1.0, 0.0),),
                                 seed: int = 1, workers: int = 1, budgets: Optional[dict] = None,
                                 time_limit_s: Optional[float] = None, strict: bool = False):
    """A ``rearrange_micro_batches`` with upstream's signature and return shape (see the module
    docstring). original: verl's own function, the fallback's answer (None: the adapter's plain
    balancing). num_experts, moe_layers (absolute ids), layer_axis: how to count the batch's
    ``routed_experts`` (:func:`routepack.counts_from_routes`); without them micro-batches are planned
    by length. ep_ranks, stages, seed, workers, budgets: the local plans' (see
    :func:`routepack.plan`). time_limit_s: seconds a call may plan (None: no limit); strict: raise
    where the fallback would answer. ValueError at once for num_experts without moe_layers (or the
    reverse) and a bad time_limit_s."""
    if (num_experts is None) != (moe_layers is None):
        raise ValueError("num_experts and moe_layers go together (how to count routed_experts)")
    Deadline(time_limit_s)

    def rearrange_micro_batches(batch, max_token_len, dp_group=None, num_batches_divided_by=None,
                                same_micro_num_in_dp=True, min_num_micro_batch=None, use_dynamic_bsz_balance=True,
                                force_group_size=1):
        """(micro_batches, micro_bsz_idx) of a rank's local batch: verl's count of micro-batches (every
        argument as upstream, dp_group included), filled by the plan's rows when the batch is a planned
        chunk, else by a local RoutePack plan (routes when configured and present, else lengths), else
        (planning failed or ran past the time limit: one warning) by verl's own function or the plain
        balancing. micro_bsz_idx[m] lists the local indices of micro-batch m, ascending; micro_batches[m]
        holds those samples (a TensorDict, or a dict of arrays for a dict). AssertionError as upstream:
        max_token_len below the padded sequence length, B not a multiple of force_group_size, a count
        above the number of groups; ValueError for an attention mask holding values other than 0 and 1."""
        lengths, max_seq_len = _lengths(batch)
        assert max_token_len >= max_seq_len, (
            f"max_token_len must be greater than the sequence length. Got {max_token_len=} and {max_seq_len=}")
        n = len(lengths)
        assert n % force_group_size == 0, (
            f"Batch size {n} must be divisible by force_group_size {force_group_size}")
        groups = n // force_group_size
        ref = _some_tensor(batch)
        k = micro_batch_count(int(lengths.sum()), groups, max_token_len, dp_group=dp_group,
                              num_batches_divided_by=num_batches_divided_by,
                              same_micro_num_in_dp=same_micro_num_in_dp, min_num_micro_batch=min_num_micro_batch,
                              device=getattr(ref, "device", None))
        assert k <= groups, f"{k} micro-batches for {groups} groups of force_group_size {force_group_size}"
        group_lengths = lengths.reshape(groups, force_group_size).sum(axis=1)

        def expand(parts):
            return [[g * force_group_size + j for g in part for j in range(force_group_size)] for part in parts]

        def plan(deadline):
            rows = _planned_rows(batch, n, k) if force_group_size == 1 else None
            if rows is not None:
                return rows
            counts = _routes_counts(batch, n, num_experts, moe_layers, layer_axis)
            if counts is not None and force_group_size > 1:
                counts = np.asarray(counts).reshape(groups, force_group_size, *np.shape(counts)[1:]).sum(axis=1)
            parts = plan_micro_batches(group_lengths, k, max_token_len, counts=counts, moe_layers=moe_layers,
                                       ep_ranks=ep_ranks if counts is not None else 1, stages=stages, seed=seed,
                                       workers=workers, budgets=budgets, deadline=deadline)
            parts = expand(parts)
            return _bubble_order(parts, lengths) if use_dynamic_bsz_balance else parts

        def fallback():
            if original is not None:
                return original(batch, max_token_len, dp_group=None, num_batches_divided_by=num_batches_divided_by,
                                same_micro_num_in_dp=same_micro_num_in_dp, min_num_micro_batch=k,
                                use_dynamic_bsz_balance=use_dynamic_bsz_balance, force_group_size=force_group_size)
            group_work = workloads(lengths).reshape(groups, force_group_size).sum(axis=1).tolist()
            parts = expand(lpt_parts(group_work, k))
            return _bubble_order(parts, lengths) if use_dynamic_bsz_balance else parts

        planned, answer = plan_or_fallback(plan, fallback, logger=log, replaced="verl rearrange_micro_batches",
                                           fallback_name="verl's own rearrange_micro_batches" if original is not None
                                           else "the adapter's plain balancing", time_limit_s=time_limit_s,
                                           strict=strict)
        if not planned and original is not None:
            return answer
        return [_select(batch, idx) for idx in answer], answer

    rearrange_micro_batches._routepack_adapter = True
    rearrange_micro_batches._routepack_original = original
    return rearrange_micro_batches


#: The drop-in as a plain import (or a monkeypatch) installs it: lengths only, the plain fallback.
rearrange_micro_batches = make_rearrange_micro_batches()


def install(*modules, **settings):
    """Replaces ``rearrange_micro_batches`` in each of `modules` (``verl.utils.seqlen_balancing``, and
    modules that imported the name, e.g. ``verl.workers.engine.utils``) with
    :func:`make_rearrange_micro_batches` (``settings`` are its keywords), keeping the first module's
    function as the fallback's original (the original it replaced, when that module holds an
    adapter already). Returns the installed function. TypeError without a module."""
    if not modules:
        raise TypeError("install needs the module(s) whose rearrange_micro_batches to replace")
    original = modules[0].rearrange_micro_batches
    if getattr(original, "_routepack_adapter", False):
        original = original._routepack_original
    fn = make_rearrange_micro_batches(original, **settings)
    for module in modules:
        module.rearrange_micro_batches = fn
    return fn


def apply_in_actor(data, actor_module, actor_optimizer=None, group=None):
    """Applies the step's plan in the actor before the update: the first line of verl's
    ``DataParallelPPOActor.update_policy(self, data)`` (verl-project/verl 1dda039b,
    ``verl/workers/actor/dp_actor.py``) becomes
    ``routepack.adapters.verl.apply_in_actor(data, self.actor_module, self.actor_optimizer, group=ep_group)``.

    data: the worker's DataProto chunk (its ``meta_info["routepack_plan"]``, written by the
    ``_balance_batch`` of :func:`make_balance_batch`); actor_module / actor_optimizer: the actor's model
    and torch optimizer; group: the EP process group when the experts are sharded over ranks (None: this
    process holds every expert). Calls :func:`routepack.torch.apply_placement` (experts, gradients, Adam
    state and routing follow the plan from the placement applied last) and returns its result, keeping
    the plan as :data:`applied_plan` (the placement local micro-batch plans are scored at); None
    when the batch carries no plan or the plan places no experts (made without routes). ValueError from
    apply_placement for a model the plan does not fit."""
    global applied_plan
    text = (getattr(data, "meta_info", None) or {}).get(PLAN_KEY)
    if text is None:
        return None
    plan = routepack.plan_from_json(text)
    if plan.num_experts <= 1:
        return None
    from routepack.torch import apply_placement

    result = apply_placement(actor_module, plan, optimizer=actor_optimizer, group=group)
    applied_plan = plan
    return result
