"""routepack.torch across 4 EP ranks: processes spawned by the test, gloo on this machine. Each rank
holds E / P = 16 experts of each MoE layer; the experts are trained with Adam on gradients defined per
logical expert, a new real plan is applied before every step, and after every apply and every step
each rank's slots hold bitwise what an unmoved full model holds for the logical experts the plan put
there. Bytes each rank sent and received are the moved experts' real bytes (and their sum the plan's
migration figure); a budget-0 plan moves nothing; bad input on one rank is refused on every rank; a
rank dying mid-move makes the others raise and leaves no layer half-moved. (Default pass only.)"""

import datetime
import multiprocessing
import os
import pickle
import re
import socket
import traceback

import numpy as np
import pytest

if os.environ.get("ROUTEPACK_TORCH_TESTS") == "off":
    pytest.skip("torch tests run in the default pass only (Debian's torch under a preloaded sanitizer runtime is "
                "not expected to work)", allow_module_level=True)
torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

import routepack  # noqa: E402
import routepack.torch as rt  # noqa: E402
from conftest import shared_dir  # noqa: E402
from torch_common import (  # noqa: E402
    expected_traffic, EXPERT_BYTES, EXPERTS, MOE_LAYERS, plan_chain, topology, trace_windows)
from torch_moe import MoEModel  # noqa: E402

