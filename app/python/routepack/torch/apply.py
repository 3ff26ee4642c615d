"""apply_placement: a live model's experts, their gradients and optimizer state moved to a plan's slots."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import torch

from .._core import InputError
from . import slots
from .layouts import MoELayer, find_moe_layers
from .routing import install_map, permute_router_rows

_RECORD = "_routepack_placement"


@dataclass
class ApplyResult:
    """What :func:`apply_placement` did on this process.

    rank, ep_ranks: this process's EP rank and the EP size (0 and the plan's P in one process).
    experts_moved: experts whose EP rank changed, over all MoE layers (``Placement.moves``, the plan's
    definition of a move); layer_moves: the same per MoE layer. experts_sent / experts_received: the
    moved experts this rank sent / received. bytes_sent / bytes_received: bytes this rank put on / took
    off the wire (0 in one process). moved_bytes: the state bytes of every moved expert (parameters,
    gradients, optimizer state, at their real dtypes), over all ranks: the figure to compare with the
    plan's ``migration["bytes"]``. slots_rewritten: local slots written (received experts and local
    permutations); bytes_copied: bytes of the local permutations. routing: per MoE layer id, ``rows``
    or ``map`` (see :mod:`routepack.torch.layouts`); layouts: per MoE layer id, the layout's name."""

    rank: int
    ep_ranks: int
    experts_moved: int = 0
    layer_moves: List[int] = field(default_factory=list)
    experts_sent: int = 0
    experts_received: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    moved_bytes: int = 0
    slots_rewritten: int = 0
    bytes_copied: int = 0
    bytes_gathered: int = 0
    routing: Dict[int, str] = field(default_factory=dict)
    layouts: Dict[int, str] = field(default_factory=dict)


def _is_perm(row: np.ndarray) -> bool:
    return bool(np.array_equal(np.sort(row), np.arange(row.size)))


def _rows(p, what: str, layers: Optional[List[int]] = None, experts: Optional[int] = None):
    """(moe_layers, physical_to_logical int64 [L, E], ep_ranks or None) of a Plan, a Placement or (for
    ``previous``) an [L, E] logical -> slot array. InputError (a ValueError) naming ``what`` for a row that is not a
    permutation of 0..E-1 or an array of the wrong shape."""
    if hasattr(p, "physical_to_logical") and hasattr(p, "moe_layers"):
        ranks = p.placement.ep_ranks if hasattr(p, "placement") else getattr(p, "ep_ranks", None)
        # A writeable copy: the plan's array is read-only, and torch.as_tensor warns on one.
        p2l = np.array(p.physical_to_logical, dtype=np.int64)
        moe = list(p.moe_layers)
    else:
        try:
            l2p = np.asarray(p)
        except Exception as e:
            raise InputError(f"{what} must be a routepack.Plan, a routepack.Placement or an [L, E] logical -> slot "
                             f"array (got {type(p).__name__})") from e
        if l2p.dtype.kind not in "iu" or l2p.ndim != 2 or (layers is not None and l2p.shape != (len(layers), experts)):
            raise InputError(f"{what} must be an integer [L, E] logical -> slot array of the model's "
                             f"{len(layers or [])} MoE layers x {experts} experts (got {l2p.dtype} {l2p.shape})")
        for l, row in enumerate(l2p):
            if not _is_perm(row):
                raise InputError(f"{what}: MoE layer {layers[l]}: {_not_perm(row, 'slot', 'experts')}")
        p2l = np.empty_like(l2p, dtype=np.int64)
        for l, row in enumerate(l2p):
            p2l[l, row] = np.arange(row.size)
        return list(layers), p2l, None
    for l, row in enumerate(p2l):
        if not _is_perm(row):
            raise InputError(f"{what}: MoE layer {moe[l]}: {_not_perm(row, 'expert', 'slots')}")
    return moe, p2l, ranks


def _stage(rows, layers: List[MoELayer]):
    """``rows`` (as :func:`_rows` returns them) narrowed to the MoE layers of a pipeline stage: when
    every layer of the model is known by Megatron's absolute ``layer_number`` and they are some of the
    plan's MoE layers, the plan's rows of those layers, in the model's order; else ``rows`` as they are
    (:func:`_local_checks` then compares the two layer lists)."""
    moe, p2l, ranks = rows
    ids = [x.layer for x in layers]
    if moe == ids or not all(x.numbered for x in layers) or not set(ids) < set(moe):
        return rows
    return ids, p2l[[moe.index(i) for i in ids]], ranks


