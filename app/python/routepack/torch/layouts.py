"""Where a live PyTorch model keeps its expert-indexed state: the one table of MoE layouts.

The table is the checkpoint rewriter's (``core/model/moe_names.h``, read through
``routepack._core._moe_layouts()``): :data:`LAYOUTS` holds its live-model rows, in its order, and
:func:`find_moe_layers` reads nothing else; no name is spelled a second time here. The rewriter
classifies the same names in checkpoints (``gpu/safetensors/checkpoint_scheme.cpp``), Megatron's
``experts.local_experts.{e}`` and GroupedMLP's flat ``weight1`` / ``weight2`` included.

Layouts (recognised from parameter names and module structure, never from class names, since models
come from remote code), with the upstream source each follows:

``hf-per-expert``
    Hugging Face per-expert modules: ``layers.{l}.mlp.experts.{e}.*`` (DeepSeek-V2/V3, Qwen-MoE,
    OLMoE) and Mixtral's ``layers.{l}.block_sparse_moe.experts.{e}.w1/w2/w3``; router
    ``mlp.gate.weight`` [E, H] (``block_sparse_moe.gate.weight``). huggingface/transformers 00b676f8,
    ``src/transformers/models/deepseek_v3/modeling_deepseek_v3.py`` (``DeepseekV3MoE``:
    ``experts = nn.ModuleList``, ``gate = DeepseekV3TopkRouter`` with ``weight`` [E, H] and the
    buffer ``e_score_correction_bias`` [E], ``n_group``, ``topk_group``), and af3efdd7,
    ``src/transformers/models/mixtral/modeling_mixtral.py`` (``block_sparse_moe = MixtralSparseMoeBlock``:
    ``gate = nn.Linear(H, E)``, ``experts.{e}.w1/w2/w3``).

    Routing: with a plain linear gate (no ``n_group`` / ``topk_group`` / ``e_score_correction_bias``:
    Mixtral, Qwen-MoE, OLMoE) the **router rows move with the experts** (``gate.weight`` rows, a
    ``gate.bias``, their gradients and optimizer state): the block indexes ``experts[i]`` with the
    router's output column i, there is no dispatcher in between to hold a map, and softmax + top-k
    over E ungrouped logits commute with a permutation of the columns, so the model after the move
    is self-contained (its state dict computes the same function, as the rewriter's physical-order
    checkpoints do; the softmax's sum is reassociated, about 1 ulp). With a DeepSeek-style gate
    (one of those three names present) the **routing stays logical and a logical -> physical index
    map is installed** on the gate's output (its integer top-k indices are mapped, ``[T, E]``
    tensors have their columns gathered): group-limited routing picks ``topk_group`` of ``n_group``
    contiguous groups of logical experts, so moving router rows across groups changes the model
    (measured on ``../shared/checkpoints/deepseek_v3``: 0.078 max logit difference, see
    ``../shared/checkpoints/README.md``; with its layer-1 router, 4 groups of 4, 2 groups per token,
    top-4, rows permuted across groups change the logical experts of 455 of 512 random tokens,
    ``tests/python/test_torch_apply.py``). The map is an integer gather: routing is bitwise the same.

``hf-stacked``
    Hugging Face stacked experts ``layers.{l}.mlp.experts.<name>`` of shape ``[E, ...]`` (gpt-oss:
    ``gate_up_proj``, ``gate_up_proj_bias``, ``down_proj``, ``down_proj_bias``), router
    ``mlp.router.weight`` [E, H] and ``mlp.router.bias`` [E]. huggingface/transformers 00d4b3d2,
    ``src/transformers/models/gpt_oss/modeling_gpt_oss.py`` (``GptOssExperts``, ``GptOssTopKRouter``:
    top-k over ``F.linear(x, weight, bias)``, returning dense ``router_scores`` [T, E] and
    ``router_indices``). Expert e is ``tensor[e]``. Routing: as hf-per-expert (gpt-oss's ungrouped
    router moves its rows and bias with the experts; a grouped one gets the index map).

``megatron-sequential``
    Megatron-Core SequentialMLP: ``decoder.layers.{l}.mlp.experts.local_experts.{e}.linear_fc1/linear_fc2``
    (e the local expert index on the EP rank), router ``mlp.router.weight`` [E, H] (fp32) and the
    buffer ``mlp.router.expert_bias`` [E]. NVIDIA/Megatron-LM 00358e5e,
    ``megatron/core/transformer/moe/experts.py`` (``SequentialMLP.local_experts``) and 005742ff,
    ``megatron/core/transformer/moe/router.py`` (``Router.weight``, ``TopKRouter.expert_bias``).

``megatron-grouped``
    Megatron-Core GroupedMLP: ``decoder.layers.{l}.mlp.experts.weight1`` [H, E_local * F'] and
    ``weight2`` [E_local * F, H]; ``forward`` reads them as ``weight1.view(E_local, H, -1)`` and
    ``weight2.view(E_local, -1, H)`` (NVIDIA/Megatron-LM 00358e5e,
    ``megatron/core/transformer/moe/experts.py``, ``GroupedMLP.forward``), so local expert j is the
    j-th contiguous chunk of numel / E_local elements of the flat storage, not a slice of an axis.

    Routing (both Megatron layouts): **kept logical, with the index map installed on the router's
    output** ``(probs [T, E], routing_map [T, E])``: its columns are gathered into physical order
    (``probs[:, physical_to_logical[l]]``), where the token dispatcher turns columns into expert slots
    (slot v on EP rank v // E_local). The router may be group-limited (``moe_router_num_groups``,
    ``moe_router_group_topk``), and a replayed route (``router_replay``, R3) holds logical ids: both
    stay right only with the router in logical order. A column gather is exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .. import _core
from .._core import InputError


def _blocks() -> List[str]:
    out: List[str] = []
    for row in _core._moe_layouts():
        out += [b for b in row["blocks"] if b not in out]
    return out


#: The MoE block of decoder layer l: ``layers.{l}.<block>``, ``<block>`` a block name of the table.
BLOCK = re.compile(r"(?:^|\.)layers\.(\d+)\.(" + "|".join(re.escape(b) for b in _blocks()) + ")$")


@dataclass(frozen=True)
class Layout:
    """One row of :data:`LAYOUTS`. experts: a pattern of the expert tensors' names relative to the
    MoE block (group ``e``: the local expert index, group ``name``: the tensor inside the expert);
    storage: ``per-expert`` (one module per expert), ``stacked`` (axis 0 = expert) or ``flat-chunks``
    (expert j = the j-th contiguous chunk of the flat storage); routers: the router module's
    names in the block; routing: ``map`` (routing logical, index map installed) or ``auto`` (router
    rows move unless the router carries one of :data:`GROUPED_ROUTER_MARKS`)."""

    name: str
    blocks: Tuple[str, ...]
    experts: str
    storage: str
    routers: Tuple[str, ...]
    routing: str


def _pattern(row: dict) -> str:
    prefix = re.escape(row["experts"])
    if row["storage"] == "per-expert":
        return prefix + r"(?P<e>\d+)\.(?P<name>.+)"
    if row["storage"] == "flat-chunks":
        return prefix + "(?P<name>" + "|".join(re.escape(t) for t in row["tensors"]) + ")"
    return prefix + r"(?P<name>[^.]+)"


#: The live-model layouts of the one table (``core/model/moe_names.h``), tried in its order (the
#: Megatron rows first: ``weight1`` / ``weight2`` would also read as stacked tensors).
LAYOUTS: Tuple[Layout, ...] = tuple(
    Layout(row["name"], tuple(row["blocks"]), _pattern(row), row["storage"], tuple(row["routers"]), row["routing"])
    for row in _core._moe_layouts() if row["live"])

#: Router tensors indexed by logical expert on axis 0 ([E, H] weight, [E] biases): the rows that move
#: with the experts when routing is not kept logical.
ROUTER_TENSORS: Tuple[str, ...] = tuple(_core._moe_names()["router_tensors"])

#: A router carrying any of these attributes routes group-limited (DeepSeek-V2/V3 ``n_group`` /
#: ``topk_group``, the correction bias of V3): its routing stays logical.
GROUPED_ROUTER_MARKS: Tuple[str, ...] = tuple(_core._moe_names()["grouped_router_marks"])


@dataclass
class MoELayer:
    """One MoE layer of a live model. layer: absolute decoder-layer id (see :func:`_layer_id`);
    numbered: the id is Megatron's absolute ``layer_number`` (a pipeline stage's layers are known by
    it), not the index in the module's name; local_experts: H, the slots
    this process holds; tensors: per-expert storage: [H] dicts name -> Parameter; stacked /
    flat-chunks: one dict name -> Parameter; router: the router module (None when not found);
    routing: ``rows`` or ``map``."""

    layer: int
    layout: Layout
    block_name: str
    block: object
    local_experts: int
    tensors: list
    router: object = None
    router_name: str = ""
    routing: str = "map"
    notes: List[str] = field(default_factory=list)
    numbered: bool = False


def _router(block, layout: Layout):
    for name in layout.routers:
        mod = getattr(block, name, None)
        if mod is not None and hasattr(mod, "named_parameters"):
            return name, mod
    return "", None


def _per_expert(block_name: str, params: list, pattern) -> Optional[list]:
    found: Dict[int, Dict[str, object]] = {}
    for name, p in params:
        m = pattern.fullmatch(name)
        if m:
            found.setdefault(int(m.group("e")), {})[m.group("name")] = p
    if not found:
        return None
    count = max(found) + 1
    kinds = set().union(*(set(d) for d in found.values()))
    for e in range(count):
        missing = sorted(kinds - set(found.get(e, {})))
        if missing:
            raise InputError(f"{block_name}: expert {e} has no {missing[0]} while others do")
    return [found[e] for e in range(count)]


def _whole(params: list, pattern) -> Optional[dict]:
    found = {m.group("name"): p for name, p in params for m in [pattern.fullmatch(name)] if m}
    return found or None


def _layer_of(block_name: str, block, params: list, layout: Layout) -> Optional[MoELayer]:
    pattern = re.compile(layout.experts)
    if layout.storage == "per-expert":
        tensors = _per_expert(block_name, params, pattern)
        if tensors is None:
            return None
        local = len(tensors)
    else:
        tensors = _whole(params, pattern)
        if tensors is None:
            return None
        if layout.storage == "stacked":
            dims = {n: (t.shape[0] if t.dim() else None) for n, t in tensors.items()}
            local = next(iter(dims.values()))
            bad = [n for n, d in dims.items() if d != local]
            if local is None or bad:
                raise InputError(f"{block_name}: stacked expert tensors disagree on the expert axis 0: "
                                 + ", ".join(f"experts.{n} {tuple(tensors[n].shape)}" for n in sorted(tensors)))
        else:
            local = getattr(getattr(block, "experts", None), "num_local_experts", None)
            if not isinstance(local, int) or local < 1:
                raise InputError(f"{block_name}.experts: GroupedMLP without num_local_experts (weight1 / weight2 "
                                 "are split into that many contiguous chunks)")
            for n, t in tensors.items():
                if t.numel() % local:
                    raise InputError(f"{block_name}.experts.{n}: {t.numel()} elements do not split into "
                                     f"{local} local experts")
        tensors = [tensors]
    router_name, router = _router(block, layout)
    routing = layout.routing
    if routing == "auto":
        grouped = router is not None and any(hasattr(router, a) for a in GROUPED_ROUTER_MARKS)
        routing = "map" if grouped or router is None else "rows"
    return MoELayer(-1, layout, block_name, block, local, tensors, router, router_name, routing)


def _layer_id(chunk, block_name: str) -> Tuple[int, bool]:
    """(the absolute decoder-layer id of a MoE block, whether it is Megatron's ``layer_number``):
    Megatron-Core's TransformerLayer carries ``layer_number`` (1-based, ``layer_number +
    get_transformer_layer_offset(...)``: the pipeline stage's offset included; NVIDIA/Megatron-LM
    dc137710, ``megatron/core/transformer/transformer_layer.py``), so a pipeline stage's
    ``decoder.layers.{i}`` (numbered from 0 on every stage) is layer ``layer_number - 1``; otherwise
    the index in the name."""
    m = BLOCK.search(block_name)
    parent = chunk.get_submodule(block_name[:m.start(2) - 1]) if hasattr(chunk, "get_submodule") else None
    number = getattr(parent, "layer_number", None)
    if isinstance(number, int) and not isinstance(number, bool) and number >= 1:
        return number - 1, True
    return int(m.group(1)), False


def find_moe_layers(model, layout: str = "auto") -> List[MoELayer]:
    """The MoE layers of ``model`` (an ``nn.Module`` or a list of model chunks), ascending layer id.

    layout: ``auto`` (each MoE block is matched against :data:`LAYOUTS` in order) or one of the
    table's names (every MoE block must match it). A module ``layers.{l}.mlp`` (or
    ``block_sparse_moe``) without expert tensors (a dense layer's MLP) is not a MoE layer.
    Raises InputError (a ValueError) naming the module for an unknown layout name, a block whose experts miss a
    tensor others have, stacked tensors whose axis 0 disagree, the same layer id twice, or no MoE
    layer at all."""
    names = [r.name for r in LAYOUTS]
    if layout != "auto" and layout not in names:
        raise InputError(f"layout {layout!r} is not one of auto, {', '.join(names)}")
    rows = LAYOUTS if layout == "auto" else tuple(r for r in LAYOUTS if r.name == layout)
    chunks = model if isinstance(model, (list, tuple)) else [model]
    layers: Dict[int, MoELayer] = {}
    for chunk in chunks:
        for block_name, block in chunk.named_modules():
            m = BLOCK.search(block_name)
            if not m or not hasattr(block, "experts"):
                continue
            params = list(block.named_parameters())
            for row in rows:
                if m.group(2) not in row.blocks:
                    continue
                found = _layer_of(block_name, block, params, row)
                if found is None:
                    continue
                found.layer, found.numbered = _layer_id(chunk, block_name)
                if found.layer in layers:
                    raise InputError(f"{block_name}: layer {found.layer} is also {layers[found.layer].block_name}")
                layers[found.layer] = found
                break
    if not layers:
        wanted = "any layout of the table" if layout == "auto" else f"layout {layout}"
        raise InputError(f"no MoE layer found: no module layers.{{l}}.mlp / block_sparse_moe holds expert "
                         f"tensors of {wanted} (routepack.torch.layouts.LAYOUTS)")
    return [layers[k] for k in sorted(layers)]
