"""routepack.torch in one process: a live model trained with a new real plan applied before every
optimizer step computes what the same model computes unmoved; bad input is refused before anything
moves; micro-batches and cu_seqlens. (torch runs in the default pass only: Debian's torch is not
built for the sanitizer runtimes.)"""

import copy
import os
import re

import numpy as np
import pytest

if os.environ.get("ROUTEPACK_TORCH_TESTS") == "off":
    pytest.skip("torch tests run in the default pass only (Debian's torch under a preloaded sanitizer runtime is "
                "not expected to work)", allow_module_level=True)
torch = pytest.importorskip("torch")

import routepack  # noqa: E402
import routepack.torch as rt  # noqa: E402
from conftest import shared_dir  # noqa: E402
from torch_common import (EXPERTS, MOE_LAYERS, assert_same_state, expert_state_bytes, logical_state,  # noqa: E402
                          plan_chain, trace_windows)
from torch_moe import MoEModel, VOCAB  # noqa: E402

TOKENS = 512
PER_EXPERT_NAME = re.compile(r"^(.*layers\.(\d+)\.mlp\.experts\.local_experts\.)(\d+)(\..+)$")


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    shared = shared_dir()
    if not shared:
        pytest.skip("no shared data folder (ROUTEPACK_SHARED_DIR): the plans come from its real traces")
    return plan_chain(trace_windows(shared, tmp_path_factory.mktemp("w")), ep_ranks=4, max_moves=24)


