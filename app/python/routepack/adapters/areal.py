"""AReaL: RoutePack in place of ``split_padded_tensor_dict_into_mb_list``, AReaL's micro-batch split.

Contract of areal-project/AReaL d3fbc53c (branch ``feat/r3-native-router-replay``),
``areal/utils/data.py`` ``split_padded_tensor_dict_into_mb_list(data, mb_spec, group=None) ->
MicroBatchList``. Two callers in the actor update: ``PPOActor._ppo_update``
(``areal/trainer/ppo/actor.py``) cuts the step's batch into ``ppo_n_minibatches`` mini-batches
(``MicroBatchSpec(n_mbs=...)``, no token budget), and the engine's ``train_batch`` cuts each
mini-batch into micro-batches by token budget in ``_prepare_mb_list``
(``areal/engine/megatron_engine.py``: ``n_mbs = max(2 * pp_size if pp_size > 1 else 1,
mb_spec.n_mbs)``, ``n_mbs_divisor = pp_size``, ``group`` the DP group; ``areal/engine/fsdp_engine.py``:
the configured spec, no group).

- ``data``: a dict of padded tensors ``[B, S, ...]`` holding ``attention_mask`` ``[B, S]``; a sample's
  tokens are its row sum. Samples are taken in groups of ``mb_spec.granularity`` consecutive ones.
- The micro-batch count k is at least ``mb_spec.n_mbs`` and a multiple of ``mb_spec.n_mbs_divisor``,
  and every micro-batch holds at most ``mb_spec.max_tokens_per_mb`` tokens (None: 10^12, the
  returned spec says so). With torch.distributed initialized, the ranks of ``group`` agree on k:
  each allocates, the counts are all-gathered (``all_gather_object``), and while they differ every
  rank allocates again with ``n_mbs`` = the largest.
- The result (``MicroBatchList``): ``mbs[m]`` a dict holding, for every key that is
  ``position_ids`` or a tensor of B * S elements, the rows of micro-batch m stacked in order; every
  ``multi_modal_input*`` key as the list of its samples' entries; every other key unchanged.
  ``forward_indices`` the samples of mbs[0], mbs[1], ... in that order; ``backward_indices`` its
  inverse permutation; ``group_lens[m]`` the tokens of micro-batch m. Each micro-batch lists its
  samples ascending, and the micro-batches are ordered by their first sample (AReaL's
  ``allocate_balanced_mbs`` sorts them so).

:func:`split_padded_tensor_dict_into_mb_list` fills that contract from a RoutePack plan of the
batch on one DP slot: cap C = ``max_tokens_per_mb`` (or the batch's tokens, when fewer), a row
count R at least ``n_mbs`` and a multiple of ``n_mbs_divisor`` (the topology's ``min_rows`` and
``row_multiple``), one row per micro-batch, each granularity group kept whole. R is the planner's
R* under those rules (certified, or the best known, as the plan says), agreed over ``group`` as
upstream. Samples without tokens (AReaL's dummy eval items) are not planned: each joins, after
planning, the micro-batch holding the fewest samples (ties: the one whose first sample comes
first). Routes count when the batch carries them (``routed_experts`` ``[B, S, L, K]`` at the MoE
layers, with ``r3_routing_valid`` ``[B]``: AReaL's R3 keys) or a ``routes`` callable hands them
over (see :func:`engine_routes`), and the adapter was given ``num_experts`` and ``moe_layers``;
otherwise the plan balances lengths. A sample whose ``r3_routing_valid`` is False counts by its
length alone. The plan is scored at the placement the model runs (the plan :func:`apply_in_actor`
applied last in this process, else the identity): micro-batch plans never move experts.

The same mistakes raise upstream's exception types and texts: no ``attention_mask`` (ValueError),
a batch that ``granularity`` does not divide, a group longer than ``max_tokens_per_mb``, fewer
groups than the count asked, no count that the groups can fill (RuntimeError).

Fallback: when planning fails (any other exception) or runs past ``time_limit_s`` seconds (None:
no limit), the call logs one warning (logger ``routepack.adapters.areal``) and answers with
AReaL's own split: the original kept by :func:`install`; else, on a plain import (as a
monkeypatch installs it), AReaL's ``allocate_balanced_mbs`` (imported then, from
``areal.utils.data``; its ``packing_algorithm``, ffd or kk) in the same result; without AReaL, the
adapter's plain first fit decreasing. ``strict=True`` raises instead. Every allocation, planned or
not, takes part in the DP agreement above, so ranks that fall back and ranks that plan exchange
the same number of counts; once a call has fallen back, its later allocations (at the count the
group agreed on) are the fallback's, without a second warning.

AReaL's own ``tests/test_utils.py`` at d3fbc53c, run unchanged against this function through a
shim (docs/adapters.md has the commands): 48 of 48 pass, installed plainly, with :func:`install`
and strict.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

import routepack

from ._common import (Deadline, first_fit_bins, placement_in_use, plan_or_fallback, plan_rows, split_to,
                      stack_error)

log = logging.getLogger(__name__)

#: AReaL's default token budget of a micro-batch when ``max_tokens_per_mb`` is None.
DEFAULT_MAX_TOKENS_PER_MB = 10 ** 12
#: AReaL's R3 keys of a batch (``areal/engine/r3/transport.py``).
ROUTED_EXPERTS_KEY = "routed_experts"
ROUTING_VALID_KEY = "r3_routing_valid"
#: The plan :func:`apply_in_actor` applied last in this process: the placement the model runs, at
#: which micro-batches are planned.
applied_plan = None


@dataclasses.dataclass
class MicroBatchList:
    """The fields of AReaL's ``MicroBatchList`` that the split sets, for use without AReaL (with
    AReaL importable, the split returns AReaL's own class)."""

    data: dict
    mb_spec: Any
    mbs: list
    group_lens: list
    forward_indices: Optional[list] = None
    backward_indices: Optional[list] = None

    def __len__(self) -> int:
        return len(self.mbs)


