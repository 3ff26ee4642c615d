"""Small real MoE decoders for the routepack.torch tests, one per supported layout, with the upstream
parameter names and router semantics (no upstream code: the names and the routing arithmetic only).

Every model: token embedding [V, H] -> decoder layers (layer 0 dense with an ``mlp.gate_proj``, which
is not a router; layers 1.. MoE) each ``x + mix(x) + moe(norm(x))`` (``mix`` a causal running mean
through a linear map, so tokens interact) -> ``lm_head`` -> cross entropy. Experts are SwiGLU MLPs.

The MoE combine sums each token's top-k expert outputs in the order of the router's k axis (not in
expert-slot order), so that a model whose router output is mapped to other slots does the same
arithmetic: expert s runs on the same rows in the same order, and the k-sum is in the same order.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

H, FF, VOCAB = 16, 8, 32


class SwiGLU(nn.Module):
    """HF expert: gate_proj / up_proj / down_proj (DeepSeek, Qwen-MoE) or w1 / w3 / w2 (Mixtral)."""

    def __init__(self, names=("gate_proj", "up_proj", "down_proj"), width=FF):
        super().__init__()
        self.names = names
        setattr(self, names[0], nn.Linear(H, width, bias=False))
        setattr(self, names[1], nn.Linear(H, width, bias=False))
        setattr(self, names[2], nn.Linear(width, H, bias=False))

    def forward(self, x):
        g, u, d = (getattr(self, n) for n in self.names)
        return d(F.silu(g(x)) * u(x))


def combine(x, idx, weight, run_expert, slots):
    """sum_k weight[t, k] * expert_{idx[t, k]}(x[t]), the k-sum in k order. idx: [T, K] slot ids. The
    experts read x through a [T, K, H] view, so each (token, k) gradient lands in its own place
    whatever order the experts run in, and the backward's sum over k is in k order as well."""
    xk = x.unsqueeze(1).expand(-1, idx.shape[1], -1)
    out = x.new_zeros(idx.shape[0], idx.shape[1], x.shape[1])
    for s in range(slots):
        t, k = torch.where(idx == s)
        if t.numel():
            out[t, k] = run_expert(s, xk[t, k]) * weight[t, k].unsqueeze(-1).to(x.dtype)
    return out.sum(1)