def batch(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randint(0, VOCAB, (TOKENS,), generator=g), torch.randint(0, VOCAB, (TOKENS,), generator=g)


def routers(model):
    return [m for name, m in model.named_modules() if name.endswith((".gate", ".router"))
            and "shared" not in name]


def capture(model, out):
    for i, r in enumerate(routers(model)):
        r.register_forward_hook(lambda mod, inp, o, i=i: out.__setitem__(i, o))


def logical_router_output(o, row):
    """A router output in physical slot order back in logical order (row: physical -> logical)."""
    if isinstance(o, tuple):
        return tuple(logical_router_output(x, row) for x in o)
    if o.dtype == torch.int64:
        return torch.as_tensor(row)[o]
    if o.shape[-1] != len(row):  # top-k weights [T, K]
        return o
    return o[..., torch.as_tensor(np.argsort(row))]


# layout, top-k, dtype, bitwise. Layouts whose routing stays logical with the index map (DeepSeek's
# group-limited gate, Megatron) do the unmoved model's arithmetic: bitwise in float32. Layouts whose
# router rows move (Mixtral, Qwen-MoE, stacked) reassociate the softmax's sum over the permuted
# columns (about 1 ulp), so a top-k near tie could flip in float32: they run in float64 and compare
# to TOL (relative and absolute): the differences measured after five Adam steps are below 4e-14
# absolute.
TOL = 1e-11
def expert_bytes(layout, dtype):
    """Bytes of one moved expert of the test models: data, grad, exp_avg, exp_avg_sq per parameter at
    the model's dtype, plus Adam's float32 ``step`` per expert tensor (per-expert storage only; a
    stacked or flat tensor's step is shared and stays)."""
    size = torch.empty((), dtype=dtype).element_size()
    params, tensors = {"stacked": (416, 0), "megatron-grouped": (384, 0), "megatron-sequential": (384, 2)}.get(
        layout, (384, 3))
    return params * 4 * size + tensors * 4


CASES = [
    ("deepseek", 6, torch.float32, True),
    ("megatron-sequential", 6, torch.float32, True),
    ("megatron-grouped", 2, torch.float32, True),
    ("mixtral", 2, torch.float64, False),
    ("qwen", 4, torch.float64, False),
    ("stacked", 4, torch.float64, False),
]


@pytest.mark.parametrize("layout, top_k, dtype, exact", CASES)
def test_training_with_a_new_plan_every_step_equals_training_unmoved(plans, layout, top_k, dtype, exact):
    moved = MoEModel(layout, experts=EXPERTS, moe_layers=len(MOE_LAYERS), top_k=top_k, dtype=dtype)
    ref = copy.deepcopy(moved)
    opt_m = torch.optim.Adam(moved.parameters(), lr=1e-2)
    opt_r = torch.optim.Adam(ref.parameters(), lr=1e-2)
    out_m, out_r = {}, {}
    capture(ref, out_r)
    applied = np.tile(np.arange(EXPERTS), (len(MOE_LAYERS), 1))
    previous = routepack.identity(len(MOE_LAYERS), EXPERTS, 4, moe_layers=MOE_LAYERS)
    for step, plan in enumerate(plans):
        tokens, targets = batch(step)
        opt_m.zero_grad(set_to_none=False)
        opt_r.zero_grad(set_to_none=False)
        loss_m, loss_r = moved(tokens, targets), ref(tokens, targets)
        if exact:
            assert torch.equal(loss_m, loss_r)
        else:
            torch.testing.assert_close(loss_m, loss_r, rtol=TOL, atol=0)
        for i in out_m:
            got, want = logical_router_output(out_m[i], applied[i]), out_r[i]
            for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
                if exact or g.dtype in (torch.int64, torch.bool):
                    assert torch.equal(g, w)
                else:
                    torch.testing.assert_close(g, w, rtol=TOL, atol=TOL)
        loss_m.backward()
        loss_r.backward()
        # Between backward and step: gradients move too, and the step uses the moved ones.
        moves = plan.placement.moves(previous)
        want_bytes = sum(expert_state_bytes(ref, opt_r, MOE_LAYERS[l], e) for l, m in enumerate(moves) for e, *_ in m)
        result = rt.apply_placement(moved, plan, optimizer=opt_m)
        assert result.experts_moved == sum(map(len, moves)) and result.moved_bytes == want_bytes
        if step == 0:
            capture(moved, out_m)  # after routepack's map hook: the router's output in slot order
        else:
            mig = plan.migration
            assert result.experts_moved == mig["moves"] and result.layer_moves == mig["layer_moves"]
            assert 0 < mig["moves"] <= 24
            # A moved expert that no token has reached yet has no gradient and no Adam state: it
            # moves fewer bytes than a trained one.
            absent = mig["moves"] * expert_bytes(layout, dtype) - want_bytes
            assert 0 <= absent < mig["moves"] * expert_bytes(layout, dtype)
            if layout == "deepseek":  # the plan's migration section describes these experts
                assert mig["bytes"] == mig["moves"] * expert_bytes(layout, dtype)
                assert result.moved_bytes == mig["bytes"] - absent
        assert result.routing == {l: ("map" if exact else "rows") for l in MOE_LAYERS}
        assert result.bytes_sent == result.bytes_received == 0
        applied = np.asarray(plan.physical_to_logical)
        previous = plan
        opt_m.step()
        opt_r.step()
        assert_same_state(logical_state(moved, opt_m, applied, not exact),
                          logical_state(ref, opt_r, np.tile(np.arange(EXPERTS), (3, 1)), False), exact, TOL)
    assert not np.array_equal(applied, np.tile(np.arange(EXPERTS), (3, 1)))
    assert np.array_equal(rt.current_placement(moved)["physical_to_logical"], applied)


def snapshot(model, optimizer):
    return {k: (v.clone() if v is not None else None) for k, v in logical_state(
        model, optimizer, np.tile(np.arange(EXPERTS), (3, 1)), False).items()}


def trained(layout="deepseek", experts=EXPERTS, moe_layers=3, params=None):
    """A model after one Adam step (every routed expert has state) and its optimizer."""
    model = MoEModel(layout, experts=experts, moe_layers=moe_layers, top_k=6 if layout == "deepseek" else 2)
    opt = torch.optim.Adam(params(model) if params else model.parameters(), lr=1e-2)
    model(*batch(0)).backward()
    opt.step()
    return model, opt


def test_bad_input_is_refused_before_anything_moves(plans):
    identity = np.tile(np.arange(EXPERTS), (3, 1))
    model, opt = trained()
    before = snapshot(model, opt)
    duplicate = identity.copy()
    duplicate[1, 7] = 5  # logical -> slot: slot 5 holds experts 5 and 7
    cases = [
        (plans[0], dict(previous=duplicate), "previous: MoE layer 2: slot 5 has 2 experts: the placement is not a "
                                             "permutation"),
        (plans[0], dict(previous=identity[:, :32]), "previous must be an integer [L, E] logical -> slot array of the "
                                                    "model's 3 MoE layers x 64 experts (got int64 (3, 32))"),
        (plans[1], dict(previous=plans[0]), "previous placement is not the model's current one: MoE layer 1 runs "
                                            "slots [0, 1, 2, 3, 4, 5, 6, 7]... (physical -> logical), previous says "
                                            f"{list(plans[0].physical_to_logical[0][:8])}...; pass previous=None to "
                                            "start from the model's current placement (the last apply_placement's, "
                                            "else the checkpoint's order)"),
        (plans[0], dict(layout="megatron-grouped"), "no MoE layer found: no module layers.{l}.mlp / block_sparse_moe "
                                                    "holds expert tensors of layout megatron-grouped "
                                                    "(routepack.torch.layouts.LAYOUTS)"),
        (plans[0], dict(layout="vllm"), "layout 'vllm' is not one of auto, megatron-sequential, megatron-grouped, "
                                        "hf-per-expert, hf-stacked"),
    ]
    for plan, kwargs, message in cases:
        with pytest.raises(ValueError) as e:
            rt.apply_placement(model, plan, optimizer=opt, **kwargs)
        assert str(e.value) == message
    assert_same_state(snapshot(model, opt), before, exact=True)
    assert rt.current_placement(model) is None

    del model.model.layers[2].mlp.gate  # layer 2 has no router: refused before layer 1 moves
    with pytest.raises(ValueError, match=r"^model\.layers\.2\.mlp: no router module \(gate or router\): routed "
                                         r"tokens could not follow the moved experts$"):
        rt.apply_placement(model, plans[0], optimizer=opt)
    assert_same_state(snapshot(model, opt), {k: v for k, v in before.items() if "layers.2.mlp.gate." not in k[0]},
                      exact=True)
    assert rt.current_placement(model) is None

    small, _ = trained(experts=32)
    with pytest.raises(ValueError, match=r"^the plan places 64 experts per MoE layer; the model holds 32$"):
        rt.apply_placement(small, plans[0])
    fewer, _ = trained(moe_layers=2)
    with pytest.raises(ValueError, match=r"^the plan's MoE layers are \[1, 2, 3\]; the model's are \[1, 2\]$"):
        rt.apply_placement(fewer, plans[0])


def test_an_optimizer_holding_some_experts_only_is_refused(plans):
    skip = "model.layers.2.mlp.experts.9."
    model, opt = trained(params=lambda m: [p for n, p in m.named_parameters() if not n.startswith(skip)])
    before = snapshot(model, opt)
    with pytest.raises(ValueError) as e:
        rt.apply_placement(model, plans[0], optimizer=opt)
    assert str(e.value) == (
        "MoE layer 2: the optimizer holds experts.down_proj.weight of experts [0, 1, 2, 3, 4, 5, 6, 7, ...] but not "
        "of experts [9] (optimizer state for some experts only: pass the optimizer that holds every expert "
        "parameter of the layer)")
    assert_same_state(snapshot(model, opt), before, exact=True)
    rt.apply_placement(model, plans[0])  # without the optimizer: parameters and gradients only
    assert np.array_equal(rt.current_placement(model)["physical_to_logical"], plans[0].physical_to_logical)


def test_group_limited_routing_needs_the_map_not_moved_router_rows(plans):
    # DeepSeek-V3's gate picks topk_group of n_group contiguous groups of logical experts: moving the
    # router rows with the experts across groups changes which experts a token may reach.
    model, _ = trained()
    tokens, targets = batch(7)
    want = model(tokens, targets)
    by_rows = copy.deepcopy(model)
    rt.apply_placement(model, plans[0])
    assert torch.equal(model(tokens, targets), want)
    row = torch.as_tensor(plans[0].physical_to_logical)
    for l, layer in enumerate(by_rows.model.layers[1:]):
        moe = layer.mlp
        with torch.no_grad():
            moe.gate.weight.copy_(moe.gate.weight[row[l]])
            moe.gate.e_score_correction_bias.copy_(moe.gate.e_score_correction_bias[row[l]])
        experts = [moe.experts[int(e)] for e in row[l]]
        moe.experts = torch.nn.ModuleList(experts)
    assert abs(float(by_rows(tokens, targets)) - float(want)) > 1e-4


def test_microbatches_and_cu_seqlens(plans):
    p = plans[0]
    seen = []
    for d in range(p.dp_slots):
        mbs = rt.microbatches(p, d)
        assert mbs == p.micro_batches()[d] and len(mbs) == p.row_count and all(mbs)
        seen += [i for mb in mbs for i in mb]
        for mb in mbs:
            cu = rt.cu_seqlens(p.lengths, mb)
            assert cu.dtype == torch.int32 and cu.tolist() == [0] + list(np.cumsum([p.lengths[i] for i in mb]))
    assert sorted(seen) == list(range(len(p.lengths)))
    assert rt.cu_seqlens([3, 5, 2]).tolist() == [0, 3, 8, 10]
    assert rt.cu_seqlens([3, 5, 2], [2, 0]).tolist() == [0, 2, 5]
    with pytest.raises(ValueError, match=r"^dp_rank 2 is not a DP slot of the plan \(0\.\.1\)$"):
        rt.microbatches(p, 2)
    with pytest.raises(ValueError, match=r"^lengths hold a negative token count \(-1\)$"):
        rt.cu_seqlens([3, -1])


def test_an_optimizer_of_other_tensors_is_refused(plans):
    # A mixed-precision optimizer steps fp32 copies: its state is not the model's to move.
    model, _ = trained()
    copies = [p.detach().clone().requires_grad_() for p in model.parameters()]
    with pytest.raises(ValueError) as e:
        rt.apply_placement(model, plans[0], optimizer=torch.optim.Adam(copies))
    assert str(e.value) == (
        "the optimizer (Adam) holds none of the model's expert parameters, so their state would not move: pass the "
        "torch.optim optimizer that steps them, or a mixed-precision one that pairs them with its fp32 main copies "
        "(float16_groups / fp32_from_float16_groups), or a distributed one that shards them (model_param_gbuf_map), or "
        "optimizer=None for parameters and gradients only")
    assert rt.current_placement(model) is None


def test_slime_hook_applies_the_step_plan_to_megatron_chunks_and_adam(plans):
    from types import SimpleNamespace

    from routepack.adapters import slime

    ref, ref_opt = trained("megatron-sequential")
    model, opt = trained("megatron-sequential")
    args = SimpleNamespace(num_layers=4, moe_layer_freq=[0, 1, 1, 1], num_experts=EXPERTS, expert_model_parallel_size=1)
    slime.last_plans[:] = plans[:2]
    try:
        slime.before_train_step_hook(args, 0, 0, [model], opt, None)
        assert slime.last_apply.experts_moved == sum(map(len, plans[0].placement.moves(
            routepack.identity(3, EXPERTS, 4, moe_layers=MOE_LAYERS))))
        # Megatron hands the hook its MegatronOptimizer, which wraps the torch optimizer.
        slime.before_train_step_hook(args, 0, 1, [model], SimpleNamespace(optimizer=opt), None)
    finally:
        slime.last_plans.clear()
    assert slime.last_apply.experts_moved == plans[1].migration["moves"] > 0
    assert slime.last_apply.routing == {l: "map" for l in MOE_LAYERS}
    p2l = np.asarray(plans[1].physical_to_logical)
    assert np.array_equal(rt.current_placement([model])["physical_to_logical"], p2l)
    assert torch.equal(model(*batch(3)), ref(*batch(3)))
    assert_same_state(logical_state(model, opt, p2l, False), logical_state(ref, ref_opt, np.tile(
        np.arange(EXPERTS), (3, 1)), False), exact=True)


def test_verl_actor_applies_the_plan_its_batch_carries(plans):
    from types import SimpleNamespace

    from routepack.adapters import verl

    ref, ref_opt = trained("qwen")
    model, opt = trained("qwen")
    assert verl.apply_in_actor(SimpleNamespace(meta_info={}), model, opt) is None
    for plan in plans[:2]:
        data = SimpleNamespace(meta_info={verl.PLAN_KEY: plan.to_json(), "temperature": 1.0})
        result = verl.apply_in_actor(data, model, opt)
    assert result.experts_moved == plans[1].migration["moves"] and result.routing == {l: "rows" for l in MOE_LAYERS}
    p2l = np.asarray(plans[1].physical_to_logical)
    assert np.array_equal(rt.current_placement(model)["physical_to_logical"], p2l)
    # Router rows moved with the experts: float32 within the softmax's reassociation.
    torch.testing.assert_close(model(*batch(3)), ref(*batch(3)), rtol=1e-6, atol=0)
    assert_same_state(logical_state(model, opt, p2l, True), logical_state(ref, ref_opt, np.tile(
        np.arange(EXPERTS), (3, 1)), False), exact=True)


def read_tensors(path, names):
    """Tensors of a safetensors file (header: 8-byte length + JSON; data: raw little-endian), as float32."""
    import json

    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    dtypes = {"BF16": torch.bfloat16, "F32": torch.float32, "F16": torch.float16}
    out = {}
    for name in names:
        a, b = header[name]["data_offsets"]
        t = torch.frombuffer(bytearray(raw[8 + n + a:8 + n + b]), dtype=dtypes[header[name]["dtype"]])
        out[name] = t.reshape(header[name]["shape"]).float()
    return out


def test_deepseek_v3_checkpoint_router_keeps_its_routing_only_with_the_map():
    # The real router of ../shared/checkpoints/deepseek_v3 (layer 1: 16 experts in 4 groups, 2 groups
    # per token, top-4): moving its rows with the experts across groups changes which logical experts
    # tokens reach; the index map routepack.torch installs keeps every token's experts and weights.
    import json
    import os

    from torch_moe import DeepSeekGate

    shared = shared_dir()
    if not shared:
        pytest.skip("no shared data folder (ROUTEPACK_SHARED_DIR)")
    folder = os.path.join(shared, "checkpoints", "deepseek_v3", "checkpoint")
    config = json.load(open(os.path.join(folder, "config.json")))
    index = json.load(open(os.path.join(folder, "model.safetensors.index.json")))["weight_map"]
    names = ["model.layers.1.mlp.gate.weight", "model.layers.1.mlp.gate.e_score_correction_bias"]
    t = read_tensors(os.path.join(folder, index[names[0]]), names)
    E, k = config["n_routed_experts"], config["num_experts_per_tok"]
    gate = DeepSeekGate(E, k, config["n_group"], config["topk_group"])
    with torch.no_grad():
        gate.weight = torch.nn.Parameter(t[names[0]])
        gate.e_score_correction_bias.copy_(t[names[1]])
    x = torch.randn(512, config["hidden_size"], generator=torch.Generator().manual_seed(5))
    idx, w = gate(x)
    model = torch.nn.Module()
    model.layers = torch.nn.ModuleList([torch.nn.Module(), torch.nn.Module()])
    model.layers[1].mlp = torch.nn.Module()
    model.layers[1].mlp.gate = gate
    model.layers[1].mlp.experts = torch.nn.ModuleList(torch.nn.Linear(1, 1) for _ in range(E))
    across = np.random.default_rng(2).permutation(E)  # logical -> slot, groups mixed
    placement = routepack.place(np.ones((1, E)), 4, moe_layers=[1], previous=across[None, :], max_moves=0)
    assert rt.apply_placement(model, placement).routing == {1: "map"}
    p2l = torch.as_tensor(placement.physical_to_logical[0])
    slot_idx, slot_w = gate(x)
    assert torch.equal(p2l[slot_idx], idx) and torch.equal(slot_w, w)
    # The same permutation with the router's rows (and correction bias) moved instead of the map.
    moved = DeepSeekGate(E, k, config["n_group"], config["topk_group"])
    with torch.no_grad():
        moved.weight = torch.nn.Parameter(t[names[0]][p2l])
        moved.e_score_correction_bias.copy_(t[names[1]][p2l])
    row_idx, _ = moved(x)
    changed = sum(set(p2l[row_idx[i]].tolist()) != set(idx[i].tolist()) for i in range(len(x)))
    assert changed == 455, changed  # of 512 tokens (torch 1.13 CPU random inputs)


def test_bf16_experts_move_their_real_bytes(plans):
    # bf16 parameters with bf16 gradients and Adam moments (torch keeps state in the parameter's
    # dtype) and a float32 step per tensor: the moved bytes are the tensors' own.
    model = MoEModel("deepseek", experts=EXPERTS, moe_layers=3, top_k=6, dtype=torch.bfloat16)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model(*batch(0)).backward()
    opt.step()
    ref = copy.deepcopy(model)
    ref_opt = torch.optim.Adam(ref.parameters(), lr=1e-2)
    for p, q in zip(model.parameters(), ref.parameters()):
        q.grad = None if p.grad is None else p.grad.clone()  # deepcopy leaves gradients behind
        if p in opt.state:
            ref_opt.state[q] = {k: v.clone() for k, v in opt.state[p].items()}
    identity = routepack.identity(3, EXPERTS, 4, moe_layers=MOE_LAYERS)
    moves = plans[0].placement.moves(identity)
    want = sum(expert_state_bytes(ref, ref_opt, MOE_LAYERS[l], e) for l, m in enumerate(moves) for e, *_ in m)
    result = rt.apply_placement(model, plans[0], optimizer=opt)
    assert result.moved_bytes == want
    routed = [e for l, m in enumerate(moves) for e, *_ in m
              if ref.model.layers[MOE_LAYERS[l]].mlp.experts[e].gate_proj.weight.grad is not None]
    # A routed expert: bf16 data, grad and two moments (384 parameters each) and three float32 steps;
    # one no token reached in the step: its bf16 data only.
    total = sum(map(len, moves))
    assert 0 < len(routed) and want == len(routed) * (384 * 2 * 4 + 3 * 4) + (total - len(routed)) * 384 * 2
    assert_same_state(logical_state(model, opt, np.asarray(plans[0].physical_to_logical), False),
                      logical_state(ref, ref_opt, np.tile(np.arange(EXPERTS), (3, 1)), False), exact=True)


def test_megatron_layers_are_known_by_their_layer_number(plans):
    # A Megatron-Core pipeline stage numbers its decoder.layers from 0; TransformerLayer.layer_number
    # is the absolute, 1-based layer. Here the stage holds decoder layers 1-3 as decoder.layers.0-2.
    model = MoEModel("megatron-grouped", experts=EXPERTS, moe_layers=3, top_k=2)
    del model.decoder.layers[0]
    assert [x.layer for x in rt.find_moe_layers(model)] == [0, 1, 2]
    with pytest.raises(ValueError, match=r"^the plan's MoE layers are \[1, 2, 3\]; the model's are \[0, 1, 2\]$"):
        rt.apply_placement(model, plans[0])
    for i, layer in enumerate(model.decoder.layers):
        layer.layer_number = i + 2
    assert [x.layer for x in rt.find_moe_layers(model)] == MOE_LAYERS
    assert rt.apply_placement(model, plans[0]).routing == {l: "map" for l in MOE_LAYERS}


def stage(model, first, last, optimizer=None):
    """Megatron's pipeline stage of decoder layers first..last of ``model`` (a deep copy, numbered from 0
    with their absolute 1-based ``layer_number``, gradients copied too), and an Adam of its parameters
    holding the state ``optimizer`` holds for them."""
    chunk = copy.deepcopy(model)
    chunk.decoder.layers = torch.nn.ModuleList(list(chunk.decoder.layers)[first:last + 1])
    for i, layer in enumerate(chunk.decoder.layers):
        layer.layer_number = first + i + 1
    names = dict(model.named_parameters())
    opt = None if optimizer is None else torch.optim.Adam(chunk.parameters(), lr=1e-2)
    for name, p in chunk.named_parameters():
        w = names[re.sub(r"^decoder\.layers\.(\d+)\.", lambda m: f"decoder.layers.{int(m.group(1)) + first}.", name)]
        p.grad = None if w.grad is None else w.grad.clone()
        if opt is not None and w in optimizer.state:
            opt.state[p] = {k: v.clone() for k, v in optimizer.state[w].items()}
    return chunk, opt


@pytest.mark.parametrize("layout", ["megatron-grouped", "megatron-sequential"])
def test_pipeline_stages_apply_their_rows_of_the_plan(plans, layout):
    """Each pipeline stage (one chunk, or virtual-pipeline chunks of non-adjacent layers) applies the
    plan's rows of the MoE layers it holds: its parameters, gradients and Adam state equal those
    layers of the whole model with the plan applied, bit for bit; previous (None: recorded on the
    stage; or the whole plan) works alike; a stage whose layers are not all in the plan, or whose
    layers carry no layer_number, is refused before anything moves."""
    whole = MoEModel(layout, experts=EXPERTS, moe_layers=3, top_k=2)
    opt = torch.optim.Adam(whole.parameters(), lr=1e-2)
    tokens, targets = batch(0)
    whole(tokens, targets).backward()
    opt.step()
    stages = [stage(whole, 0, 1, opt), stage(whole, 2, 3, opt)]
    vpp_a, _ = stage(whole, 1, 1)
    vpp_b, _ = stage(whole, 3, 3)
    for plan, previous in ((plans[0], None), (plans[1], plans[0]), (plans[2], None)):
        rt.apply_placement(whole, plan, optimizer=opt)
        for (chunk, chunk_opt), ids in zip(stages, ([1], [2, 3])):
            result = rt.apply_placement(chunk, plan, previous, optimizer=chunk_opt)
            assert sorted(result.layouts) == ids
        assert rt.apply_placement([vpp_a, vpp_b], plan, previous).routing == {1: "map", 3: "map"}
    full = dict(whole.named_parameters())
    for (chunk, chunk_opt), first in zip(stages, (0, 2)):
        for name, p in chunk.named_parameters():
            m = re.match(r"^decoder\.layers\.(\d+)\.(.*)$", name)
            w = full[f"decoder.layers.{int(m.group(1)) + first}.{m.group(2)}" if m else name]
            assert torch.equal(p, w) and (p.grad is None) == (w.grad is None), name
            assert p.grad is None or torch.equal(p.grad, w.grad), name
            assert sorted(chunk_opt.state[p]) == sorted(opt.state[w]), name
            for k, v in chunk_opt.state[p].items():
                assert torch.equal(v, opt.state[w][k]), (name, k)
        assert np.array_equal(rt.current_placement(chunk)["physical_to_logical"],
                              np.asarray(plans[2].physical_to_logical)[[l - 1 for l in rt.current_placement(
                                  chunk)["moe_layers"]]])
    for layers, row in ((vpp_a, 1), (vpp_b, 3)):
        got = dict(layers.named_parameters())["decoder.layers.0.mlp.experts." + (
            "weight1" if layout == "megatron-grouped" else "local_experts.0.linear_fc1.weight")]
        want = full[f"decoder.layers.{row}.mlp.experts." + (
            "weight1" if layout == "megatron-grouped" else "local_experts.0.linear_fc1.weight")]
        assert torch.equal(got, want)
    beyond, _ = stage(whole, 2, 3)
    beyond.decoder.layers[1].layer_number = 5
    with pytest.raises(ValueError, match=r"^the plan's MoE layers are \[1, 2, 3\]; the model's are \[2, 4\]$"):
        rt.apply_placement(beyond, plans[0])
    unnumbered, _ = stage(whole, 2, 3)
    for layer in unnumbered.decoder.layers:
        del layer.layer_number
    with pytest.raises(ValueError, match=r"^the plan's MoE layers are \[1, 2, 3\]; the model's are \[0, 1\]$"):
        rt.apply_placement(unnumbered, plans[0])


class Float16Optimizer:
    """The shape of Megatron-Core's Float16OptimizerWithFloat16Params: bf16 model parameters, fp32 main
    copies (``fp32_from_float16_groups``) stepped by the inner ``optimizer``, grads copied to the main
    copies before the step and the main copies back to the model after it."""

    def __init__(self, model):
        self.float16_groups = [list(model.parameters())]
        self.fp32_from_float16_groups = [[p.detach().float().requires_grad_() for p in self.float16_groups[0]]]
        self.optimizer = torch.optim.Adam(self.fp32_from_float16_groups[0], lr=1e-2)

    def step(self):
        for p, m in zip(self.float16_groups[0], self.fp32_from_float16_groups[0]):
            m.grad = None if p.grad is None else p.grad.float()
        self.optimizer.step()
        with torch.no_grad():
            for p, m in zip(self.float16_groups[0], self.fp32_from_float16_groups[0]):
                p.copy_(m)


def test_fp32_main_copies_of_a_mixed_precision_optimizer_move_with_the_experts(plans):
    ref = MoEModel("megatron-sequential", experts=EXPERTS, moe_layers=3, top_k=6, dtype=torch.bfloat16)
    model = copy.deepcopy(ref)
    opt, ref_opt = Float16Optimizer(model), Float16Optimizer(ref)
    identity = np.tile(np.arange(EXPERTS), (3, 1))
    for step, plan in enumerate(plans[:3]):
        loss = model(*batch(step))
        assert torch.equal(loss, ref(*batch(step)))
        loss.backward()
        ref(*batch(step)).backward()
        rt.apply_placement(model, plan, optimizer=opt)
        opt.step()
        ref_opt.step()
        p2l = np.asarray(plan.physical_to_logical)
        assert_same_state(logical_state(model, None, p2l, False), logical_state(ref, None, identity, False), exact=True)
        # The main copies and their Adam moments, read in logical order through the model's names.
        names = [n for n, _ in model.named_parameters()]
        got = dict(zip(names, opt.fp32_from_float16_groups[0]))
        exp = dict(zip(names, ref_opt.fp32_from_float16_groups[0]))
        for name in names:
            m = PER_EXPERT_NAME.match(name)
            if m:
                layer = MOE_LAYERS.index(int(m.group(2)))
                src = f"{m.group(1)}{int(np.argsort(p2l[layer])[int(m.group(3))])}{m.group(4)}"
                assert torch.equal(got[src], exp[name]), name
                have, need = opt.optimizer.state[got[src]], ref_opt.optimizer.state[exp[name]]
                assert have.keys() == need.keys() and all(torch.equal(have[k], need[k]) for k in need), name


def test_layouts_are_the_rewriters_table():
    """routepack.torch reads the checkpoint rewriter's table of MoE names (core/model/moe_names.h):
    its live rows, in order, with the regular expressions built from the table's prefixes."""
    from routepack import _core
    from routepack.torch import layouts

    table = _core._moe_layouts()
    assert [r["name"] for r in table] == ["megatron-sequential", "megatron-grouped", "megatron-per-expert",
                                          "megatron-stacked", "hf-per-expert", "hf-stacked"]
    assert [(lay.name, lay.blocks, lay.experts, lay.storage, lay.routers, lay.routing) for lay in layouts.LAYOUTS] == [
        ("megatron-sequential", ("mlp",), r"experts\.local_experts\.(?P<e>\d+)\.(?P<name>.+)", "per-expert",
         ("router",), "map"),
        ("megatron-grouped", ("mlp",), r"experts\.(?P<name>weight1|weight2)", "flat-chunks", ("router",), "map"),
        ("hf-per-expert", ("mlp", "block_sparse_moe"), r"experts\.(?P<e>\d+)\.(?P<name>.+)", "per-expert",
         ("gate", "router"), "auto"),
        ("hf-stacked", ("mlp",), r"experts\.(?P<name>[^.]+)", "stacked", ("router", "gate"), "auto"),
    ]
    assert layouts.ROUTER_TENSORS == ("weight", "bias", "e_score_correction_bias", "expert_bias")
    assert layouts.GROUPED_ROUTER_MARKS == ("n_group", "topk_group", "e_score_correction_bias")
    assert layouts.BLOCK.pattern == r"(?:^|\.)layers\.(\d+)\.(mlp|block_sparse_moe)$"
