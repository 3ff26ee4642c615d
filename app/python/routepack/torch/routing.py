"""How routed tokens reach the slots: router rows permuted with the experts, or a logical -> physical
index map on the router's output (which one per layout: :mod:`routepack.torch.layouts`)."""

from __future__ import annotations

from typing import List

import numpy as np
import torch

from .._core import InputError
from .layouts import ROUTER_TENSORS, MoELayer

_HOOK = "_routepack_map_hook"


def router_rows(layer: MoELayer, num_experts: int) -> List[tuple]:
    """The router tensors indexed by logical expert on axis 0 (weight [E, H], biases [E]), as
    (name, tensor, is_parameter)."""
    out = []
    if layer.router is None:
        return out
    for name in ROUTER_TENSORS:
        t = getattr(layer.router, name, None)
        if torch.is_tensor(t) and t.dim() >= 1 and t.shape[0] == num_experts:
            out.append((name, t, isinstance(t, torch.nn.Parameter)))
    return out


def permute_router_rows(layer: MoELayer, num_experts: int, source: np.ndarray, opt) -> None:
    """Row v of every router tensor (its gradient, its main copy and the optimizer state of the same
    shape; ``opt``: a :class:`routepack.torch.slots.Optim`) becomes row ``source[v]``: the router's
    output column v then scores the expert now in slot v."""
    index = torch.as_tensor(source, dtype=torch.long)
    for _, t, is_param in router_rows(layer, num_experts):
        tensors = [t.data]
        if is_param:
            tensors += [t.grad] + ([opt.main_of(t).data] if opt.main_of(t) is not None else [])
            tensors += [v for v in opt.state(t).values() if torch.is_tensor(v) and v.shape == t.shape]
        with torch.no_grad():
            for x in tensors:
                if x is not None:
                    x.copy_(x[index.to(x.device)])


_IDS = (torch.int64, torch.int32, torch.int16)


def _map(x, p2l: torch.Tensor, l2p: torch.Tensor, num_experts: int, k_shapes=()):
    if torch.is_tensor(x):
        if x.dtype in _IDS:
            return l2p.to(x.device)[x.long()].to(x.dtype)
        if x.dim() >= 1 and x.shape[-1] == num_experts and tuple(x.shape) not in k_shapes:
            return x.index_select(x.dim() - 1, p2l.to(x.device))
        return x
    if isinstance(x, (tuple, list)):
        # Top-k weights beside top-k ids ([T, K] both) are per choice, not per expert, even when K = E.
        ids = tuple(tuple(v.shape) for v in x if torch.is_tensor(v) and v.dtype in _IDS)
        return type(x)(_map(v, p2l, l2p, num_experts, ids) for v in x)
    return x


def _hook(module, inputs, output):
    maps = getattr(module, "_routepack_maps", None)
    if maps is None:
        return None
    p2l, l2p = maps
    return _map(output, p2l, l2p, p2l.numel())


def install_map(layer: MoELayer, physical_to_logical: np.ndarray) -> None:
    """Sets the router's logical -> physical map (one forward hook per router, installed once): its
    output's integer tensors (top-k expert ids, a replayed route) become slots ``l2p[id]``, and its
    ``[..., E]`` tensors (logits, probs, routing_map) have their columns gathered into slot order
    ``x[..., physical_to_logical]``. The identity removes the map's work (the hook returns None).
    InputError (a ValueError) when the layer has no router module to hook."""
    if layer.router is None:
        raise InputError(f"{layer.block_name}: no router module ({' or '.join(layer.layout.routers)}) to install "
                         "the logical -> physical expert map on")
    p2l = np.asarray(physical_to_logical, dtype=np.int64)
    if np.array_equal(p2l, np.arange(p2l.size)):
        layer.router._routepack_maps = None
    else:
        l2p = np.empty_like(p2l)
        l2p[p2l] = np.arange(p2l.size)
        layer.router._routepack_maps = (torch.as_tensor(p2l), torch.as_tensor(l2p))
    if not getattr(layer.router, _HOOK, None):
        setattr(layer.router, _HOOK, layer.router.register_forward_hook(_hook))