P = 4
LOCAL = EXPERTS // P
LAYOUTS = ("deepseek", "megatron-grouped", "stacked")
#: Bytes of one moved expert with its gradient and Adam state (float32): per-expert SwiGLU with a
#: step per tensor; a GroupedMLP chunk (384 parameters, its step shared); a stacked expert (416).
MOVED_BYTES = {"deepseek": EXPERT_BYTES, "megatron-grouped": 384 * 16, "stacked": 416 * 16}
PER_EXPERT = re.compile(r"layers\.(\d+)\.mlp\.experts\.(\d+)\.(.+)$")
WHOLE = re.compile(r"layers\.(\d+)\.mlp\.experts\.([^.]+)$")
ROUTER = re.compile(r"layers\.(\d+)\.mlp\.router\.(weight|bias)$")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(target, rank, port, args, out):
    try:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=P,
                                timeout=datetime.timedelta(seconds=20))
        status = ("ok", target(rank, *args))
    except BaseException as e:  # the parent reads what happened
        status = ("error", f"{type(e).__name__}: {e}", traceback.format_exc())
    with open(os.path.join(out, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(status, f)
    os._exit(0)  # no process-group teardown: a dead peer would block it


def run_ranks(target, args, tmp_path, timeout=150):
    """Runs target(rank, *args) in P spawned processes; per rank its ("ok", value) or ("error", text,
    traceback), or None for a process that wrote nothing (it died)."""
    ctx = multiprocessing.get_context("spawn")
    port = _free_port()
    procs = [ctx.Process(target=_child, args=(target, r, port, args, str(tmp_path))) for r in range(P)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    results = []
    for r in range(P):
        path = tmp_path / f"rank{r}.pkl"
        results.append(pickle.loads(path.read_bytes()) if path.exists() else None)
    return results


def _grad(li, e, name, step, shape):
    g = torch.Generator().manual_seed(((step * 8 + li) * 100 + e) * 16 + sum(map(ord, name)) % 16)
    return torch.randn(shape, generator=g)


def _experts(model):
    """(MoE layer index, tensor name, parameter, storage) of every expert tensor."""
    for name, p in model.named_parameters():
        m = PER_EXPERT.search(name)
        if m:
            yield MOE_LAYERS.index(int(m.group(1))), f"{m.group(3)}", p, ("per-expert", int(m.group(2)))
            continue
        m = WHOLE.search(name)
        if m:
            flat = m.group(2) in ("weight1", "weight2")  # GroupedMLP: expert j = the j-th chunk
            yield MOE_LAYERS.index(int(m.group(1))), m.group(2), p, ("flat" if flat else "stacked", None)


def _slot(p_or_t, storage, j, local):
    if storage[0] == "per-expert":
        return p_or_t
    if storage[0] == "stacked":
        return p_or_t[j]
    return p_or_t.reshape(local, -1)[j]


def set_logical_grads(model, rank, local, p2l, step, rows_routing):
    """Gradients defined per logical expert: slot v of layer l gets logical expert p2l[l][v]'s (and so
    does router row v when the router's rows move with the experts)."""
    for li, name, p, storage in _experts(model):
        if storage[0] == "per-expert":
            p.grad = _grad(li, int(p2l[li][rank * local + storage[1]]), name, step, p.shape)
            continue
        p.grad = torch.zeros_like(p)
        for j in range(local):
            view = _slot(p.grad, storage, j, local)
            view.copy_(_grad(li, int(p2l[li][rank * local + j]), name, step, view.shape))
    for name, p in model.named_parameters():
        m = ROUTER.search(name)
        if m and rows_routing:
            li = MOE_LAYERS.index(int(m.group(1)))
            p.grad = torch.stack([_grad(li, int(e), "router." + m.group(2), step, p.shape[1:]) for e in p2l[li]])


def logical(model, opt, rank, local, p2l, rows_routing):
    """{(layer index, logical expert, tensor, field): tensor} of this rank's slots; the router's rows
    in logical order when they move with the experts."""
    out = {}
    for li, name, p, storage in _experts(model):
        for j in range(1 if storage[0] == "per-expert" else local):
            jj = storage[1] if storage[0] == "per-expert" else j
            e = int(p2l[li][rank * local + jj])
            out[(li, e, name, "param")] = _slot(p.detach(), storage, jj, local)
            out[(li, e, name, "grad")] = _slot(p.grad, storage, jj, local)
            for k, v in opt.state.get(p, {}).items():
                if storage[0] == "per-expert" or v.shape == p.shape:
                    out[(li, e, name, k)] = _slot(v, storage, jj, local)
    if rows_routing:
        for name, p in model.named_parameters():
            m = ROUTER.search(name)
            if m:
                li = MOE_LAYERS.index(int(m.group(1)))
                order = torch.as_tensor(np.argsort(p2l[li]))
                out[(li, -1, name, "param")] = p.detach()[order]
                out[(li, -1, name, "grad")] = p.grad[order]
                for k, v in opt.state.get(p, {}).items():
                    if v.shape == p.shape:
                        out[(li, -1, name, k)] = v[order]
    return out


def same(local_state, ref_state):
    """Keys of the rank's state that differ from the unmoved model's."""
    return [k for k, v in local_state.items() if not torch.equal(v, ref_state[k])]


def build(layout, rank):
    """An unmoved full model and this rank's EP shard of it (slots rank*16 .. rank*16+15), each with
    Adam after one step on the logical gradients."""
    ref = MoEModel(layout, experts=EXPERTS, top_k=2)
    mine = MoEModel(layout, experts=EXPERTS, top_k=2, local=LOCAL)
    with torch.no_grad():
        ref_tensors = {(li, name, storage[1]): p for li, name, p, storage in _experts(ref)}
        for li, name, p, storage in _experts(mine):
            if storage[0] == "per-expert":
                p.copy_(ref_tensors[(li, name, rank * LOCAL + storage[1])])
            else:
                whole = ref_tensors[(li, name, None)]
                for j in range(LOCAL):
                    _slot(p.data, storage, j, LOCAL).copy_(_slot(whole.data, storage, rank * LOCAL + j, EXPERTS))
        mine.load_state_dict({k: v for k, v in ref.state_dict().items() if "experts" not in k}, strict=False)
    return ref, mine


def ranks_apply(rank, layouts, plan_texts, budget0_text):
    plans = [routepack.plan_from_json(t) for t in plan_texts]
    identity = np.tile(np.arange(EXPERTS), (len(MOE_LAYERS), 1))
    report = {}
    for layout in layouts:
        rows = layout == "stacked"
        ref, mine = build(layout, rank)
        opt_r, opt_m = torch.optim.Adam(ref.parameters(), lr=1e-2), torch.optim.Adam(mine.parameters(), lr=1e-2)
        p2l, diffs, results = identity, [], []
        for step, plan in enumerate(plans + [routepack.plan_from_json(budget0_text)]):
            set_logical_grads(ref, 0, EXPERTS, identity, step, rows)
            set_logical_grads(mine, rank, LOCAL, p2l, step, rows)
            opt_r.step()
            opt_m.step()
            want = logical(ref, opt_r, 0, EXPERTS, identity, rows)
            diffs.append(same(logical(mine, opt_m, rank, LOCAL, p2l, rows), want))
            res = rt.apply_placement(mine, plan, optimizer=opt_m, group=dist.group.WORLD)
            p2l = np.asarray(plan.physical_to_logical)
            diffs.append(same(logical(mine, opt_m, rank, LOCAL, p2l, rows), want))
            results.append({k: getattr(res, k) for k in ("experts_moved", "experts_sent", "experts_received",
                                                          "bytes_sent", "bytes_received", "moved_bytes", "routing")})
        with pytest.raises(ValueError) as e:  # bad input on rank 2 only: every rank refuses
            rt.apply_placement(mine, plans[0], previous=identity if rank == 2 else None, optimizer=opt_m,
                               group=dist.group.WORLD)
        report[layout] = dict(diffs=diffs, results=results, refused=str(e.value))
        if layout != "deepseek":  # shared expert tensors: a gradient on some ranks only is refused
            if rank == 1:
                for _, _, p, _ in _experts(mine):
                    p.grad = None
            with pytest.raises(ValueError) as e:
                rt.apply_placement(mine, plans[0], optimizer=opt_m, group=dist.group.WORLD)
            report[layout]["uneven"] = str(e.value)
    return report


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    shared = shared_dir()
    if not shared:
        pytest.skip("no shared data folder (ROUTEPACK_SHARED_DIR): the plans come from its real traces")
    windows = trace_windows(shared, tmp_path_factory.mktemp("w"), windows=4)
    chain = plan_chain(windows, ep_ranks=P, max_moves=24)
    lengths, counts = windows[0]
    cap = int(max(int(l.max()) for l, _ in windows)) * 2
    budget0 = routepack.plan(lengths, counts, topology(P, cap), moe_layers=MOE_LAYERS, top_k=6, previous=chain[-1],
                             budgets={"max_moves": 0})
    return chain, budget0


def test_four_ep_ranks_move_experts_and_adam_state_bitwise(plans, tmp_path):
    chain, budget0 = plans
    assert budget0.migration["moves"] == 0 and budget0.migration["bytes"] == 0
    results = run_ranks(ranks_apply, (LAYOUTS, [p.to_json() for p in chain], budget0.to_json()), tmp_path)
    for rank, status in enumerate(results):
        assert status is not None and status[0] == "ok", (rank, status and status[1:])
    for layout in LAYOUTS:
        sent_total = [0] * (len(chain) + 1)
        for rank, (_, report) in enumerate(results):
            got = report[layout]
            assert got["diffs"] == [[]] * (2 * (len(chain) + 1))
            for s, ((n_out, n_in), res) in enumerate(zip(expected_traffic(chain, rank, P) + [(0, 0)], got["results"])):
                assert (res["experts_sent"], res["experts_received"]) == (n_out, n_in)
                assert res["bytes_sent"] == n_out * MOVED_BYTES[layout]
                assert res["bytes_received"] == n_in * MOVED_BYTES[layout]
                sent_total[s] += res["bytes_sent"]
            assert got["refused"].startswith("rank 2: previous placement is not the model's current one: MoE layer 1 ")
            if layout != "deepseek":
                storage = "stacked" if layout == "stacked" else "flat-chunks"
                assert got["uneven"].startswith(f"MoE layer 1: its {storage} expert tensors hold different fields on "
                                                "different EP ranks (")
            assert got["results"][-1]["experts_moved"] == 0 and got["results"][-1]["bytes_sent"] == 0
        moved = [r["moved_bytes"] for r in results[0][1][layout]["results"]]
        assert sent_total == moved  # every byte moved crossed the wire once
        for s, p in enumerate(chain[1:], 1):
            assert p.migration["moves"] > 0
            assert moved[s] == p.migration["moves"] * MOVED_BYTES[layout]
            if layout == "deepseek":  # the plan's migration section describes these experts
                assert moved[s] == p.migration["bytes"]
        assert results[0][1][layout]["results"][0]["routing"] == {l: "rows" if layout == "stacked" else "map"
                                                                  for l in MOE_LAYERS}


def ranks_die(rank, plan_text):
    plan = routepack.plan_from_json(plan_text)
    identity = np.tile(np.arange(EXPERTS), (len(MOE_LAYERS), 1))
    ref, mine = build("deepseek", rank)
    opt_r, opt_m = torch.optim.Adam(ref.parameters(), lr=1e-2), torch.optim.Adam(mine.parameters(), lr=1e-2)
    set_logical_grads(ref, 0, EXPERTS, identity, 0, False)
    set_logical_grads(mine, rank, LOCAL, identity, 0, False)
    opt_r.step()
    opt_m.step()
    if rank == 3:  # dies in the transfer of the second MoE layer
        real, calls = dist.all_to_all_single, []

        def dying(*args, **kwargs):
            calls.append(1)
            if len(calls) == 2:
                os._exit(7)
            return real(*args, **kwargs)

        dist.all_to_all_single = dying
    try:
        rt.apply_placement(mine, plan, optimizer=opt_m, group=dist.group.WORLD)
        error = None
    except RuntimeError as e:
        error = str(e)
    want = logical(ref, opt_r, 0, EXPERTS, identity, False)
    rec = rt.current_placement(mine)["physical_to_logical"]
    got = logical(mine, opt_m, rank, LOCAL, rec, False)
    return dict(error=error, record=rec, diffs=same(got, want))


def test_a_rank_dying_mid_move_leaves_no_layer_half_moved(plans, tmp_path):
    plan = plans[0][0]
    assert all(m > 0 for m in [len(x) for x in plan.placement.moves(
        routepack.identity(len(MOE_LAYERS), EXPERTS, P, moe_layers=MOE_LAYERS))])
    results = run_ranks(ranks_die, (plan.to_json(),), tmp_path, timeout=90)
    assert results[3] is None  # it died
    p2l = np.asarray(plan.physical_to_logical)
    for rank in range(3):
        status, got = results[rank][0], results[rank][1]
        assert status == "ok", results[rank]
        assert got["error"].startswith(f"apply_placement: rank {rank}: the transfer of MoE layer 2 failed (")
        assert got["error"].endswith("MoE layers [1] follow the plan, layer 2 and the later ones keep the previous "
                                     "placement (recorded on the model)")
        # Layer 1 moved whole, layers 2 and 3 not at all: each slot holds what its record says.
        assert np.array_equal(got["record"][0], p2l[0])
        assert np.array_equal(got["record"][1:], np.tile(np.arange(EXPERTS), (2, 1)))
        assert got["diffs"] == []
