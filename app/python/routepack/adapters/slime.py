"""slime: RoutePack in place of ``slime.utils.dp_schedule.build_dp_schedule``.

Calling convention and return shape of THUDM/slime 624b824a, ``slime/utils/dp_schedule.py``
``build_dp_schedule(args, train_parallel_config, total_lengths, *, global_batch_size,
rollout_indices) -> (partitions, micro_batch_indices, num_microbatches, global_batch_sizes)``:

- samples are grouped by rollout id (first-occurrence order) and split into steps of
  ``global_batch_size`` rollouts; trailing rollouts that do not fill a step are dropped;
- ``partitions[r]``: global sample indices of DP rank r, steps concatenated;
- ``micro_batch_indices[r]``: per micro-batch, LOCAL indices into ``partitions[r]``, tiling
  ``range(len(partitions[r]))`` in order;
- ``num_microbatches[s]``: micro-batches per rank at step s (the same on every rank);
- ``global_batch_sizes[s]``: rollouts in step s.

Each step is one RoutePack plan under slime's batch rules, kept by the planner itself
(docs/batch-rules.md; the plan is ``routepack plan`` with the same topology options): DP rank r's
micro-batches are the plan's cells (0, r), (1, r), ..., so every rank runs R micro-batches, and
with virtual pipelining (``vpp_size > 1``) R is a multiple of
``microbatch_group_size_per_vp_stage`` (the topology's ``row_multiple``).

- Dynamic mode (``use_dynamic_batch_size``): cap C = ``max_tokens_per_gpu * cp_size`` tokens per
  micro-batch, and a sample longer than C gets a micro-batch of its own (``oversize`` ``alone``), as
  slime's first-fit packing gives it.
- Static mode (``micro_batch_size`` c): micro-batches of exactly c samples (``samples_per_cell``
  c, no token cap), R = n / (c D). slime chunks a step of n samples into ceil(n / c) micro-batches,
  the last one short when c does not divide n; then the plan has ceil(n / c) / D rows of at most c
  samples each (``max_samples_per_cell`` c, ``min_rows`` ceil(n / c) / D, the cap the c longest
  samples fill). A micro-batch count that is not a multiple of ``dp_size * mb_group`` is upstream's
  AssertionError ("static path: num_mbs (...) is not a multiple of dp_size * mb_group (...)").
- ``balance_data`` / ``balance_by_flops``: the plan balances the exact cost (routing and
  attention) itself; slime's FLOPs-weighted Karmarkar-Karp order is not reproduced.

The same mistakes raise upstream's exception types: fewer rollouts than ``global_batch_size``,
a step with fewer samples than ``dp_size``, too few samples for the micro-batch multiple, a static
micro-batch count off the multiple, ``use_dynamic_batch_size`` without ``max_tokens_per_gpu`` and
the static mode without ``micro_batch_size`` are AssertionErrors (upstream's texts);
``global_batch_size=0`` is the ZeroDivisionError of upstream's ``len(rollout_ids) //
global_batch_size``, with a message that says so. ``total_lengths`` are whole token counts
(integral floats accepted; ValueError "total_lengths[i] = 1.7 is not a whole number of tokens",
never truncated).

slime's own ``tests/test_dp_schedule.py`` at 624b824a, run unchanged through a shim package
(``slime/utils/dp_schedule.py`` importing this function): 8 of 9 pass. The one failure,
``test_balance_data_distributes_by_flops``, pins slime's FLOPs-balanced partition of 8 samples
(``[[1, 2, 5, 6], [0, 3, 4, 7]]``); the plan's partition is RoutePack's own.

Fallback: when planning fails (any exception other than the upstream errors above) or the call
runs past ``args.routepack_time_limit_s`` seconds (None: no limit), the adapter logs one warning
(logger ``routepack.adapters.slime``) and returns the schedule of slime's own
``build_dp_schedule``: the original kept by :func:`install`, else (a plain import, as a monkeypatch
installs it) the adapter's plain schedule (first fit decreasing under the cap with oversize
samples alone, split up to the micro-batch multiple, or slime's static chunks; micro-batches dealt
round-robin to the ranks). The call then keeps no plans (``last_plans`` is empty, its
``<dir>/step_<s>.json`` files are removed) and the train-step hook keeps the placement the model
runs. ``args.routepack_strict = True`` raises instead.

Steps are chained: the placement of step s starts from step s-1's plan (the first step of a call
from the last step of this process's previous call) and moves at most ``args.routepack_max_moves``
experts (None: unlimited), as ``routepack plan --previous FILE --max-moves N``.

Routing counts come from ``rollout_routed_experts`` (slime's per-sample ``[T, num_layers, topk]``
replay arrays, every decoder layer, ``layer_axis='all'``), passed as the keyword
``rollout_routed_experts`` (``data["rollout_routed_experts"]`` at the call site
``RolloutManager._split_train_data_by_dp``). Without it the plan balances lengths alone.

RoutePack settings are read from ``args`` (Megatron argument names where they exist):
``num_experts``, ``num_layers``, ``moe_layer_freq`` (Megatron's: an integer N, MoE where
layer % N == 0, or a 0/1 list; see :func:`moe_layers_of`), ``expert_model_parallel_size`` (EP ranks P),
``routepack_edp_shards`` (None = one shard), ``routepack_attention_stages``
(default ``[("attention", 1.0, 0.0)]``), ``routepack_seed`` (default 1), ``routepack_workers``
(default 1), ``routepack_max_moves`` (default None: unlimited), ``routepack_plan_dir`` (when set, step s's plan is written to
``<dir>/step_<s>.json`` for the train-step hook on the training ranks), ``routepack_time_limit_s``
(default None), ``routepack_strict`` (default False).
"""

