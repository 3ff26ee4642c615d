"""routepack.torch in one process: a live model trained with a new real plan applied before every
optimizer step computes what the same model computes unmoved; bad input is refused before anything
moves; micro-batches and cu_seqlens. (torch runs in the default pass only: Debian's torch is not
built for the sanitizer runtimes.)"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import routepack  # noqa: E402
import routepack.torch as rt  # noqa: E402
from conftest import shared_dir  # noqa: E402
from torch_common import (EXPERTS, MOE_LAYERS, assert_same_state, expert_state_bytes, logical_state,  # noqa: E402
                          plan_chain, trace_windows)
from torch_moe import MoEModel, VOCAB  # noqa: E402

TOKENS = 512


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
