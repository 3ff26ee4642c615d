"""Shared pieces of the routepack.torch tests: real plans from the DeepSeek-V2-Lite trace, and a
model's state read back in logical expert order (independently of routepack.torch's own code)."""

from __future__ import annotations

import os
import re

import numpy as np
import torch

import routepack
from torch_moe import FF, H

MOE_LAYERS = [1, 2, 3]
EXPERTS = 64
#: Parameters of one expert of the SwiGLU test experts (3 x H x FF), and the bytes of one moved
#: expert of a per-expert layout in float32 with Adam: data, grad, exp_avg, exp_avg_sq (4 x 4 bytes
#: per parameter) plus one float32 ``step`` per expert tensor (3 x 4 bytes).
EXPERT_PARAMETERS = 3 * H * FF
EXPERT_BYTES = EXPERT_PARAMETERS * 16 + 3 * 4


def trace_windows(shared: str, tmp, windows: int = 5, size: int = 32):
    """The first windows x size prompts of the DeepSeek-V2-Lite trace (26 MoE layers, 64 experts,
    top-6) read with routepack.read_trace; per window (lengths, counts of MoE layers 1-3)."""
    folder = tmp / "trace"
    folder.mkdir()
    src = os.path.join(shared, "traces", "deepseek-v2-lite")
    for i in range(1, windows * size + 1):
        os.symlink(os.path.join(src, f"prompt_{i}_data.csv"), folder / f"prompt_{i}_data.csv")
    w = routepack.read_trace(str(folder), model="deepseek-v2-lite", routes=False)
    assert list(w.moe_layers[:3]) == MOE_LAYERS and w.counts.shape[2] == EXPERTS and w.top_k == 6
    return [(w.lengths[k * size:(k + 1) * size], w.counts[k * size:(k + 1) * size, :3]) for k in range(windows)]


def topology(ep_ranks: int, cap: int) -> routepack.Topology:
    """P EP ranks, 2 DP slots, and a migration section that describes the test model's experts
    (parameters per expert, and bytes per parameter of the moved state at its real dtypes)."""
    return routepack.Topology(ep_ranks, 2, None, cap, migration={
        "expert_parameters": EXPERT_PARAMETERS, "state_bytes_per_param": EXPERT_BYTES / EXPERT_PARAMETERS,
        "seconds_per_U": 1.0})


def plan_chain(windows, ep_ranks: int, max_moves: int):
    """One plan per window: the first from the checkpoint's order (no previous), each later one from
    the previous plan within max_moves moved experts."""
    cap = int(max(int(l.max()) for l, _ in windows)) * 2
    topo = topology(ep_ranks, cap)
    plans, prev = [], None
    for lengths, counts in windows:
        p = routepack.plan(lengths, counts, topo, moe_layers=MOE_LAYERS, top_k=6, previous=prev,
                           budgets=None if prev is None else {"max_moves": max_moves})
        plans.append(p)
        prev = p
    return plans


def expected_traffic(plans, rank: int, ep_ranks: int):
    """Per plan of a chain starting from the checkpoint's order, (experts EP rank ``rank`` sends,
    experts it receives) from the plans' moves."""
    out, prev = [], routepack.identity(len(MOE_LAYERS), EXPERTS, ep_ranks, moe_layers=MOE_LAYERS)
    for p in plans:
        moves = [m for layer in p.placement.moves(prev) for m in layer]
        out.append((sum(1 for m in moves if m[1] == rank), sum(1 for m in moves if m[2] == rank)))
        prev = p
    return out


LAYER = re.compile(r"layers\.(\d+)\.")
PER_EXPERT = re.compile(r"^(.*\.experts\.(?:local_experts\.)?)(\d+)(\..+)$")


def _logical(name, t, p2l, rows_routing, base_shape):
    """Tensor t of parameter `name` (or its grad / state of the same shape) in logical expert order."""
    m = LAYER.search(name)
    if not m or int(m.group(1)) not in MOE_LAYERS or t is None or tuple(t.shape) != tuple(base_shape):
        return t
    row = p2l[MOE_LAYERS.index(int(m.group(1)))]
    l2p = torch.as_tensor(np.argsort(row))
    if re.search(r"\.experts\.(gate_up_proj|gate_up_proj_bias|down_proj|down_proj_bias)$", name):
        return t[l2p]
    if re.search(r"\.experts\.weight[12]$", name):
        return t.reshape(EXPERTS, -1)[l2p].reshape(t.shape)
    if rows_routing and re.search(r"\.(gate|router)\.(weight|bias)$", name):
        return t[l2p]
    return t


def logical_state(model, optimizer, p2l, rows_routing):
    """{(canonical name, field): tensor} of every parameter, its grad and its optimizer state, with
    expert tensors named and ordered by logical expert (slot v of layer l holds p2l[l][v])."""
    out = {}
    state = optimizer.state if optimizer is not None else {}
    for name, p in model.named_parameters():
        canon = name
        m = PER_EXPERT.match(name)
        if m and LAYER.search(name) and int(LAYER.search(name).group(1)) in MOE_LAYERS:
            layer = MOE_LAYERS.index(int(LAYER.search(name).group(1)))
            canon = f"{m.group(1)}{int(p2l[layer][int(m.group(2))])}{m.group(3)}"
        out[(canon, "param")] = _logical(name, p.detach(), p2l, rows_routing, p.shape)
        out[(canon, "grad")] = _logical(name, p.grad, p2l, rows_routing, p.shape)
        for k, v in state.get(p, {}).items():
            out[(canon, k)] = _logical(name, v, p2l, rows_routing, p.shape)
    return out


def assert_same_state(a: dict, b: dict, exact: bool, rtol: float = 0.0):
    assert a.keys() == b.keys()
    for key in a:
        x, y = a[key], b[key]
        if x is None or y is None:
            assert x is None and y is None, key
        elif exact:
            assert torch.equal(x, y), key
        else:
            torch.testing.assert_close(x, y, rtol=rtol, atol=rtol, msg=lambda m: f"{key}: {m}")


def expert_state_bytes(model, optimizer, layer: int, expert: int) -> int:
    """Bytes of logical expert `expert` of MoE layer `layer` in an unmoved model: its parameters,
    their gradients and optimizer state tensors (per-expert modules), or its share of the stacked /
    flat expert tensors and of their gradients and same-shaped state."""
    total = 0
    own = re.compile(rf"layers\.{layer}\.(?:mlp|block_sparse_moe)\.experts\.(?:local_experts\.)?{expert}\.")
    shared = re.compile(rf"layers\.{layer}\.mlp\.experts\.[^.]+$")
    for name, p in model.named_parameters():
        if own.search(name):
            tensors = [p, p.grad] + list(optimizer.state.get(p, {}).values())
            total += sum(t.numel() * t.element_size() for t in tensors if t is not None)
        elif shared.search(name):
            tensors = [p, p.grad] + [v for v in optimizer.state.get(p, {}).values() if v.shape == p.shape]
            total += sum(t.numel() // EXPERTS * t.element_size() for t in tensors if t is not None)
    return total
