"""verl: the global plan at the trainer's ``_balance_batch``, its rows at ``rearrange_micro_batches``.

Contracts of verl-project/verl 1dda039b:

- ``verl/trainer/ppo/ray_trainer.py`` ``RayPPOTrainer._balance_batch(self, batch, metrics,
  logging_prefix="global_seqlen", keep_minibatch=False)`` reorders ``batch`` (a DataProto) in
  place with ``batch.reorder(global_idx)``; the dispatch then hands DP rank d the d-th of
  ``dp_size`` EQUAL chunks (``DataProto.chunk``). Lengths are ``attention_mask.sum(-1)``.
- ``verl/utils/seqlen_balancing.py`` ``rearrange_micro_batches(batch, max_token_len, dp_group=None,
  num_batches_divided_by=None, same_micro_num_in_dp=True, min_num_micro_batch=None,
  use_dynamic_bsz_balance=True, force_group_size=1) -> (micro_batches, micro_bsz_idx)`` splits a
  rank's local batch (a TensorDict with ``attention_mask``) into micro-batches of <=
  ``max_token_len`` tokens; ``micro_bsz_idx[m]`` lists the local indices of micro-batch m.

:func:`make_balance_batch` builds a ``_balance_batch`` that plans the whole batch (counts from the
``routed_experts`` int16 ``[B, S, L, K]`` field, masked by ``attention_mask``) and orders it
DP-slot-major, then by row, writing each sample's row into the batch field ``routepack_row``;
:func:`rearrange_micro_batches` cuts the local batch at those row boundaries, so every rank runs
R micro-batches.

verl's dispatch contract is kept by the planner itself: the plan's topology has
``samples_per_dp_slot`` = B / D (docs/batch-rules.md), so DP slot d holds exactly the d-th equal
chunk, and the plan equals ``routepack plan --samples-per-dp-slot B/D`` on the same window. Why the
count is a contract, not a preference:

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

The same mistakes raise upstream's exception types: a batch that D does not divide is the
AssertionError of verl's equal-size partition (``"{B} % {D} != 0"``), fewer samples than DP ranks
its ``"number of items:[B] < k_partitions:[D]"``. ``keep_minibatch=True`` gets the same equal
chunks (upstream sorts each rank's samples by workload afterwards, so mini-batch membership is not
kept there either). The PrefixGrouper branch (``use_prefix_grouper`` with ``uid``: whole uid groups
per rank) is refused with a ValueError: the plan does not keep groups together.

Steps are chained: a batch with routes starts its placement from ``trainer.routepack_plan`` (the
previous step's plan) and moves at most ``max_moves`` experts (None: unlimited), as ``routepack plan
--previous FILE --max-moves N``. The actor applies the step's plan before its update with
:func:`apply_in_actor` (the plan travels in the batch's ``meta_info``).

verl's own ``tests/utils/test_seqlen_balancing.py`` needs torch and tensordict, which Debian 12
does not package; this contract is tested in RoutePack's ``tests/python/test_adapters.py`` instead.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

import routepack

from ._common import plan_rows

ROW_KEY = "routepack_row"
#: The batch's ``meta_info`` key holding the step's plan file text (DataProto.chunk copies meta_info to
#: every worker's chunk, so the actor reads the plan where it updates).
PLAN_KEY = "routepack_plan"


def _np(x):
    x = x.detach().cpu().numpy() if hasattr(x, "detach") else x
    return np.asarray(x)


def _like(values, ref):
    """An index/row array of the same library as `ref` (torch tensor or numpy)."""
    if hasattr(ref, "detach"):
        import torch  # only when verl hands torch tensors

        return torch.as_tensor(np.asarray(values), dtype=torch.long, device=ref.device)
    return np.asarray(values, dtype=np.int64)


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


def plan_batch(attention_mask, dp_size: int, *, max_token_len: int, routed_experts=None, num_experts=None,
               moe_layers: Optional[Sequence[int]] = None, layer_axis: str = "all", ep_ranks: int = 1,
               edp_shards=None, stages=(("attention", 1.0, 0.0),), row_multiple: int = 1, previous=None,
               max_moves: Optional[int] = None, model_name: str = "", seed: int = 1, workers: int = 1,
               budgets: Optional[dict] = None):
    """The plan of a verl batch, and (global_idx, rows): global_idx orders the batch DP-slot-major
    then by row (DP rank d's equal chunk is global_idx[d * B/D:(d + 1) * B/D]); rows[j] is the row
    of the j-th sample after reordering.

    attention_mask: [B, S] (torch or numpy); lengths are its row sums. routed_experts: [B, S, L, K]
    expert ids (with num_experts, the absolute moe_layers and layer_axis as
    :func:`routepack.counts_from_routes` takes them); without it the plan balances lengths alone.
    The plan has cap C = max_token_len, D = dp_size DP slots of exactly B / D samples
    (``samples_per_dp_slot``), P = ep_ranks EP ranks, R a multiple of row_multiple; previous: the
    previous step's plan (its placement is the start, at most max_moves experts move); model_name: a
    shipped model (its expert shapes size the moves in the plan's migration section).
    AssertionError "{B} % {D} != 0" and "number of items:[B] < k_partitions:[D]" as verl's
    equal-size partition; ValueError for a sample longer than max_token_len (the planner's text)."""
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
    p = plan_rows(lengths, dp_slots=dp_size, token_cap=max_token_len, counts=counts, moe_layers=moe_layers,
                  ep_ranks=ep_ranks, edp_shards=edp_shards, stages=stages, row_multiple=row_multiple,
                  samples_per_dp_slot=batch_size // dp_size, previous=previous, max_moves=max_moves,
                  model_name=model_name, seed=seed, workers=workers, budgets=budgets)
    global_idx, rows = [], []
    for slot in p.micro_batches():
        for r, cell in enumerate(slot):
            global_idx.extend(cell)
            rows.extend([r] * len(cell))
    return p, global_idx, rows


def make_balance_batch(*, max_token_len: int, num_experts=None, moe_layers=None, layer_axis: str = "all",
                       ep_ranks: int = 1, edp_shards=None, stages=(("attention", 1.0, 0.0),), row_multiple: int = 1,
                       max_moves: Optional[int] = None, model_name: str = "", seed: int = 1, workers: int = 1,
                       budgets: Optional[dict] = None):
    """A replacement for ``RayPPOTrainer._balance_batch`` (bind it to the trainer:
    ``trainer._balance_batch = types.MethodType(make_balance_batch(...), trainer)``). The trainer's
    ``_get_dp_size(self.actor_rollout_wg, "actor")`` gives D. The last plan is kept as
    ``trainer.routepack_plan`` and its file text in ``batch.meta_info["routepack_plan"]`` (for
    :func:`apply_in_actor`); the next call starts its placement there (at most max_moves experts
    move). Raises as :func:`plan_batch`, and ValueError for the PrefixGrouper branch."""

    def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        if getattr(self, "use_prefix_grouper", False) and "uid" in getattr(batch, "non_tensor_batch", {}):
            raise ValueError("use_prefix_grouper keeps each uid group on one DP rank; the routepack adapter "
                             "balances samples, not groups: turn off use_prefix_grouper or balance_batch")
        dp_size = self._get_dp_size(self.actor_rollout_wg, "actor")
        mask = batch.batch["attention_mask"]
        routes = batch.batch["routed_experts"] if "routed_experts" in batch.batch.keys() else None
        p, global_idx, rows = plan_batch(mask, dp_size, max_token_len=max_token_len, routed_experts=routes,
                                         num_experts=num_experts, moe_layers=moe_layers, layer_axis=layer_axis,
                                         ep_ranks=ep_ranks, edp_shards=edp_shards, stages=stages,
                                         row_multiple=row_multiple, previous=getattr(self, "routepack_plan", None),
                                         max_moves=max_moves, model_name=model_name, seed=seed, workers=workers,
                                         budgets=budgets)
        batch.reorder(_like(global_idx, mask))
        batch.batch[ROW_KEY] = _like(rows, mask)
        if isinstance(getattr(batch, "meta_info", None), dict):
            batch.meta_info[PLAN_KEY] = p.to_json()
        self.routepack_plan = p
        metrics[f"{logging_prefix}/routepack_rows"] = p.row_count
        metrics[f"{logging_prefix}/routepack_score_max_u"] = p.score[0]
        if p.migration is not None:
            metrics[f"{logging_prefix}/routepack_experts_moved"] = p.migration["moves"]

    return _balance_batch


def _select(batch, idx):
    if isinstance(batch, dict):
        return {k: np.asarray(v)[np.asarray(idx, dtype=np.int64)] for k, v in batch.items()}
    return batch[_like(idx, batch["attention_mask"])]


def rearrange_micro_batches(batch, max_token_len, dp_group=None, num_batches_divided_by=None,
                            same_micro_num_in_dp=True, min_num_micro_batch=None, use_dynamic_bsz_balance=True,
                            force_group_size=1):
    """Cuts a rank's local batch at the plan's row boundaries (field ``routepack_row``, written by
    the ``_balance_batch`` of :func:`make_balance_batch`): micro-batch r holds the rank's samples of
    row r, in order. Returns (micro_batches, micro_bsz_idx) as upstream. AssertionError, as upstream,
    when max_token_len is below the padded sequence length (attention_mask's width). ValueError when the field is
    missing, does not hold one row per sample, a micro-batch exceeds ``max_token_len``, or the row
    count misses ``num_batches_divided_by`` / ``min_num_micro_batch`` (plan with ``row_multiple`` /
    ``min_rows``). IndexError when the rows are not integers (a float 1.7 is never truncated to
    1): they index the batch, and indexing a TensorDict or array with a float index tensor is
    torch's and numpy's IndexError."""
    if force_group_size != 1:
        raise ValueError("force_group_size > 1 is not supported by the routepack adapter")
    keys = batch.keys()
    if ROW_KEY not in keys:
        raise ValueError(f"the batch has no '{ROW_KEY}' field: plan it with routepack.adapters.verl.make_balance_batch")
    rows = _np(batch[ROW_KEY])
    if not np.issubdtype(rows.dtype, np.integer):
        flat = rows.reshape(-1)
        bad = next((i for i, r in enumerate(flat) if not float(r).is_integer()), None)
        shown = f": {ROW_KEY}[{bad}] = {flat[bad]}" if bad is not None else ""
        raise IndexError(f"{ROW_KEY} must hold integer rows (an index tensor: long or int), not {rows.dtype}{shown}")
    mask = _np(batch["attention_mask"])
    if rows.ndim != 1 or len(rows) != mask.shape[0]:
        raise ValueError(f"{ROW_KEY} has shape {tuple(rows.shape)} but attention_mask has {mask.shape[0]} samples: "
                         f"one row per sample, as make_balance_batch writes it")
    max_seq_len = mask.shape[-1]
    assert max_token_len >= max_seq_len, (
        f"max_token_len must be greater than the sequence length. Got {max_token_len=} and {max_seq_len=}")
    rows = rows.astype(np.int64)
    lengths = mask_lengths(mask)
    micro_bsz_idx = []
    for i, r in enumerate(rows):
        if r < 0 or (micro_bsz_idx and r < len(micro_bsz_idx) - 1) or r > len(micro_bsz_idx):
            raise ValueError(f"{ROW_KEY}[{i}] = {r}: rows must run 0, 1, ... in order")
        if r == len(micro_bsz_idx):
            micro_bsz_idx.append([])
        micro_bsz_idx[r].append(i)
    for m, idx in enumerate(micro_bsz_idx):
        tokens = int(sum(lengths[i] for i in idx))
        if tokens > max_token_len:
            raise ValueError(f"micro-batch {m} holds {tokens} tokens > max_token_len {max_token_len}")
    if num_batches_divided_by is not None and len(micro_bsz_idx) % num_batches_divided_by:
        raise ValueError(f"{len(micro_bsz_idx)} micro-batches are not a multiple of num_batches_divided_by = "
                         f"{num_batches_divided_by}: plan with row_multiple={num_batches_divided_by}")
    if min_num_micro_batch is not None and len(micro_bsz_idx) < min_num_micro_batch:
        raise ValueError(f"{len(micro_bsz_idx)} micro-batches < min_num_micro_batch = {min_num_micro_batch}")
    return [_select(batch, idx) for idx in micro_bsz_idx], micro_bsz_idx


def apply_in_actor(data, actor_module, actor_optimizer=None, group=None):
    """Applies the step's plan in the actor before the update: the first line of verl's
    ``DataParallelPPOActor.update_policy(self, data)`` (verl-project/verl 1dda039b,
    ``verl/workers/actor/dp_actor.py``) becomes
    ``routepack.adapters.verl.apply_in_actor(data, self.actor_module, self.actor_optimizer, group=ep_group)``.

    data: the worker's DataProto chunk (its ``meta_info["routepack_plan"]``, written by the
    ``_balance_batch`` of :func:`make_balance_batch`); actor_module / actor_optimizer: the actor's model
    and torch optimizer; group: the EP process group when the experts are sharded over ranks (None: this
    process holds every expert). Calls :func:`routepack.torch.apply_placement` (experts, gradients, Adam
    state and routing follow the plan from the placement applied last) and returns its result; None
    when the batch carries no plan or the plan places no experts (made without routes). ValueError from
    apply_placement for a model the plan does not fit."""
    text = (getattr(data, "meta_info", None) or {}).get(PLAN_KEY)
    if text is None:
        return None
    plan = routepack.plan_from_json(text)
    if plan.num_experts <= 1:
        return None
    from routepack.torch import apply_placement

    return apply_placement(actor_module, plan, optimizer=actor_optimizer, group=group)