from __future__ import annotations

import ast
import logging
import operator
import os
from typing import Any, Optional

import numpy as np

import routepack

from ._common import Deadline, first_fit_bins, plan_or_fallback, plan_rows, split_to, stack_error, whole_tokens

#: Plans of the last build_dp_schedule call in this process, one per step.
last_plans: list = []
#: Per absolute MoE layer id, the physical_to_logical row the hook handed out last (int64 [E]).
current_physical_to_logical: dict = {}
#: The slot moves of the hook's last placement change (Placement.moves of the new vs the old plan).
last_moves: list = []
#: What the hook's last routepack.torch.apply_placement did (an ApplyResult), None when it applied nothing.
last_apply = None
_applied_plan = None
#: slime's own build_dp_schedule, kept by :func:`install` as the fallback's answer (None: the plain schedule).
original_build_dp_schedule = None

log = logging.getLogger(__name__)


def _freq_pattern(text: str):
    """Megatron's ``--moe-layer-freq`` text (``moe_freq_type``, megatron/training/arguments.py):
    "N", or a Python list expression such as "[0]*3+[1]*1" or "([1]*3+[0]*1)*3", read without
    eval: list literals of integers combined with + and *."""
    if "[" not in text:
        return int(text)

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [value(e) for e in node.elts]
            if all(isinstance(i, int) for i in items):
                return list(items)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = value(node.left), value(node.right)
            return left + right if isinstance(node.op, ast.Add) else left * right
        raise ValueError(f"moe_layer_freq {text!r} is not a list of integers built with + and *")

    try:
        pattern = value(ast.parse(text.strip(), mode="eval").body)
    except SyntaxError as e:
        raise ValueError(f"moe_layer_freq {text!r} is not a list expression") from e
    if not isinstance(pattern, list):
        raise ValueError(f"moe_layer_freq {text!r} is not a list of integers built with + and *")
    return pattern