class DeepSeekGate(nn.Module):
    """transformers 00b676f8 ``DeepseekV3TopkRouter``: sigmoid scores, + e_score_correction_bias for
    the choice, top-2 sum per group, topk_group of n_group groups, top-k inside them."""

    def __init__(self, experts, top_k, n_group, topk_group):
        super().__init__()
        self.top_k, self.n_group, self.topk_group, self.n_routed_experts = top_k, n_group, topk_group, experts
        self.weight = nn.Parameter(torch.randn(experts, H) * 0.3)
        self.register_buffer("e_score_correction_bias", torch.randn(experts) * 0.05)

    def forward(self, x):
        scores = F.linear(x, self.weight).sigmoid()
        choice = scores + self.e_score_correction_bias.to(scores.dtype).unsqueeze(0)
        E, G = self.n_routed_experts, self.n_group
        group_scores = choice.view(-1, G, E // G).topk(2, dim=-1)[0].sum(-1)
        group_idx = torch.topk(group_scores, k=self.topk_group, dim=-1, sorted=False)[1]
        mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
        mask = mask.unsqueeze(-1).expand(-1, G, E // G).reshape(-1, E)
        idx = torch.topk(choice.masked_fill(~mask.bool(), 0.0), k=self.top_k, dim=-1, sorted=False)[1]
        w = scores.gather(1, idx)
        return idx, w / (w.sum(-1, keepdim=True) + 1e-20)


class HFMoE(nn.Module):
    """``mlp`` / ``block_sparse_moe`` of transformers' DeepSeek-V3, Qwen-MoE, Mixtral and OLMoE."""

    def __init__(self, style, experts, top_k, local=None):
        super().__init__()
        self.style, self.top_k, self.slots = style, top_k, experts
        names = ("w1", "w3", "w2") if style == "mixtral" else ("gate_proj", "up_proj", "down_proj")
        self.experts = nn.ModuleList(SwiGLU(names) for _ in range(local or experts))
        if style == "deepseek":
            self.gate = DeepSeekGate(experts, top_k, n_group=8, topk_group=3)
            self.shared_experts = SwiGLU()
        else:
            self.gate = nn.Linear(H, experts, bias=False)
            if style == "qwen":
                self.shared_expert = SwiGLU()
                self.shared_expert_gate = nn.Linear(H, 1, bias=False)

    def forward(self, x):
        if self.style == "deepseek":
            idx, w = self.gate(x)
        else:
            probs = F.softmax(self.gate(x), dim=-1, dtype=x.dtype)
            w, idx = torch.topk(probs, self.top_k, dim=-1)
            w = w / w.sum(-1, keepdim=True)
        y = combine(x, idx, w, lambda s, rows: self.experts[s](rows), self.slots)
        if self.style == "deepseek":
            y = y + self.shared_experts(x)
        elif self.style == "qwen":
            y = y + torch.sigmoid(self.shared_expert_gate(x)) * self.shared_expert(x)
        return y


class StackedExperts(nn.Module):
    """transformers' gpt-oss ``GptOssExperts``: gate_up_proj [E, H, 2F], down_proj [E, F, H], biases."""

    def __init__(self, experts):
        super().__init__()
        self.gate_up_proj = nn.Parameter(torch.randn(experts, H, 2 * FF) * 0.2)
        self.gate_up_proj_bias = nn.Parameter(torch.randn(experts, 2 * FF) * 0.05)
        self.down_proj = nn.Parameter(torch.randn(experts, FF, H) * 0.2)
        self.down_proj_bias = nn.Parameter(torch.randn(experts, H) * 0.05)

    def run(self, s, rows):
        gu = rows @ self.gate_up_proj[s] + self.gate_up_proj_bias[s]
        g, u = gu[:, :FF], gu[:, FF:]
        return (F.silu(g) * u) @ self.down_proj[s] + self.down_proj_bias[s]


class StackedMoE(nn.Module):
    def __init__(self, experts, top_k, local=None):
        super().__init__()
        self.top_k, self.slots = top_k, experts
        self.router = nn.Linear(H, experts, bias=True)
        self.experts = StackedExperts(local or experts)

    def forward(self, x):
        w, idx = torch.topk(F.softmax(self.router(x), dim=-1, dtype=x.dtype), self.top_k, dim=-1)
        return combine(x, idx, w / w.sum(-1, keepdim=True), self.experts.run, self.slots)


class MegatronRouter(nn.Module):
    """Megatron-Core ``TopKRouter`` (router.py 005742ff): weight [E, H], buffer expert_bias [E];
    returns (probs [T, E], routing_map [T, E] bool), columns = experts."""

    def __init__(self, experts, top_k):
        super().__init__()
        self.topk = top_k
        self.weight = nn.Parameter(torch.randn(experts, H) * 0.3)
        self.register_buffer("expert_bias", torch.randn(experts) * 0.05)

    def forward(self, x):
        scores = F.softmax(F.linear(x, self.weight), dim=-1, dtype=x.dtype)
        idx = torch.topk(scores + self.expert_bias.to(x.dtype), self.topk, dim=-1)[1]
        routing_map = torch.zeros_like(scores, dtype=torch.bool).scatter(1, idx, True)
        return scores * routing_map, routing_map


class MegatronMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear_fc1 = nn.Linear(H, 2 * FF, bias=False)
        self.linear_fc2 = nn.Linear(FF, H, bias=False)

    def forward(self, x):
        g, u = torch.chunk(self.linear_fc1(x), 2, dim=-1)
        return self.linear_fc2(F.silu(g) * u)


class SequentialMLP(nn.Module):
    def __init__(self, experts):
        super().__init__()
        self.num_local_experts = experts
        self.local_experts = nn.ModuleList(MegatronMLP() for _ in range(experts))

    def run(self, s, rows):
        return self.local_experts[s](rows)


class GroupedMLP(nn.Module):
    """Megatron-Core GroupedMLP (experts.py 00358e5e): weight1 [H, E * 2F], weight2 [E * F, H], read
    as weight1.view(E, H, -1) and weight2.view(E, -1, H)."""

    def __init__(self, experts):
        super().__init__()
        self.num_local_experts = experts
        self.weight1 = nn.Parameter(torch.randn(H, experts * 2 * FF) * 0.2)
        self.weight2 = nn.Parameter(torch.randn(experts * FF, H) * 0.2)

    def run(self, s, rows):
        w1 = self.weight1.view(self.num_local_experts, H, -1)[s]
        w2 = self.weight2.view(self.num_local_experts, -1, H)[s]
        g, u = torch.chunk(rows @ w1, 2, dim=-1)
        return (F.silu(g) * u) @ w2


class MegatronMoE(nn.Module):
    def __init__(self, experts, top_k, grouped, local=None):
        super().__init__()
        self.top_k, self.slots = top_k, experts
        self.router = MegatronRouter(experts, top_k)
        self.experts = GroupedMLP(local or experts) if grouped else SequentialMLP(local or experts)

    def forward(self, x):
        probs, routing_map = self.router(x)
        # The dispatcher's view: each token's k chosen columns (= slots), largest probability first.
        w, idx = torch.topk(probs.masked_fill(~routing_map, -1.0), self.top_k, dim=-1)
        return combine(x, idx, w, self.experts.run, self.slots)


class Dense(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(H, FF, bias=False)
        self.up_proj = nn.Linear(H, FF, bias=False)
        self.down_proj = nn.Linear(FF, H, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, block_name, block):
        super().__init__()
        self.norm = nn.LayerNorm(H)
        self.mix = nn.Linear(H, H, bias=False)
        setattr(self, block_name, block)
        self.block_name = block_name

    def forward(self, x):
        T = x.shape[0]
        mean = torch.cumsum(x, 0) / torch.arange(1, T + 1, dtype=x.dtype).unsqueeze(1)
        x = x + self.mix(mean)
        return x + getattr(self, self.block_name)(self.norm(x))


class Decoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)


class MoEModel(nn.Module):
    """``model.layers.{l}`` (Hugging Face) or ``decoder.layers.{l}`` (Megatron-Core) of the layout.
    local: the experts this process holds of each MoE layer (an EP rank's E / P; the routers keep all
    E rows); None: all of them."""

    def __init__(self, layout, experts=64, moe_layers=3, top_k=6, seed=0, dtype=torch.float32, local=None):
        super().__init__()
        torch.manual_seed(seed)
        megatron = layout.startswith("megatron")
        block_name = "block_sparse_moe" if layout == "mixtral" else "mlp"
        layers = [Layer("mlp", Dense())]
        for _ in range(moe_layers):
            if layout in ("deepseek", "mixtral", "qwen"):
                block = HFMoE(layout, experts, top_k, local)
            elif layout == "stacked":
                block = StackedMoE(experts, top_k, local)
            else:
                block = MegatronMoE(experts, top_k, layout == "megatron-grouped", local)
            layers.append(Layer(block_name, block))
        self.embed = nn.Embedding(VOCAB, H)
        setattr(self, "decoder" if megatron else "model", Decoder(layers))
        self.lm_head = nn.Linear(H, VOCAB, bias=False)
        self.to(dtype)

    def forward(self, tokens, targets):
        x = self.embed(tokens)
        for layer in (self.decoder if hasattr(self, "decoder") else self.model).layers:
            x = layer(x)
        return F.cross_entropy(self.lm_head(x), targets)