def _np(x) -> np.ndarray:
    x = x.detach().cpu().numpy() if hasattr(x, "detach") else x
    return np.asarray(x)


def _size(value) -> Optional[int]:
    """Elements of a torch tensor or numpy array; None for anything else."""
    if hasattr(value, "detach") and callable(getattr(value, "numel", None)):
        return int(value.numel())
    if isinstance(value, np.ndarray):
        return int(value.size)
    return None


def _spec_with(mb_spec, **fields):
    """A copy of `mb_spec` with `fields` changed: AReaL's ``MicroBatchSpec.new``, else
    ``dataclasses.replace``, else a shallow copy with the attributes set."""
    new = getattr(type(mb_spec), "new", None)
    if new is not None:
        return new(mb_spec, **fields)
    if dataclasses.is_dataclass(mb_spec):
        return dataclasses.replace(mb_spec, **fields)
    import copy

    spec = copy.copy(mb_spec)
    for k, v in fields.items():
        setattr(spec, k, v)
    return spec


def _min_groups(n_mbs, divisor: int) -> int:
    """AReaL's smallest micro-batch count: n_mbs, raised to the divisor when None or smaller."""
    return divisor if n_mbs is None or n_mbs < divisor else int(n_mbs)


def _too_long(values, capacity: int, algorithm: str) -> RuntimeError:
    """AReaL's RuntimeError for a group over the budget (``ffd_allocate`` / ``kk_allocate``)."""
    if algorithm == "kk":
        return RuntimeError(f"Some values exceed capacity {capacity}. "
                            "Cannot pack a single item that is larger than the bin.")
    return RuntimeError(f"Values {values} is larger than capacity {capacity}")


def _cannot_allocate(values, capacity: int, min_groups: int, divisor: int) -> RuntimeError:
    return RuntimeError(f"Cannot allocate values {values} that satisfies capacity {capacity}, "
                        f"min_groups {min_groups} and n_groups_divisor {divisor}.")