def moe_layers_of(args: Any) -> list:
    """Absolute (0-based) MoE layer ids from Megatron args, with Megatron's ``moe_layer_freq``
    semantics (megatron/core/models/gpt/gpt_layer_specs.py ``get_gpt_decoder_layer_specs``; slime
    624b824a ``fill_routing_replay`` skips the same layers): an integer N (default 1) makes layer i
    a MoE layer when i % N == 0; a list (or its text, "[0]*3+[1]*1") gives one 0/1 entry per
    layer, MoE where non-zero. AssertionError when a list's length is not ``num_layers`` (as
    Megatron and slime assert); ValueError for N < 1 or a malformed pattern."""
    num_layers = int(args.num_layers)
    freq = getattr(args, "moe_layer_freq", None)
    if freq is None:
        freq = 1
    if isinstance(freq, str):
        freq = _freq_pattern(freq)
    if isinstance(freq, (list, tuple)):
        assert len(freq) == num_layers, (
            f"moe_layer_freq has {len(freq)} entries but num_layers is {num_layers}: one 0/1 entry per layer")
        return [i for i, f in enumerate(freq) if int(f) != 0]
    n = operator.index(freq)
    if n < 1:
        raise ValueError(f"moe_layer_freq must be >= 1 (a MoE layer every N layers), got {n}")
    return [i for i in range(num_layers) if i % n == 0]


