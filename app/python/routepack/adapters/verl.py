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

Uneven DP slots are refused (ValueError naming the counts), because verl's contract at 1dda039b has no
way to hand DP ranks different sample counts:

- ``_balance_batch`` itself partitions with ``get_seqlen_balanced_partitions(workload_lst,
  k_partitions=dp_size, equal_size=True)`` and says "The data will be automatically equally
  partitioned by dispatch function" (verl/trainer/ppo/ray_trainer.py); its PrefixGrouper branch
  refuses unless ``num_groups % dp_size == 0`` ("This ensures each rank gets equal number of groups");
- the dispatch splits positionally: ``dispatch_nd_compute_dataproto`` -> ``_split_args_kwargs_data_proto``
  -> ``BatchData.chunk`` (verl/single_controller/base/decorator.py) -> ``DataProto.chunk``, which asserts
  ``len(self) % chunks == 0`` ("only support equal chunk", verl/protocol.py), or ``chunk_tensordict``
  ("Must evenly divide len(td)", verl/utils/tensordict_utils.py); no chunk-size argument exists;
- the only escape, auto padding (``DataProto.padding`` / ``_split_args_kwargs_data_proto_with_auto_padding``),
  appends copies of the last sample to the END of the batch, so the padded copies land on the last
  ranks (not on the short slots) and are trained on by ``update_actor``: it would change the gradient.

So a plan is usable in verl exactly when its DP slots hold B / D samples each; otherwise use the
plan's rows with a stack that dispatches per-rank lists (slime, Megatron-Core, NeMo-RL adapters).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

import routepack

from ._common import plan_rows

ROW_KEY = "routepack_row"


def _np(x):
    x = x.detach().cpu().numpy() if hasattr(x, "detach") else x
    return np.asarray(x)


def _like(values, ref):
    """An index/row array of the same library as `ref` (torch tensor or numpy)."""
    if hasattr(ref, "detach"):
        import torch  # only when verl hands torch tensors

        return torch.as_tensor(np.asarray(values), dtype=torch.long, device=ref.device)
    return np.asarray(values, dtype=np.int64)


def plan_batch(attention_mask, dp_size: int, *, max_token_len: int, routed_experts=None, num_experts=None,
               moe_layers: Optional[Sequence[int]] = None, layer_axis: str = "all", ep_ranks: int = 1,
               edp_shards=None, stages=(("attention", 1.0, 0.0),), row_multiple: int = 1, seed: int = 1,
               workers: int = 1, budgets: Optional[dict] = None):
    """The plan of a verl batch, and (global_idx, rows): global_idx orders the batch DP-slot-major
    then by row; rows[j] is the row of the j-th sample after reordering."""
    mask = _np(attention_mask)
    lengths = mask.reshape(mask.shape[0], -1).sum(-1).astype(np.int64)
    counts = None
    if routed_experts is not None:
        if num_experts is None or moe_layers is None:
            raise ValueError("routed_experts needs num_experts and moe_layers")
        counts = routepack.counts_from_routes(_np(routed_experts), int(num_experts), moe_layers=list(moe_layers),
                                              layer_axis=layer_axis, valid=mask.reshape(mask.shape[0], -1).astype(bool))
    p = plan_rows(lengths, dp_slots=dp_size, token_cap=max_token_len, counts=counts, moe_layers=moe_layers,
                  ep_ranks=ep_ranks, edp_shards=edp_shards, stages=stages, row_multiple=row_multiple, seed=seed,
                  workers=workers, budgets=budgets)
    global_idx, rows = [], []
    for slot in p.micro_batches():
        for r, cell in enumerate(slot):
            global_idx.extend(cell)
            rows.extend([r] * len(cell))
    sizes = [sum(len(c) for c in slot) for slot in p.micro_batches()]
    if len(set(sizes)) != 1:
        raise ValueError(f"verl dispatches {dp_size} equal chunks of the batch (DataProto.chunk), but the plan gives "
                         f"the DP slots {sizes} samples; equal chunks need {len(lengths) / dp_size:g} each, and "
                         f"verl has no per-rank sample counts (its auto padding would train on copies)")
    return p, global_idx, rows


def make_balance_batch(*, max_token_len: int, num_experts=None, moe_layers=None, layer_axis: str = "all",
                       ep_ranks: int = 1, edp_shards=None, stages=(("attention", 1.0, 0.0),), row_multiple: int = 1,
                       seed: int = 1, workers: int = 1, budgets: Optional[dict] = None):
    """A replacement for ``RayPPOTrainer._balance_batch`` (bind it to the trainer:
    ``trainer._balance_batch = types.MethodType(make_balance_batch(...), trainer)``). The trainer's
    ``_get_dp_size(self.actor_rollout_wg, "actor")`` gives D. The last plan is kept as
    ``trainer.routepack_plan``."""

    def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        dp_size = self._get_dp_size(self.actor_rollout_wg, "actor")
        mask = batch.batch["attention_mask"]
        routes = batch.batch["routed_experts"] if "routed_experts" in batch.batch.keys() else None
        p, global_idx, rows = plan_batch(mask, dp_size, max_token_len=max_token_len, routed_experts=routes,
                                         num_experts=num_experts, moe_layers=moe_layers, layer_axis=layer_axis,
                                         ep_ranks=ep_ranks, edp_shards=edp_shards, stages=stages,
                                         row_multiple=row_multiple, seed=seed, workers=workers, budgets=budgets)
        batch.reorder(_like(global_idx, mask))
        batch.batch[ROW_KEY] = _like(rows, mask)
        self.routepack_plan = p
        metrics[f"{logging_prefix}/routepack_rows"] = p.row_count
        metrics[f"{logging_prefix}/routepack_score_max_u"] = p.score[0]

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
    row r, in order. Returns (micro_batches, micro_bsz_idx) as upstream. ValueError when the field is
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
    rows = rows.astype(np.int64)
    lengths = mask.reshape(len(rows), -1).sum(-1)
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