def _not_perm(row: np.ndarray, value: str, holds: str) -> str:
    """Why ``row`` is not a permutation of 0..E-1 (value: what its entries are; holds: what a repeated
    entry has several of)."""
    values, counts = np.unique(row, return_counts=True)
    outside = row[(row < 0) | (row >= row.size)]
    if outside.size:
        return f"{value} {int(outside[0])} is outside 0..{row.size - 1}: the placement is not a permutation"
    twice = values[counts > 1]
    return (f"{value} {int(twice[0])} has {int(counts[counts > 1][0])} {holds}: the placement is not a "
            "permutation")


def current_placement(model) -> Optional[dict]:
    """What the last :func:`apply_placement` recorded on ``model`` (per layer, so after a failed apply
    the layers it finished): ``{"moe_layers": [...], "physical_to_logical": int64 [L, E]}``; None
    when no placement was applied (the model is in the checkpoint's logical order)."""
    chunk = model[0] if isinstance(model, (list, tuple)) else model
    rec = getattr(chunk, _RECORD, None)
    return None if rec is None else {"moe_layers": list(rec["moe_layers"]),
                                     "physical_to_logical": rec["physical_to_logical"].copy()}


def _current(model, layers: List[MoELayer], experts: int) -> np.ndarray:
    """physical_to_logical [L, E] the model runs on: the recorded one, else the identity."""
    chunk = model[0] if isinstance(model, (list, tuple)) else model
    rec = getattr(chunk, _RECORD, None)
    ids = [x.layer for x in layers]
    if rec is not None and rec["moe_layers"] == ids and rec["physical_to_logical"].shape == (len(ids), experts):
        return rec["physical_to_logical"].copy()
    return np.tile(np.arange(experts, dtype=np.int64), (len(ids), 1))


def _record(model, layers: List[MoELayer], p2l: np.ndarray) -> None:
    for chunk in (model if isinstance(model, (list, tuple)) else [model]):
        setattr(chunk, _RECORD, {"moe_layers": [x.layer for x in layers], "physical_to_logical": p2l.copy()})


def _local_checks(layers, target, current, previous, world, experts_total) -> Optional[str]:
    moe, p2l, ranks = target
    ids = [x.layer for x in layers]
    locals_ = sorted({x.local_experts for x in layers})
    if len(locals_) != 1:
        return "MoE layers hold different expert counts: " + ", ".join(f"layer {x.layer}: {x.local_experts}"
                                                                       for x in layers)
    if p2l.shape[1] != experts_total:
        where = f"{world} EP ranks x {locals_[0]} local experts hold" if world > 1 else "the model holds"
        return f"the plan places {p2l.shape[1]} experts per MoE layer; {where} {experts_total}"
    if moe != ids:
        return f"the plan's MoE layers are {moe}; the model's are {ids}"
    if world > 1 and ranks is not None and ranks != world:
        return f"the plan is on {ranks} EP ranks; the process group has {world}"
    for x in layers:
        if x.router is None:
            return (f"{x.block_name}: no router module ({' or '.join(x.layout.routers)}): routed tokens could not "
                    "follow the moved experts")
    if previous is not None and not np.array_equal(previous[1], current):
        diff = next(l for l in range(len(ids)) if not np.array_equal(previous[1][l], current[l]))
        return (f"previous placement is not the model's current one: MoE layer {ids[diff]} runs slots "
                f"{current[diff].tolist()[:8]}... (physical -> logical), previous says "
                f"{previous[1][diff].tolist()[:8]}...; pass previous=None to start from the model's current "
                "placement (the last apply_placement's, else the checkpoint's order)")
    return None


def _sharded_router(layers: List[MoELayer], opt: slots.Optim) -> Optional[str]:
    for x in layers:
        if x.routing == "rows" and any(opt.shards.holds(t) for t in x.router.parameters()):
            return (f"{x.block_name}: the router's rows would move with the experts, but a sharded (distributed) "
                    "optimizer holds the router: its state cannot follow them (use a layout whose routing keeps "
                    "logical order, or a non-distributed optimizer)")
    return None