def engine_routes(engine) -> Callable[[dict], Optional[tuple]]:
    """A ``routes`` callable for :func:`make_split_padded_tensor_dict_into_mb_list`: the R3 side
    channel of an AReaL engine, ``(engine._r3_pending_routed_experts, engine._r3_pending_valid)``
    (``[B, S, L, K]`` expert ids at the MoE layers and ``[B]`` bool), which ``PPOActor`` sets with
    ``set_engine_r3_side_channel`` around each ``train_batch`` (areal-project/AReaL d3fbc53c,
    ``areal/engine/r3/transport.py``), in the order of the mini-batch the engine splits; None when
    the channel is empty."""

    def routes(data):
        experts = getattr(engine, "_r3_pending_routed_experts", None)
        if experts is None:
            return None
        experts = experts.localize() if hasattr(experts, "localize") else experts
        valid = getattr(engine, "_r3_pending_valid", None)
        valid = valid.localize() if hasattr(valid, "localize") else valid
        return experts, valid

    return routes


def _batch_counts(data, mask: np.ndarray, routes, num_experts, moe_layers) -> Optional[np.ndarray]:
    """Routing counts [B, L, E] of the batch's samples: from its ``routed_experts`` (and
    ``r3_routing_valid``), else from ``routes(data)``; None without either or without num_experts.
    Tokens are the mask's; a sample whose routing is marked invalid counts nothing."""
    if num_experts is None:
        return None
    if ROUTED_EXPERTS_KEY in data:
        experts, valid = data[ROUTED_EXPERTS_KEY], data.get(ROUTING_VALID_KEY)
    else:
        found = routes(data) if routes is not None else None
        if found is None:
            return None
        experts, valid = found
    experts = _np(experts)
    if experts.shape[:2] != mask.shape:
        raise ValueError(f"routed_experts {tuple(experts.shape)} does not match attention_mask {tuple(mask.shape)}: "
                         f"[B, S, L, K] expected")
    tokens = mask.astype(bool)
    if valid is not None:
        valid = _np(valid).astype(bool).reshape(-1)
        if valid.shape[0] != mask.shape[0]:
            raise ValueError(f"r3_routing_valid has {valid.shape[0]} samples, attention_mask {mask.shape[0]}")
        tokens = tokens & valid[:, None]
    return routepack.counts_from_routes(experts, int(num_experts), moe_layers=list(moe_layers), layer_axis="moe",
                                        valid=tokens)


def plan_micro_batches(lengths, *, token_cap: int, min_rows: int = 1, row_multiple: int = 1, counts=None,
                       moe_layers: Optional[Sequence[int]] = None, ep_ranks: int = 1,
                       stages=(("attention", 1.0, 0.0),), seed: int = 1, workers: int = 1,
                       budgets: Optional[dict] = None, deadline: Optional[Deadline] = None):
    """The plan of one rank's micro-batches: lengths int [n] tokens (every one >= 1) of the items
    (samples or granularity groups), counts [n, L, E] or None (lengths only), on one DP slot with cap
    C = token_cap, R >= min_rows and a multiple of row_multiple, scored at the placement the model runs
    (nothing moves; the placement rounds are skipped unless `budgets` asks for them). Returns the
    :class:`routepack.Plan`; its rows are the micro-batches (``[sorted(row[0]) for row in plan.rows]``).
    The planner's exceptions as they come (InputError "no rectangular layout exists: ..." when the
    items cannot fill R rows)."""
    previous = None
    if counts is not None:
        previous = placement_in_use(applied_plan, moe_layers, int(np.shape(counts)[2]), ep_ranks)
        budgets = {"placement_rounds": 0, **(budgets or {})}
    return plan_rows(np.asarray(lengths, dtype=np.int64), dp_slots=1, token_cap=token_cap, counts=counts,
                     moe_layers=moe_layers, ep_ranks=ep_ranks if counts is not None else 1, stages=stages,
                     min_rows=min_rows, row_multiple=row_multiple, previous=previous,
                     max_moves=0 if previous is not None else None, seed=seed, workers=workers, budgets=budgets,
                     deadline=deadline)


