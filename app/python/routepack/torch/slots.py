"""The state of one physical expert slot of a live model: its parameters, their gradients and every
optimizer state tensor of those parameters, read and written as a list of fields.

A field key is ``(tensor, "param")``, ``(tensor, "grad")``, ``(tensor, "main")`` (the fp32 main copy
a mixed-precision optimizer steps, see :class:`Optim`) or ``(tensor, "state", k)`` with ``tensor`` the
expert tensor's name inside the expert (``gate_proj.weight``, ``linear_fc1.weight``, ``weight1``)
and ``k`` an optimizer state key (Adam: ``exp_avg``, ``exp_avg_sq``, ``step``, and ``max_exp_avg_sq``
with amsgrad; a master copy kept in the optimizer's state moves the same way). For stacked and
flat-chunk storage a slot's field is a view into the shared tensor (expert j of ``[E_local, ...]``,
or the j-th chunk of the flat storage); a state tensor of another shape than its parameter (Adam's
scalar ``step`` of a stacked tensor) belongs to every slot and does not move.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import torch

from .._core import InputError
from . import sharded
from .layouts import MoELayer

Key = Tuple


def slot_view(layer: MoELayer, whole: torch.Tensor, j: int) -> torch.Tensor:
    """Local slot j's part of a stacked or flat-chunk tensor (a view, so writes land in place)."""
    if layer.layout.storage == "stacked":
        return whole[j]
    flat = whole.view(-1)
    chunk = flat.numel() // layer.local_experts
    return flat[j * chunk:(j + 1) * chunk]


class Optim:
    """The optimizer side of the moves. ``optimizer``: None, a ``torch.optim`` optimizer over the
    model's parameters, a mixed-precision wrapper in the shape of Megatron-Core's
    ``Float16OptimizerWithFloat16Params`` (NVIDIA/Megatron-LM 71371b4e, ``megatron/core/optimizer/optimizer.py``:
    ``float16_groups`` and ``fp32_from_float16_groups``, aligned lists pairing each bf16/fp16 model
    parameter with the fp32 main copy that its inner ``optimizer`` steps; fp32 model parameters are
    stepped directly), a ``DistributedOptimizer`` (``megatron/core/optimizer/distrib_optimizer.py``:
    fp32 main copies and state sharded over the DP ranks, see :mod:`routepack.torch.sharded`), or a
    ``ChainedOptimizer`` of these (``chained_optimizers``, as ``get_megatron_optimizer`` returns for
    a model with experts). The main copy and its state move with the model parameter."""

    def __init__(self, optimizer):
        self.main: Dict[int, torch.Tensor] = {}
        self.inner: Dict[int, object] = {}  # id(stepped tensor) -> the torch optimizer holding its state
        self.shards = sharded.Shards()
        parts = list(getattr(optimizer, "chained_optimizers", None) or ([optimizer] if optimizer is not None else []))
        for part in parts:
            if sharded.is_sharded(part):
                self.shards.add(part)
                continue
            inner = getattr(part, "optimizer", None)
            low, high = getattr(part, "float16_groups", None), getattr(part, "fp32_from_float16_groups", None)
            if low is not None and high is not None and hasattr(inner, "param_groups"):
                for g16, g32 in zip(low, high):
                    self.main.update((id(p), m) for p, m in zip(g16, g32))
                part = inner
            for g in getattr(part, "param_groups", []):
                self.inner.update((id(q), part) for q in g["params"])

    def stepped(self, p) -> torch.Tensor:
        """The tensor the optimizer steps for model parameter ``p`` (its main copy, or ``p``)."""
        return self.main.get(id(p), p)

    def optimizer_of(self, p):
        """The torch optimizer whose ``state`` holds model parameter ``p``'s state, None when none."""
        return self.inner.get(id(self.stepped(p)))

    def state(self, p) -> dict:
        """The optimizer state of model parameter ``p`` (of its main copy; of its whole main copy
        gathered from the DP ranks while a sharded one is unsharded), {} when none."""
        full = self.shards.full.get(id(p))
        if full is not None:
            return full
        if id(p) in self.shards.meta:
            return self.shards.describe(p)[1]
        o = self.optimizer_of(p)
        st = getattr(o, "state", None)
        return st.get(self.stepped(p), {}) if hasattr(st, "get") else {}

    def main_of(self, p) -> Optional[torch.Tensor]:
        """Model parameter ``p``'s fp32 main copy (whole: gathered while a sharded one is unsharded, a
        meta tensor of its shape before), None when the optimizer steps ``p`` itself."""
        whole = self.shards.mains.get(id(p))
        if whole is not None:
            return whole
        if id(p) in self.shards.meta:
            return self.shards.describe(p)[0]
        return self.main.get(id(p))

    def owns(self, p) -> bool:
        return id(self.stepped(p)) in self.inner or id(p) in self.shards.params