def _static_rules(lengths: list, c: int, dp_size: int, align_to: int) -> dict:
    """Plan options of slime's static mode for one step of n samples: ceil(n / c) micro-batches,
    a multiple of align_to (else upstream's AssertionError), exactly c samples each when c divides
    n, else at most c in ceil(n / c) / D rows."""
    n = len(lengths)
    k = -(-n // c)
    if k % align_to:
        raise AssertionError(
            f"static path: num_mbs ({k}) is not a multiple of dp_size * mb_group ({align_to}); got "
            f"step_size={n}, micro_batch_size={c}, dp_size={dp_size}, mb_group={align_to // dp_size}. "
            f"Splitting static mbs would break the fixed-size invariant; adjust the config "
            f"so step_size % (dp_size * micro_batch_size * mb_group) == 0.")
    if n % c == 0:
        return dict(token_cap=0, samples_per_cell=c)
    return dict(token_cap=sum(sorted(lengths)[-c:]), max_samples_per_cell=c, min_rows=k // dp_size)


def _plain_schedule(dynamic: bool, cap: Optional[int], c: Optional[int], dp_size: int, align_to: int,
                    steps: list) -> tuple:
    """The adapter's own schedule in slime's shape where slime's is not at hand. steps: per step, its
    global sample indices and lengths. Dynamic: first fit decreasing under `cap` (a longer sample
    alone), split up to a multiple of `align_to` micro-batches (AssertionError, as slime, when the
    step has too few samples); static: chunks of c consecutive samples. Micro-batch b goes to rank
    b % dp_size."""
    partitions = [[] for _ in range(dp_size)]
    micro_batch_indices = [[] for _ in range(dp_size)]
    num_microbatches = []
    for step, (sample_indices, lengths) in enumerate(steps):
        n = len(lengths)
        if dynamic:
            bins = first_fit_bins(lengths, cap)
            k = max(-(-len(bins) // align_to) * align_to, align_to)
            if k > n:
                raise AssertionError(f"dynamic path: step {step}'s {n} samples cannot fill a multiple of dp_size * "
                                     f"mb_group ({align_to}) micro-batches")
            bins = [sorted(b) for b in split_to(bins, k, lengths)]
        else:
            bins = [list(range(i, min(i + c, n))) for i in range(0, n, c)]
        for b, cell in enumerate(bins):
            r = b % dp_size
            start = len(partitions[r])
            partitions[r].extend(sample_indices[i] for i in cell)
            micro_batch_indices[r].append(list(range(start, start + len(cell))))
        num_microbatches.append(len(bins) // dp_size)
    return partitions, micro_batch_indices, num_microbatches


def build_dp_schedule(
    args: Any,
    train_parallel_config: dict,
    total_lengths: list,
    *,
    global_batch_size: int,
    rollout_indices: list,
    rollout_routed_experts: Optional[list] = None,
) -> tuple:
    """RoutePack's schedule in slime's shape (see the module docstring for the contract and the
    fallback)."""
    dp_size = int(train_parallel_config["dp_size"])
    cp_size = int(train_parallel_config["cp_size"])
    vpp_size = int(train_parallel_config["vpp_size"])
    mb_group = train_parallel_config["microbatch_group_size_per_vp_stage"]
    row_multiple = int(mb_group) if vpp_size > 1 and mb_group else 1
    align_to = dp_size * row_multiple
    dynamic = bool(getattr(args, "use_dynamic_batch_size", False))
    if dynamic:
        assert args.max_tokens_per_gpu is not None, "--use-dynamic-batch-size needs --max-tokens-per-gpu"
        rules = dict(token_cap=int(args.max_tokens_per_gpu) * cp_size, oversize="alone")
    else:
        c = getattr(args, "micro_batch_size", None)
        assert c is not None, "the static mode (no --use-dynamic-batch-size) needs --micro-batch-size"
        c = operator.index(c)
        if c < 1:
            raise ValueError(f"micro_batch_size must be >= 1 (samples per micro-batch), got {c}")
    if len(rollout_indices) != len(total_lengths):
        raise ValueError(f"rollout_indices holds {len(rollout_indices)} ids for {len(total_lengths)} samples")
    if rollout_routed_experts is not None and len(rollout_routed_experts) != len(total_lengths):
        raise ValueError(
            f"rollout_routed_experts holds {len(rollout_routed_experts)} samples, total_lengths {len(total_lengths)}")

    by_rollout: dict = {}
    for pos, rid in enumerate(rollout_indices):
        by_rollout.setdefault(rid, []).append(pos)
    rollout_ids = list(by_rollout)
    if global_batch_size == 0:
        raise ZeroDivisionError("global_batch_size is 0: it counts the rollouts of one training step (>= 1)")
    num_steps = len(rollout_ids) // global_batch_size
    assert num_steps >= 1, (f"num_rollouts ({len(rollout_ids)}) < global_batch_size ({global_batch_size}); "
                            "need at least one rollout per step.")

    moe_layers = ep_ranks = num_experts = None
    if rollout_routed_experts is not None:
        moe_layers = moe_layers_of(args)
        num_experts = int(args.num_experts)
        ep_ranks = int(getattr(args, "expert_model_parallel_size", 1) or 1)
    settings = dict(edp_shards=getattr(args, "routepack_edp_shards", None),
                    stages=getattr(args, "routepack_attention_stages", None) or [("attention", 1.0, 0.0)],
                    seed=int(getattr(args, "routepack_seed", 1)), workers=int(getattr(args, "routepack_workers", 1)),
                    max_moves=getattr(args, "routepack_max_moves", None), row_multiple=row_multiple)
    plan_dir = getattr(args, "routepack_plan_dir", None)
    time_limit_s = getattr(args, "routepack_time_limit_s", None)
    strict = bool(getattr(args, "routepack_strict", False))
    Deadline(time_limit_s)

    steps, step_rules = [], []
    for step in range(num_steps):
        step_rollouts = rollout_ids[step * global_batch_size:(step + 1) * global_batch_size]
        sample_indices = [pos for rid in step_rollouts for pos in by_rollout[rid]]
        lengths = [whole_tokens(total_lengths[i], f"total_lengths[{i}]") for i in sample_indices]
        assert len(sample_indices) >= dp_size, (f"step {step}: {len(sample_indices)} samples < dp_size {dp_size}; "
                                                "each step needs at least one sample per rank.")
        steps.append((sample_indices, lengths))
        step_rules.append(rules if dynamic else _static_rules(lengths, c, dp_size, align_to))
    previous = last_plans[-1] if last_plans else None
    last_plans.clear()

    def plan(deadline):
        plans, chained = [], previous
        for step, (sample_indices, lengths) in enumerate(steps):
            counts = None
            if rollout_routed_experts is not None:
                counts = routepack.counts_from_routes([np.asarray(rollout_routed_experts[i]) for i in sample_indices],
                                                      num_experts, moe_layers=moe_layers, layer_axis="all")
            try:
                p = plan_rows(lengths, dp_slots=dp_size, counts=counts, moe_layers=moe_layers,
                              ep_ranks=ep_ranks or 1, previous=chained, deadline=deadline, **step_rules[step],
                              **settings)
            except ValueError as e:
                if dynamic and str(e).startswith("no rectangular layout exists: "):
                    raise stack_error(AssertionError(
                        f"dynamic path: step {step}'s {len(sample_indices)} samples cannot fill a multiple of "
                        f"dp_size * mb_group ({align_to}) micro-batches: {e}")) from e
                raise
            chained = p
            plans.append(p)
        return plans

    def fallback():
        if plan_dir:
            for step in range(num_steps):
                stale = os.path.join(plan_dir, f"step_{step}.json")
                if os.path.exists(stale):
                    os.remove(stale)
        if original_build_dp_schedule is not None:
            return original_build_dp_schedule(args, train_parallel_config, total_lengths,
                                              global_batch_size=global_batch_size, rollout_indices=rollout_indices)
        cap = int(args.max_tokens_per_gpu) * cp_size if dynamic else None
        return (*_plain_schedule(dynamic, cap, None if dynamic else c, dp_size, align_to, steps),
                [global_batch_size] * num_steps)

    planned, plans = plan_or_fallback(plan, fallback, logger=log, replaced="slime build_dp_schedule",
                                      fallback_name="slime's own build_dp_schedule"
                                      if original_build_dp_schedule is not None else "the adapter's plain schedule",
                                      time_limit_s=time_limit_s, strict=strict)
    if not planned:
        return plans

    partitions = [[] for _ in range(dp_size)]
    micro_batch_indices = [[] for _ in range(dp_size)]
    num_microbatches = []
    global_batch_sizes = []
    for step, p in enumerate(plans):
        sample_indices = steps[step][0]
        last_plans.append(p)
        if plan_dir:
            os.makedirs(plan_dir, exist_ok=True)
            p.save(os.path.join(plan_dir, f"step_{step}.json"))
        cells = p.micro_batches()
        for r in range(dp_size):
            for cell in cells[r]:
                start = len(partitions[r])
                partitions[r].extend(sample_indices[i] for i in cell)
                micro_batch_indices[r].append(list(range(start, start + len(cell))))
        num_microbatches.append(p.row_count)
        global_batch_sizes.append(global_batch_size)
    return partitions, micro_batch_indices, num_microbatches, global_batch_sizes


def install(*modules):
    """Replaces ``build_dp_schedule`` in each of `modules` (``slime.utils.dp_schedule`` and modules
    that imported the name) with :func:`build_dp_schedule`, keeping the first module's function as
    :data:`original_build_dp_schedule`, the fallback's answer. TypeError without a module."""
    global original_build_dp_schedule
    if not modules:
        raise TypeError("install needs the module(s) whose build_dp_schedule to replace")
    if modules[0].build_dp_schedule is not build_dp_schedule:
        original_build_dp_schedule = modules[0].build_dp_schedule
    for module in modules:
        module.build_dp_schedule = build_dp_schedule


def _torch_model(model) -> bool:
    chunks = model if isinstance(model, (list, tuple)) else [model]
    return bool(chunks) and all(callable(getattr(c, "named_parameters", None)) for c in chunks)


def _torch_optimizer(optimizer):
    """What routepack.torch takes of the optimizer Megatron hands the hook: a mixed-precision one that
    pairs the model's parameters with fp32 main copies (``float16_groups``), a MegatronOptimizer
    (Megatron's ChainedOptimizer and DistributedOptimizer included) or a torch.optim optimizer
    (``state`` and ``param_groups``) as it is, else its ``.optimizer``; None for None.
    routepack.torch refuses one that holds none of the model's expert parameters."""
    if optimizer is None or hasattr(optimizer, "float16_groups") or (
            hasattr(optimizer, "state") and hasattr(optimizer, "param_groups")):
        return optimizer
    inner = getattr(optimizer, "optimizer", None)
    return inner if inner is not None and hasattr(inner, "param_groups") else optimizer


def _ep_group(args):
    """The EP process group of the job (Megatron's ``parallel_state``), None on one EP rank."""
    if int(getattr(args, "expert_model_parallel_size", 1) or 1) == 1:
        return None
    from megatron.core import parallel_state  # the job's own Megatron-Core

    return parallel_state.get_expert_model_parallel_group()


def before_train_step_hook(args, rollout_id, step_id, model, optimizer, opt_param_scheduler) -> None:
    """A ``--custom-megatron-before-train-step-hook-path routepack.adapters.slime.before_train_step_hook``
    hook (slime 624b824a ``slime/backends/megatron_utils/model.py`` calls it as
    ``hook(args, rollout_id, step_id, model, optimizer, opt_param_scheduler)``).

    Takes step ``step_id``'s plan (this process's last build_dp_schedule, else
    ``<args.routepack_plan_dir>/step_<step_id>.json``; with neither, as after a schedule that fell
    back to slime's own, one warning and nothing changes, or ValueError with
    ``args.routepack_strict``) and applies it before the step:
    :func:`routepack.torch.apply_placement` on the model chunks (``decoder.layers.{l}.mlp.experts``:
    SequentialMLP or GroupedMLP), with ``optimizer`` (Adam moments and fp32 main copies move with
    the experts: Megatron's ChainedOptimizer of Float16OptimizerWithFloat16Params or
    DistributedOptimizer parts) and Megatron's EP process group (``expert_model_parallel_size`` > 1); the router keeps
    logical order and gets the logical -> physical map on its output. The result is kept in
    ``last_apply``; the rows of ``physical_to_logical`` per absolute MoE layer id of ``args``
    (:func:`moe_layers_of`) in ``current_physical_to_logical``, and the moved experts since the previous
    plan in ``last_moves``. A plan made without routes places nothing and applies nothing; so does
    ``args.routepack_apply = False`` (the maps are still handed out). Raises routepack.torch's
    ValueError for a model or optimizer the plan cannot be applied to (another expert count or MoE
    layers, an optimizer holding none of the expert parameters). With Megatron's distributed
    optimizer (slime's default ``--use-distributed-optimizer``) the fp32 main copies and moments,
    sharded over the expert-data-parallel ranks, are made whole per moved layer and sharded again
    (:mod:`routepack.torch.sharded`). A pipeline stage applies the plan's rows of the MoE layers its chunks hold (known by
    their absolute ``layer_number``).
    """
    global _applied_plan, last_apply
    if step_id < len(last_plans):
        p = last_plans[step_id]
    else:
        plan_dir = getattr(args, "routepack_plan_dir", None)
        path = os.path.join(plan_dir, f"step_{step_id}.json") if plan_dir else None
        if path is None or not os.path.exists(path):
            if getattr(args, "routepack_strict", False):
                if not plan_dir:
                    raise ValueError(f"no RoutePack plan for step {step_id}: set args.routepack_plan_dir")
                raise ValueError(f"no RoutePack plan for step {step_id}: {path} does not exist")
            log.warning("no RoutePack plan for step %d (build_dp_schedule answered with slime's own schedule, or "
                        "args.routepack_plan_dir is unset): the model keeps its placement", step_id)
            last_moves.clear()
            last_apply = None
            return
        p = routepack.load_plan(path)
    p2l = p.physical_to_logical
    num_experts = getattr(args, "num_experts", None)
    moe = set(moe_layers_of(args)) if num_experts else set()
    # A plan without routes (no rollout_routed_experts: one placeholder expert) places nothing.
    rows = {layer: p2l[l] for l, layer in enumerate(p.moe_layers) if layer in moe and p.num_experts == num_experts}
    current_physical_to_logical.clear()
    current_physical_to_logical.update(rows)
    last_moves.clear()
    if _applied_plan is not None and (list(_applied_plan.moe_layers), _applied_plan.num_experts,
                                      _applied_plan.placement.ep_ranks) == (list(p.moe_layers), p.num_experts,
                                                                            p.placement.ep_ranks):
        last_moves.extend(p.placement.moves(_applied_plan))
    _applied_plan = p
    last_apply = None
    if rows and getattr(args, "routepack_apply", True) and _torch_model(model):
        from routepack.torch import apply_placement

        last_apply = apply_placement(model, p, optimizer=_torch_optimizer(optimizer), group=_ep_group(args))
