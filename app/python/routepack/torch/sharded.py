"""Optimizer state sharded over data-parallel ranks, made whole for the MoE layer being moved and
sharded again after it.

Megatron-Core's ``DistributedOptimizer`` (NVIDIA/Megatron-LM d98e8a64,
``megatron/core/optimizer/distrib_optimizer.py``) lays each model parameter into a contiguous
grad/param buffer that is cut into equal DP regions; DP rank d steps only the elements of its region.
For a model parameter ``p`` it keeps ``model_param_gbuf_map[p] = (gbuf_index, dtype, bucket_index)``,
``gbuf_ranges[gbuf_index][dtype][bucket_index]["param_map"][p]["param"]``: the ``Range`` (``start``,
``end``, elements of ``p.view(-1)``) this rank owns (absent when it owns none), and
``model_param_group_index_map[p] = (group, order)``: the 1-D shard its inner ``optimizer`` steps,
``optimizer.param_groups[group]["params"][order]`` (an fp32 main copy of a bf16/fp16 parameter's
range, or a view of an fp32 parameter's range), whose state (Adam ``exp_avg``, ``exp_avg_sq``) has the
shard's shape. ``data_parallel_group`` is the DP group of the shards (the expert-data-parallel group
for the expert parameters' optimizer).

An expert that moves to another EP rank needs its whole main copy and state there, but on each DP
rank only a range of them exists, and the destination slot's ranges are not the source slot's. So a
layer whose slots change is unsharded first: every DP rank of the group gathers the layer's expert
tensors' shards (one ``all_gather`` of packed uint8 buffers) into whole tensors, the move works on
those as on a plain optimizer's state, and each rank then copies its own ranges back into its
shards. Extra memory is one layer's expert main copies and state; the DP traffic per rank is the
layer's shards of the other DP ranks. Adam's scalar ``step`` (not shaped like the shard) stays: the
distributed optimizer steps every shard every step, so it is the same for all. The model's
``main_grad`` buffer does not move: Megatron zeroes it at the start of every step.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import torch

_DTYPES = {str(t): t for t in (torch.float32, torch.float64, torch.float16, torch.bfloat16)}


def where(group) -> Tuple[int, int]:
    """(rank, world size) of this process in ``group``; (0, 1) for None."""
    if group is None:
        return 0, 1
    import torch.distributed as dist

    return dist.get_rank(group), dist.get_world_size(group)


def is_sharded(part) -> bool:
    """Whether optimizer ``part`` has the shape of Megatron-Core's DistributedOptimizer."""
    return all(hasattr(part, a) for a in ("gbuf_ranges", "model_param_gbuf_map", "model_param_group_index_map",
                                          "optimizer"))


class Shard:
    """Model parameter ``param``'s piece on this DP rank: elements ``start .. end`` of its flat
    storage, stepped as the 1-D tensor ``stepped`` (None when the rank owns none) by ``inner``; ``part``:
    the index of its optimizer among the sharded ones."""

    def __init__(self, part: int, inner, start: int, end: int, stepped: Optional[torch.Tensor]):
        self.part, self.inner, self.start, self.end, self.stepped = part, inner, start, end, stepped

    def state(self) -> Dict[str, torch.Tensor]:
        """The shard's state tensors of its own shape (Adam's moments; not its scalar ``step``)."""
        if self.stepped is None:
            return {}
        st = self.inner.state.get(self.stepped, {})
        return {str(k): v for k, v in st.items() if torch.is_tensor(v) and v.shape == self.stepped.shape}