def _partial_state(layers, sigs, current) -> Optional[str]:
    """The first MoE layer whose optimizer holds some of its experts only (its parameters in the
    optimizer's param groups for some experts, not for others), or whose experts' state keys differ
    (a state that would mean something else after the move). An expert without state because no
    token reached it yet (Adam creates state lazily) is not an error: its state moves as absent."""
    for l, layer in enumerate(layers):
        owners, keys = {}, {}
        for v, sig in enumerate(sigs[l]):
            e = int(current[l][v])
            for key, _, _, present in sig:
                if key[1] == "owned":
                    owners.setdefault(key[0], []).append((e, present))
                elif key[1] == "state":
                    keys.setdefault(key[0], {}).setdefault(e, set()).add(key[2])
        for name, marks in sorted(owners.items()):
            held = sorted(e for e, h in marks if h)
            free = sorted(e for e, h in marks if not h)
            if held and free:
                return (f"MoE layer {layer.layer}: the optimizer holds experts.{name} of experts {_few(held)} but not "
                        f"of experts {_few(free)} (optimizer state for some experts only: pass the optimizer that "
                        "holds every expert parameter of the layer)")
        if layer.layout.storage != "per-expert":
            shapes = {tuple(key for key, _, _, present in sig if present and key[1] != "owned") for sig in sigs[l]}
            if len(shapes) > 1:
                a, b = sorted(shapes)[:2]
                return (f"MoE layer {layer.layer}: its {layer.layout.storage} expert tensors hold different fields on "
                        f"different EP ranks ({sorted(set(a) ^ set(b))[:3]} on some only): give every rank the same "
                        "gradients and optimizer state (zero or drop them everywhere) before applying")
        for name, by_expert in sorted(keys.items()):
            sets = sorted({tuple(sorted(map(str, k))) for k in by_expert.values()})
            if len(sets) > 1:
                e0 = min(e for e, k in by_expert.items() if tuple(sorted(map(str, k))) == sets[0])
                e1 = min(e for e, k in by_expert.items() if tuple(sorted(map(str, k))) == sets[1])
                return (f"MoE layer {layer.layer}: optimizer state of experts.{name} differs between experts: "
                        f"expert {e0} holds {list(sets[0])}, expert {e1} holds {list(sets[1])}")
    return None


def _few(ids: List[int]) -> str:
    return str(ids[:8])[:-1] + ", ...]" if len(ids) > 8 else str(ids)


def _expert_params(layer: MoELayer) -> list:
    """The layer's expert tensors in a fixed order (per local slot, then by name)."""
    return [t[name] for t in layer.tensors for name in sorted(t)]


def _gather(obj, group, world: int) -> list:
    if world == 1:
        return [obj]
    import torch.distributed as dist

    out = [None] * world
    dist.all_gather_object(out, obj, group=group)
    return out


def _exchange(layer: MoELayer, send: list, recv: list, opt: slots.Optim, all_sigs, rank: int, group):
    """One layer's cross-rank transfer: send[d] = [(slot v on rank d, local source slot)], recv[q] =
    [(global slot v here, global source slot on rank q)]. Returns {local slot: fields} received and
    the byte counts. Nothing of the layer is written here."""
    import torch.distributed as dist

    named = layer.tensors[0]
    device = next(iter(named.values())).device  # NCCL needs the buffers on the experts' GPU
    payload = [[dict(slots.fields(layer, j, opt)) for _, j in pairs] for pairs in send]
    bufs = [slots.pack(p).to(device) for p in payload]
    in_splits = [int(b.numel()) for b in bufs]
    out_splits = [sum(slots.nbytes(all_sigs[s]) for _, s in pairs) for pairs in recv]
    inp = torch.cat(bufs)
    out = torch.empty(sum(out_splits), dtype=torch.uint8, device=device)
    dist.all_to_all_single(out, inp, out_splits, in_splits, group=group)
    dist.barrier(group=group)
    received, offset = {}, 0
    H = layer.local_experts
    for pairs in recv:
        for v, s in pairs:
            received[v - rank * H], offset = slots.unpack(out, all_sigs[s], offset)
    return received, sum(in_splits), sum(out_splits)