def fields(layer: MoELayer, j: int, opt: Optim) -> List[Tuple[Key, Optional[torch.Tensor]]]:
    """Local slot j's fields in a fixed order: per expert tensor (sorted by name) its data, its
    gradient (None when absent; per-expert storage only lists it then), its main copy (when the
    optimizer keeps one) and its optimizer state
    tensors (sorted by key; none for a parameter the optimizer has not stepped yet: Adam creates
    state at a parameter's first gradient, so an expert no token reached has none). InputError (a ValueError) for
    optimizer state that is not a tensor."""
    out: List[Tuple[Key, Optional[torch.Tensor]]] = []
    per_expert = layer.layout.storage == "per-expert"
    named = layer.tensors[j] if per_expert else layer.tensors[0]
    for name in sorted(named):
        p = named[name]
        out.append(((name, "param"), p.data if per_expert else slot_view(layer, p.data, j)))
        if per_expert:
            out.append(((name, "grad"), p.grad))
        elif p.grad is not None:
            out.append(((name, "grad"), slot_view(layer, p.grad, j)))
        main = opt.main_of(p)
        if main is not None:
            out.append(((name, "main"), main.data if per_expert else slot_view(layer, main.data, j)))
        state = opt.state(p)
        for k in sorted(state, key=str):
            v = state[k]
            if not torch.is_tensor(v):
                raise InputError(f"{layer.block_name}: optimizer state {k!r} of experts.{name} is a "
                                 f"{type(v).__name__}, not a tensor: it cannot move with the expert")
            if per_expert:
                out.append(((name, "state", k), v))
            elif v.shape == p.shape:
                out.append(((name, "state", k), slot_view(layer, v, j)))
    return out


def signature(layer: MoELayer, j: int, opt: Optim) -> tuple:
    """What slot j holds, as plain values (sent between ranks before anything moves): per field its
    key, dtype name, shape and whether it is present; then per expert tensor a ``(name, "owned")``
    entry whose flag says whether the optimizer holds that parameter (no bytes)."""
    named = layer.tensors[j] if layer.layout.storage == "per-expert" else layer.tensors[0]
    return tuple((key, str(t.dtype) if t is not None else "", tuple(t.shape) if t is not None else (),
                  t is not None) for key, t in fields(layer, j, opt)) + tuple(
        ((name, "owned"), "", (), opt.owns(named[name])) for name in sorted(named))


def nbytes(sig: tuple) -> int:
    """Bytes of the present fields of a slot signature."""
    total = 0
    for key, dtype, shape, present in sig:
        if present and key[1] != "owned":
            n = 1
            for d in shape:
                n *= d
            total += n * torch.empty((), dtype=getattr(torch, dtype.split(".")[-1])).element_size()
    return total


def snapshot(layer: MoELayer, j: int, opt: Optim) -> Dict[Key, Optional[torch.Tensor]]:
    """Copies of slot j's fields (the source of a local permutation)."""
    return {key: (t.detach().clone() if t is not None else None) for key, t in fields(layer, j, opt)}


def write(layer: MoELayer, j: int, opt: Optim, values: Dict[Key, Optional[torch.Tensor]]) -> None:
    """Makes local slot j hold ``values`` (a snapshot or unpacked received fields) in place: data and
    state tensors are copied into (so the optimizer keeps its parameter objects); a per-expert
    gradient is copied, created or set to None as the source's, and a per-expert parameter's
    optimizer state is created or dropped as the source has it or not."""
    per_expert = layer.layout.storage == "per-expert"
    current = dict(fields(layer, j, opt))
    if per_expert:
        for name, p in layer.tensors[j].items():
            inner = opt.optimizer_of(p)
            if inner is None or opt.shards.holds(p):
                continue
            keys = {key[2] for key in values if key[0] == name and key[1] == "state"}
            if not keys:
                inner.state.pop(opt.stepped(p), None)
            elif not opt.state(p):
                inner.state[opt.stepped(p)] = {k: values[(name, "state", k)].detach().clone()
                                               for k in sorted(keys, key=str)}
                current.update({(name, "state", k): v for k, v in opt.state(p).items()})
    for key, src in values.items():
        if per_expert and key[1] == "grad":
            p = layer.tensors[j][key[0]]
            if src is None:
                p.grad = None
            elif p.grad is None:
                p.grad = src.detach().clone().to(p.device)
            else:
                p.grad.copy_(src)
            continue
        dst = current.get(key)
        if dst is None or src is None:
            raise InputError(f"{layer.block_name}: slot {j} has no field {key} to receive")
        with torch.no_grad():
            dst.copy_(src)


def pack(sigs_and_fields: List[Dict[Key, Optional[torch.Tensor]]]) -> torch.Tensor:
    """The present fields of several slots as one uint8 buffer (slot by slot, field order kept)."""
    parts = [t.detach().contiguous().reshape(-1).view(torch.uint8)
             for values in sigs_and_fields for t in values.values() if t is not None]
    return torch.cat(parts) if parts else torch.empty(0, dtype=torch.uint8)


def unpack(buf: torch.Tensor, sig: tuple, offset: int) -> Tuple[Dict[Key, Optional[torch.Tensor]], int]:
    """Fields of one slot of signature ``sig`` read from ``buf`` at byte ``offset``; returns them and
    the offset after them."""
    values: Dict[Key, Optional[torch.Tensor]] = {}
    for key, dtype, shape, present in sig:
        if key[1] == "owned":
            continue
        if not present:
            values[key] = None
            continue
        dt = getattr(torch, dtype.split(".")[-1])
        n = 1
        for d in shape:
            n *= d
        size = n * torch.empty((), dtype=dt).element_size()
        values[key] = buf[offset:offset + size].clone().view(dt).reshape(shape)
        offset += size
    return values, offset