class Shards:
    """The sharded parts of an optimizer and, per model parameter they hold, its :class:`Shard`.
    ``meta[id(p)]``: per DP rank of its group ``(start, end, main dtype or "", {key: dtype})``,
    agreed by :meth:`agree`; ``mains`` / ``full``: the whole main copy and state of a parameter while its
    layer is unsharded."""

    def __init__(self):
        self.parts: List[Tuple[object, object]] = []  # (optimizer, its DP group)
        self.params: Dict[int, Shard] = {}
        self.meta: Dict[int, list] = {}
        self.mains: Dict[int, torch.Tensor] = {}
        self.full: Dict[int, Dict[str, torch.Tensor]] = {}

    def add(self, part) -> None:
        index = len(self.parts)
        self.parts.append((part, getattr(part, "data_parallel_group", None)))
        inner = part.optimizer
        for p, (gi, dt, bi) in part.model_param_gbuf_map.items():
            rng = part.gbuf_ranges[gi][dt][bi]["param_map"].get(p)
            stepped = None
            if rng is not None and p in part.model_param_group_index_map:
                g, o = part.model_param_group_index_map[p]
                stepped = inner.param_groups[g]["params"][o]
            r = rng["param"] if rng is not None else None
            self.params[id(p)] = Shard(index, inner, r.start if r else 0, r.end if r else 0, stepped)

    def holds(self, p) -> bool:
        return id(p) in self.params

    def _local(self, params: list) -> list:
        out = []
        for p in params:
            s = self.params.get(id(p))
            if s is None:
                out.append(None)
                continue
            main = "" if s.stepped is None or s.stepped.dtype == p.dtype else str(s.stepped.dtype)
            out.append((s.part, s.start, s.end, main, {k: str(v.dtype) for k, v in s.state().items()}))
        return out

    def agree(self, error: Optional[str], params: list, gather) -> Optional[str]:
        """Exchanges every rank's shards of ``params`` (the model's expert tensors, in a fixed order)
        over each sharded part's DP group (``gather(obj, group, world)`` returns every rank's obj), and the
        errors found so far: returns the first error of any DP peer, or why the shards cannot be made
        whole (ranges that do not cover a parameter, a state key some ranks lack), or None. Every rank
        calls it, with or without an error, and makes every part's exchange carrying the first error
        it knows, so that no rank waits on another and an error reaches every group it touches."""
        if not self.parts:
            return error
        mine = self._local(params) if error is None else None
        first = error
        for index, (_, group) in enumerate(self.parts):
            peers = gather((first, mine), group, where(group)[1])
            bad = [(r, e) for r, (e, _) in enumerate(peers) if e]
            if bad and first is None:
                first = bad[0][1] if len(peers) == 1 else f"DP rank {bad[0][0]}: {bad[0][1]}"
            if first is None:
                for i, p in enumerate(params):
                    if mine[i] is not None and mine[i][0] == index:
                        self.meta[id(p)] = [m[i][1:] for _, m in peers]
        if first is not None:
            return first
        for p in params:
            why = self._covers(p)
            if why:
                return why
        return None

    def _covers(self, p) -> Optional[str]:
        ranks = self.meta.get(id(p))
        if ranks is None:
            return None
        spans = sorted((s, e, r) for r, (s, e, _, _) in enumerate(ranks) if e > s)
        at = 0
        for s, e, r in spans:
            if s != at:
                return (f"a sharded optimizer's DP ranks hold elements {at}..{s - 1} of no shard of an expert tensor "
                        f"of shape {list(p.shape)} (DP rank {r} starts at {s}): its state cannot be made whole")
            at = e
        if at != p.numel():
            return (f"a sharded optimizer's DP ranks hold elements 0..{at - 1} of an expert tensor of {p.numel()} "
                    "elements: its state cannot be made whole")
        keys = {tuple(sorted(k.items())) for s, e, _, k in ranks if e > s}
        if len(keys) > 1:
            a, b = sorted(keys)[:2]
            return (f"the DP ranks' shards of an expert tensor hold different optimizer state ({[k for k, _ in a]} "
                    f"and {[k for k, _ in b]}): step every shard before applying")
        return None

    def describe(self, p) -> Tuple[Optional[torch.Tensor], Dict[str, torch.Tensor]]:
        """The whole main copy (None when the parameter is stepped in place) and state of ``p`` as
        meta tensors of its shape: what a slot signature lists before anything is gathered."""
        ranks = self.meta[id(p)]
        held = [m for m in ranks if m[1] > m[0]]
        main = next((m[2] for m in held if m[2]), "")
        keys = held[0][3] if held else {}
        meta = torch.device("meta")
        return ((torch.empty(p.shape, dtype=_DTYPES[main], device=meta) if main else None),
                {k: torch.empty(p.shape, dtype=_DTYPES[d], device=meta) for k, d in sorted(keys.items())})

    def unshard(self, params: list) -> int:
        """Makes the whole main copies and state of the sharded ``params`` (one layer's expert tensors)
        from every DP rank's shards; returns the bytes this rank received."""
        todo = [p for p in params if id(p) in self.meta]
        received = 0
        for index in sorted({self.params[id(p)].part for p in todo}):
            group = self.parts[index][1]
            rank, world = where(group)
            mine = [p for p in todo if self.params[id(p)].part == index]
            wholes = {id(p): self._blank(p) for p in mine}
            pieces = []
            for p in mine:
                s = self.params[id(p)]
                if s.end > s.start:
                    own = ([s.stepped] if "main" in wholes[id(p)] else []) + [s.state()[k] for k in
                                                                            sorted(wholes[id(p)]) if k != "main"]
                    pieces += [t.detach().reshape(-1) for t in own]
            sizes = [sum(self._bytes(p, r) for p in mine) for r in range(world)]
            device = mine[0].device
            buf = (torch.cat([t.contiguous().view(torch.uint8) for t in pieces]) if pieces
                   else torch.empty(0, dtype=torch.uint8, device=device))
            if world > 1:
                import torch.distributed as dist

                padded = torch.zeros(max(sizes), dtype=torch.uint8, device=buf.device)
                padded[:buf.numel()] = buf
                outs = [torch.empty_like(padded) for _ in range(world)]
                dist.all_gather(outs, padded, group=group)
                received += sum(sizes) - sizes[rank]
            else:
                outs = [buf]
            for r in range(world):
                at = 0
                for p in mine:
                    s, e = self.meta[id(p)][r][:2]
                    for key in self._order(wholes[id(p)]):
                        t = wholes[id(p)][key]
                        n = (e - s) * t.element_size()
                        t[s:e] = outs[r][at:at + n].clone().view(t.dtype)
                        at += n
            for p in mine:
                whole = wholes[id(p)]
                if "main" in whole:
                    self.mains[id(p)] = whole.pop("main").view(p.shape)
                self.full[id(p)] = {k: v.view(p.shape) for k, v in whole.items()}
        return received

    @staticmethod
    def _order(whole: dict) -> list:
        return (["main"] if "main" in whole else []) + sorted(k for k in whole if k != "main")

    def _blank(self, p) -> Dict[str, torch.Tensor]:
        main, state = self.describe(p)
        out = {k: torch.empty(p.numel(), dtype=v.dtype, device=p.device) for k, v in state.items()}
        if main is not None:
            out["main"] = torch.empty(p.numel(), dtype=main.dtype, device=p.device)
        return out

    def _bytes(self, p, rank: int) -> int:
        s, e, main, keys = self.meta[id(p)][rank]
        per = sum(torch.empty((), dtype=_DTYPES[d]).element_size() for d in keys.values())
        return (e - s) * (per + (torch.empty((), dtype=_DTYPES[main]).element_size() if main else 0))

    def reshard(self, params: list) -> None:
        """Copies this rank's ranges of the whole main copies and state back into its shards and
        drops the whole tensors."""
        for p in params:
            full = self.full.pop(id(p), None)
            main = self.mains.pop(id(p), None)
            s = self.params.get(id(p))
            if full is None or s is None or s.end <= s.start:
                continue
            with torch.no_grad():
                if main is not None:
                    s.stepped.copy_(main.reshape(-1)[s.start:s.end])
                for k, v in s.state().items():
                    v.copy_(full[k].reshape(-1)[s.start:s.end])