def _move_layer(layer: MoELayer, cur: np.ndarray, new: np.ndarray, sigs: list, opt: slots.Optim, rank: int,
                world: int, group, result: ApplyResult, plan_ranks: int) -> None:
    """Makes one MoE layer follow ``new`` (physical -> logical [E]) from ``cur``: the layer is written
    only after its transfer (and the group's barrier) succeeded, so it is never left half-moved."""
    E = cur.size
    H = layer.local_experts
    l2p_cur = np.empty_like(cur)
    l2p_cur[cur] = np.arange(E)
    source = l2p_cur[new]  # slot v receives the state now in slot source[v]
    hp = E // plan_ranks
    moved = int(np.count_nonzero(source // hp != np.arange(E) // hp))
    result.layer_moves.append(moved)
    result.experts_moved += moved
    result.moved_bytes += sum(slots.nbytes(sigs[s]) for v, s in enumerate(source) if s // hp != v // hp)
    owner = np.arange(E) // H
    mine = range(rank * H, (rank + 1) * H)
    received = {}
    params = _expert_params(layer)
    if any(source[v] != v for v in range(E) if v // H == rank or source[v] // H == rank):
        result.bytes_gathered += opt.shards.unshard(params)
    if world > 1 and np.any(source // H != owner):
        send = [[(v, int(source[v]) - rank * H) for v in range(d * H, (d + 1) * H) if source[v] // H == rank]
                if d != rank else [] for d in range(world)]
        recv = [[(v, int(source[v])) for v in mine if source[v] // H == q] if q != rank else []
                for q in range(world)]
        received, sent_b, recv_b = _exchange(layer, send, recv, opt, sigs, rank, group)
        result.bytes_sent += sent_b
        result.bytes_received += recv_b
        result.experts_sent += sum(len(s) for s in send)
        result.experts_received += sum(len(r) for r in recv)
    local = {v - rank * H: slots.snapshot(layer, int(source[v]) - rank * H, opt)
             for v in mine if source[v] != v and source[v] // H == rank}
    for j, values in sorted({**local, **received}.items()):
        slots.write(layer, j, opt, values)
        result.slots_rewritten += 1
    result.bytes_copied += sum(t.numel() * t.element_size() for vals in local.values() for t in vals.values()
                               if t is not None)
    opt.shards.reshard(params)
    if layer.routing == "rows":
        permute_router_rows(layer, E, source, opt)
    else:
        install_map(layer, new)


def apply_placement(model, plan, previous=None, *, optimizer=None, group=None, layout: str = "auto") -> ApplyResult:
    """Makes a live model's expert-indexed state follow ``plan``'s placement, from ``previous``.

    model: an ``nn.Module`` or a list of model chunks (Megatron) whose MoE layers match a layout of
    :data:`routepack.torch.layouts.LAYOUTS` (``layout``: ``auto`` or one of its names). Without
    ``group`` the model holds all E slots of each MoE layer (``experts.{v}`` / ``[E, ...]`` = physical
    slot v). With ``group`` (a ``torch.distributed`` process group of the P EP ranks; gloo on CPU, NCCL
    on GPU) rank p holds slots p*H .. p*H+H-1 (H = E/P) as its local experts 0..H-1, as Megatron's EP
    ranks do; every rank of the group calls this with the same arguments. A pipeline stage (Megatron
    model chunks whose TransformerLayers carry the absolute ``layer_number``) may hold some of the
    plan's MoE layers: it takes the plan's rows of those (every stage applies the same plan).

    plan: a ``routepack.Plan`` (or ``Placement``): its ``physical_to_logical`` int64 [L, E] is the
    target (slot v of MoE layer l holds logical expert ``physical_to_logical[l, v]``). previous: a
    ``Plan``, a ``Placement``, an [L, E] logical -> slot array, or None: the placement the model runs
    on now; None means the one the last ``apply_placement`` recorded on the model, else the identity
    (the checkpoint's logical order). optimizer: the ``torch.optim`` optimizer of the model's
    parameters (Adam's ``exp_avg``, ``exp_avg_sq`` and ``step`` move with their expert; every state
    tensor of a parameter's shape moves slot-wise for stacked and flat storage), or a mixed-precision
    wrapper whose fp32 main copies move too (Megatron-Core's ``Float16OptimizerWithFloat16Params``
    shape, see :class:`routepack.torch.slots.Optim`), a Megatron-Core ``DistributedOptimizer`` whose
    main copies and state are sharded over the (expert-)data-parallel ranks (each layer with moves
    is made whole over the DP group and sharded again: :mod:`routepack.torch.sharded`; every DP rank
    calls this too, with its own EP group), or a ``ChainedOptimizer`` of these; None moves none.

    For each MoE layer the expert parameters, their ``.grad`` (per-expert: present or None as the
    source's) and their optimizer state move to their new slot: across ranks for an expert whose EP
    rank changes (a move), as a local copy for a slot change within a rank. Then routing follows
    (router rows permuted, or the index map set: per layout, see :mod:`routepack.torch.layouts`).
    Across ranks each layer is one ``all_to_all_single`` of packed uint8 buffers followed by a
    barrier; a layer is written only after both succeed, so peak extra memory is one layer's moves
    and no layer is left half-moved. The placement is recorded on the model layer by layer.

    Returns an :class:`ApplyResult` (experts moved, bytes sent and received by this rank, the moved
    experts' bytes). Raises InputError (a ValueError) before anything moves (on every rank, naming the rank that
    found it) for: a plan of another model (expert count, MoE layers, EP size), a placement that is
    not a permutation, a previous placement that is not the model's current one, an optimizer holding
    some experts of a layer only (or none of the model's experts), a layer whose experts hold
    different optimizer state keys, or a model without a recognised MoE layer. RuntimeError when a
    rank fails during a layer's transfer (e.g. a process died): the layers before it are applied and
    recorded, that layer and the later ones keep the previous placement.
    """
    target = _rows(plan, "plan")
    opt = slots.Optim(optimizer)
    rank, world = 0, 1
    if group is not None:
        import torch.distributed as dist

        rank, world = dist.get_rank(group), dist.get_world_size(group)
    error, layers, sigs, current = None, [], [], None
    try:
        layers = find_moe_layers(model, layout)
        target = _stage(target, layers)
        experts = layers[0].local_experts * world
        current = _current(model, layers, experts)
        prev = None if previous is None else _stage(_rows(previous, "previous", [x.layer for x in layers], experts),
                                                    layers)
        error = _local_checks(layers, target, current, prev, world, experts) or _sharded_router(layers, opt)
    except ValueError as e:
        error = str(e)
    error = opt.shards.agree(error, [p for x in layers for p in _expert_params(x)], _gather)
    if error is None:
        try:
            sigs = [[slots.signature(x, j, opt) for j in range(x.local_experts)] for x in layers]
        except ValueError as e:
            error = str(e)
    gathered = _gather((error, sigs), group, world)
    errors = [(r, e) for r, (e, _) in enumerate(gathered) if e]
    if errors:
        r, e = errors[0]
        raise InputError(e if world == 1 else f"rank {r}: {e}")
    all_sigs = [[s for _, rs in gathered for s in rs[l]] for l in range(len(layers))]
    error = _partial_state(layers, all_sigs, current)
    if optimizer is not None and not any(key[1] == "owned" and held for layer_sigs in all_sigs for sig in layer_sigs
                                         for key, _, _, held in sig):
        error = (f"the optimizer ({type(optimizer).__name__}) holds none of the model's expert parameters, so their "
                 "state would not move: pass the torch.optim optimizer that steps them, or a mixed-precision one "
                 "that pairs them with its fp32 main copies (float16_groups / fp32_from_float16_groups), or a "
                 "distributed one that shards them (model_param_gbuf_map), or optimizer=None for parameters and "
                 "gradients only")
    if error:
        raise InputError(error)
    result = ApplyResult(rank=rank, ep_ranks=world if world > 1 else (target[2] or 1))
    result.routing = {x.layer: x.routing for x in layers}
    result.layouts = {x.layer: x.layout.name for x in layers}
    done = current.copy()
    for l, layer in enumerate(layers):
        try:
            _move_layer(layer, current[l], target[1][l], all_sigs[l], opt, rank, world, group, result,
                        result.ep_ranks)
        except RuntimeError as e:
            applied = [x.layer for x in layers[:l]]
            raise RuntimeError(f"apply_placement: rank {rank}: the transfer of MoE layer {layer.layer} failed "
                               f"({e}); MoE layers {applied} follow the plan, layer {layer.layer} and the later "
                               "ones keep the previous placement (recorded on the model)") from e
        done[l] = target[1][l]
        _record(model, layers, done)
    return result