def _plain_groups(lengths, cap: int, wanted: int, divisor: int) -> List[List[int]]:
    """The adapter's own allocation where AReaL is not at hand: first fit decreasing under the cap,
    then split (a micro-batch's shortest group into a new one) up to `wanted` and the next multiple of
    the divisor. RuntimeError (AReaL's text) when the groups cannot fill that count."""
    bins = first_fit_bins([int(t) for t in lengths], cap)
    count = max(len(bins), wanted)
    count = -(-count // divisor) * divisor
    if count > len(lengths):
        raise _cannot_allocate(np.asarray(lengths), cap, count, divisor)
    return [sorted(b) for b in split_to(bins, count, [int(t) for t in lengths])]


def _areal_allocate():
    """AReaL's ``allocate_balanced_mbs`` from ``areal.utils.data``; None when AReaL is not importable."""
    try:
        from areal.utils.data import allocate_balanced_mbs
    except ImportError:
        return None
    return allocate_balanced_mbs


def _all_counts(count: int, group) -> Optional[list]:
    """Every rank's micro-batch count over `group` (``all_gather_object``), None when
    torch.distributed is not initialized (torch is never imported here: a process that has not
    imported it has no process group)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    dist = torch.distributed
    if not dist.is_available() or not dist.is_initialized():
        return None
    counts = [None] * dist.get_world_size(group)
    dist.all_gather_object(counts, count, group=group)
    return counts


def _micro_batch_list_class(module):
    """The MicroBatchList class to answer with: the installed module's, else AReaL's, else ours."""
    cls = getattr(module, "MicroBatchList", None) if module is not None else None
    if cls is not None:
        return cls
    try:
        from areal.utils.data import MicroBatchList as cls
    except ImportError:
        return MicroBatchList
    return cls


def _assemble(data, mb_spec, groups: List[List[int]], granularity: int, seq_lens: list, cls):
    """The MicroBatchList of micro-batches `groups` (lists of group indices), as the module
    docstring describes it."""
    bs = len(seq_lens)
    mask = data["attention_mask"]
    max_seqlen = int(mask.shape[1])
    samples = [[g * granularity + j for g in group for j in range(granularity)] for group in groups]
    forward = [i for s in samples for i in s]
    backward = np.zeros(bs, dtype=np.int64)
    backward[forward] = np.arange(bs)
    split, whole, multimodal = {}, {}, {}
    for key, value in data.items():
        if key.startswith("multi_modal_input"):
            multimodal[key] = value
        elif key == "position_ids" or _size(value) == bs * max_seqlen:
            split[key] = value
        else:
            whole[key] = value
    bounds = np.cumsum([0] + [len(s) for s in samples])
    parts = {}
    for key, value in split.items():
        if hasattr(value, "detach"):
            import torch

            rows = value[torch.as_tensor(forward, dtype=torch.long, device=value.device)]
        else:
            rows = np.asarray(value)[np.asarray(forward, dtype=np.int64)]
        parts[key] = [rows[bounds[m]:bounds[m + 1]] for m in range(len(samples))]
    for key, value in multimodal.items():
        parts[key] = [[value[i] for i in s] for s in samples]
    mbs = [{**{key: parts[key][m] for key in parts}, **whole} for m in range(len(samples))]
    return cls(data=data, mb_spec=mb_spec, mbs=mbs, forward_indices=forward, backward_indices=backward.tolist(),
               group_lens=[int(sum(seq_lens[i] for i in s)) for s in samples])


def make_split_padded_tensor_dict_into_mb_list(original=None, *, num_experts=None,
                                               moe_layers: Optional[Sequence[int]] = None, ep_ranks: int = 1,
                                               stages=(("attention", 1.0, 0.0),), routes=None, seed: int = 1,
                                               workers: int = 1, budgets: Optional[dict] = None,
                                               time_limit_s: Optional[float] = None, strict: bool = False,
                                               module=None):
    """A ``split_padded_tensor_dict_into_mb_list`` with upstream's signature and result (see the
    module docstring). original: AReaL's own function, the fallback's answer (None: AReaL's
    ``allocate_balanced_mbs`` when importable, else the plain allocation). num_experts, moe_layers
    (the absolute ids of the L MoE layers of ``routed_experts``), ep_ranks, stages: how routes count
    and how the plan is scored; without num_experts and moe_layers micro-batches are planned by
    length. routes: a callable ``routes(data) -> (routed_experts [B, S, L, K], r3_routing_valid [B]
    or None)`` or None, asked when the batch carries no ``routed_experts`` (:func:`engine_routes`).
    seed, workers, budgets: the plans' (see :func:`routepack.plan`). time_limit_s: seconds an
    allocation may plan (None: no limit); strict: raise where the fallback would answer. module: the
    module whose ``MicroBatchList`` to answer with (None: AReaL's, else this module's). ValueError at
    once for num_experts without moe_layers (or the reverse) and a bad time_limit_s."""
    if (num_experts is None) != (moe_layers is None):
        raise ValueError("num_experts and moe_layers go together (how to count routed_experts)")
    Deadline(time_limit_s)

    def split_padded_tensor_dict_into_mb_list(data, mb_spec, group=None):
        """The micro-batches of a padded batch (see the module docstring): planned by RoutePack
        (routes when configured and at hand, else lengths), else (planning failed or ran past the
        time limit: one warning) AReaL's own answer. ValueError without ``attention_mask``;
        RuntimeError as AReaL for a batch granularity does not divide, a group over
        ``max_tokens_per_mb``, fewer groups than the count asked and a count the groups cannot fill."""
        if "attention_mask" not in data:
            raise ValueError("Input data must be padded and contain 'attention_mask' key.")
        if mb_spec.max_tokens_per_mb is None:
            mb_spec = _spec_with(mb_spec, max_tokens_per_mb=DEFAULT_MAX_TOKENS_PER_MB)
        granularity = int(mb_spec.granularity)
        mask = _np(data["attention_mask"])
        bs = int(mask.shape[0])
        if bs % granularity != 0:
            raise RuntimeError(f"Batch size {bs} cannot divide granularity {granularity}.")
        seq_lens = [int(t) for t in mask.reshape(bs, -1).sum(axis=1, dtype=np.int64)]
        lens = np.asarray(seq_lens, dtype=np.int64).reshape(bs // granularity, granularity).sum(axis=1)
        cap = int(mb_spec.max_tokens_per_mb)
        divisor = int(mb_spec.n_mbs_divisor)
        algorithm = getattr(mb_spec, "packing_algorithm", "ffd")
        cls = _micro_batch_list_class(module)
        target = mb_spec.n_mbs
        planning = True
        while True:
            wanted = _min_groups(target, divisor)
            if (lens > cap).any():
                raise _too_long(lens, cap, algorithm)
            if len(lens) < wanted:
                raise RuntimeError(f"Number of values {len(lens)} is smaller than min_groups {wanted}")

            def plan(deadline, wanted=wanted):
                counts = _batch_counts(data, mask.reshape(bs, -1), routes, num_experts, moe_layers)
                if counts is not None:
                    counts = np.asarray(counts).reshape(bs // granularity, granularity,
                                                        *np.shape(counts)[1:]).sum(axis=1)
                full = [g for g in range(len(lens)) if lens[g] > 0]
                empty = [g for g in range(len(lens)) if lens[g] == 0]
                try:
                    p = plan_micro_batches(lens[full], token_cap=min(cap, int(lens.sum())), min_rows=wanted,
                                           row_multiple=divisor, counts=None if counts is None else counts[full],
                                           moe_layers=moe_layers, ep_ranks=ep_ranks, stages=stages, seed=seed,
                                           workers=workers, budgets=budgets, deadline=deadline)
                except ValueError as e:
                    rows = re.search(r"= (\d+) non-empty cells", str(e))
                    if str(e).startswith("no rectangular layout exists: ") and rows and not empty:
                        raise stack_error(_cannot_allocate(lens, cap, int(rows.group(1)), divisor)) from e
                    raise
                groups = sorted(sorted(full[i] for i in row[0]) for row in p.rows)
                for g in empty:
                    min(groups, key=len).append(g)
                return sorted(sorted(mb) for mb in groups)

            def fallback(target=target):
                if original is not None:
                    spec = mb_spec if target == mb_spec.n_mbs else _spec_with(mb_spec, n_mbs=target)
                    return original(data, spec, group)
                allocate = _areal_allocate()
                if allocate is not None:
                    return allocate(_spec_with(mb_spec, n_mbs=target), lens)
                return sorted(_plain_groups(lens, cap, wanted, divisor))

            if planning:
                planned, answer = plan_or_fallback(
                    plan, fallback, logger=log, replaced="AReaL split_padded_tensor_dict_into_mb_list",
                    fallback_name=lambda: ("AReaL's own split_padded_tensor_dict_into_mb_list" if original is not None
                                           else "AReaL's allocate_balanced_mbs" if _areal_allocate() is not None
                                           else "the adapter's plain first fit decreasing"),
                    time_limit_s=time_limit_s, strict=strict)
                planning = planned
            else:
                planned, answer = False, fallback()
            if not planned and original is not None:
                answer.mb_spec = mb_spec
                return answer
            groups = [[int(g) for g in mb] for mb in answer]
            counts = _all_counts(len(groups), group)
            if counts is None or all(c == len(groups) for c in counts):
                return _assemble(data, mb_spec, groups, granularity, seq_lens, cls)
            target = max(counts)

    split_padded_tensor_dict_into_mb_list._routepack_adapter = True
    split_padded_tensor_dict_into_mb_list._routepack_original = original
    return split_padded_tensor_dict_into_mb_list


#: The drop-in as a plain import (or a monkeypatch) installs it: lengths only, AReaL's allocation
#: (or the plain one) as the fallback.
split_padded_tensor_dict_into_mb_list = make_split_padded_tensor_dict_into_mb_list()


def install(module, *importers, **settings):
    """Replaces ``split_padded_tensor_dict_into_mb_list`` in `module` (``areal.utils.data``) and in
    each of `importers` (modules that imported the name: ``areal.trainer.ppo.actor``,
    ``areal.engine.megatron_engine``, ``areal.engine.fsdp_engine``, ...) with
    :func:`make_split_padded_tensor_dict_into_mb_list` (``settings`` are its keywords), keeping
    `module`'s function as the fallback's original (the original it replaced, when `module` holds an
    adapter already) and answering with `module`'s ``MicroBatchList``. Returns the installed function."""
    original = module.split_padded_tensor_dict_into_mb_list
    if getattr(original, "_routepack_adapter", False):
        original = original._routepack_original
    fn = make_split_padded_tensor_dict_into_mb_list(original, module=module, **settings)
    for m in (module, *importers):
        m.split_padded_tensor_dict_into_mb_list = fn
    return fn


def apply_in_actor(plan, model, optimizer=None, group=None):
    """Applies a step's plan in the actor before its update: experts, their gradients, Adam state and
    routing follow the plan (:func:`routepack.torch.apply_placement`), and the plan becomes
    :data:`applied_plan`, the placement the micro-batches are planned at. plan: a
    :class:`routepack.Plan` or its file text; model / optimizer: the engine's model and torch
    optimizer; group: the EP process group when the experts are sharded over ranks (None: this process
    holds every expert). Returns apply_placement's result; None for a plan that places no experts
    (made without routes). ValueError (InputError) from apply_placement for a model the plan does not
    fit, before anything moves."""
    global applied_plan
    if isinstance(plan, str):
        plan = routepack.plan_from_json(plan)
    if plan.num_experts <= 1:
        return None
    from routepack.torch import apply_placement

    result = apply_placement(model, plan, optimizer=optimizer, group=group)
    applied_plan = plan
    return result
