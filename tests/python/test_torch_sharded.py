"""routepack.torch with Megatron-Core's distributed optimizer: 4 processes (gloo) as 2 EP ranks x 2
expert-data-parallel (EDP) ranks, bf16 Megatron-layout experts whose fp32 main copies and Adam moments
are sharded over the EDP ranks in the shape of ``DistributedOptimizer`` (NVIDIA/Megatron-LM d98e8a64,
``megatron/core/optimizer/distrib_optimizer.py``: one flat buffer cut into equal DP regions, per
model parameter the ``Range`` of it a rank owns, an fp32 main shard stepped by the inner Adam),
chained with a dense part over all 4 ranks as ``get_megatron_optimizer`` returns them. A new real plan
is applied before every step; after every apply and every step each slot holds bitwise what an
unmoved model with whole fp32 main copies holds for the logical expert the plan put there: the bf16
parameter, and its main copy and moments gathered from the EDP shards by the test itself. (Default
pass only: torch.)"""

import datetime
from functools import partial

import numpy as np
import pytest

from gloo_ranks import require_gloo, run_ranks

require_gloo(module=True)
torch = pytest.importorskip("torch")

import routepack  # noqa: E402
import routepack.torch as rt  # noqa: E402
from conftest import shared_dir  # noqa: E402
from torch_common import (  # noqa: E402
    expected_traffic, EXPERT_PARAMETERS, EXPERTS, MOE_LAYERS, plan_chain, trace_windows)

EP, EDP = 2, 2
LOCAL = EXPERTS // EP
LAYOUTS = ("megatron-grouped", "megatron-sequential")
#: Bytes of one moved expert: bf16 parameters (2) plus the fp32 main copy and Adam's two moments
#: (3 x 4) per parameter; no gradient (Megatron keeps it in main_grad, zeroed at every step).
MOVED_BYTES = EXPERT_PARAMETERS * (2 + 12)


class Range:
    """Megatron-Core's distrib_optimizer.Range: elements start .. end."""

    def __init__(self, start, end):
        self.start, self.end, self.size = start, end, end - start


class DistributedOptimizer:
    """The shape of Megatron-Core's DistributedOptimizer over ``params`` on DP group ``group``:
    ``gbuf_ranges``, ``model_param_gbuf_map``, ``model_param_group_index_map``, the inner Adam over
    this rank's fp32 main shards, ``data_parallel_group``. step(): gradients (``main_grad``, fp32)
    averaged over the group (Megatron reduce-scatters them), Adam on the shards, the bf16 parameters
    rebuilt from every rank's shards (Megatron all-gathers the param buffer)."""

    def __init__(self, params, group):
        import torch.distributed as dist

        self.params, self.data_parallel_group = list(params), group
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        total = sum(p.numel() for p in self.params)
        per = -(-total // self.world)
        own = Range(self.rank * per, (self.rank + 1) * per)
        param_map, offset = {}, 0
        for p in self.params:
            lo, hi = max(offset, own.start), min(offset + p.numel(), own.end)
            if hi > lo:
                param_map[p] = {"param": Range(lo - offset, hi - offset), "gbuf_world": Range(lo, hi)}
            offset += p.numel()
        key = (torch.bfloat16, torch.float32)
        self.gbuf_ranges = [{key: [{"param_map": param_map}]}]
        self.model_param_gbuf_map = {p: (0, key, 0) for p in self.params}
        self.model_param_group_index_map, mains = {}, []
        for p in self.params:
            if p in param_map:
                r = param_map[p]["param"]
                self.model_param_group_index_map[p] = (0, len(mains))
                mains.append(p.detach().reshape(-1)[r.start:r.end].float().clone().requires_grad_())
        self.optimizer = torch.optim.Adam(mains, lr=1e-2)

    def range(self, p):
        entry = self.gbuf_ranges[0][(torch.bfloat16, torch.float32)][0]["param_map"].get(p)
        return None if entry is None else entry["param"]

    def main(self, p):
        g, o = self.model_param_group_index_map[p]
        return self.optimizer.param_groups[g]["params"][o]

    def step(self):
        import torch.distributed as dist

        for p in self.params:
            g = p.main_grad.clone()
            dist.all_reduce(g, group=self.data_parallel_group)
            g /= self.world
            r = self.range(p)
            if r is not None:
                self.main(p).grad = g.reshape(-1)[r.start:r.end].clone()
        self.optimizer.step()
        with torch.no_grad():
            for p in self.params:
                buf = torch.zeros(p.numel(), dtype=torch.float32)
                r = self.range(p)
                if r is not None:
                    buf[r.start:r.end] = self.main(p).detach().to(p.dtype).float()
                # One rank's bf16 values (exact in fp32, as gloo sums no bf16) plus zeros: the all-gather.
                dist.all_reduce(buf, group=self.data_parallel_group)
                p.copy_(buf.view(p.shape))

    def whole(self, p, what):
        """Parameter p's whole fp32 main copy ("main") or Adam moment, gathered from the shards."""
        import torch.distributed as dist

        buf = torch.zeros(p.numel(), dtype=torch.float32)
        r = self.range(p)
        if r is not None:
            m = self.main(p)
            buf[r.start:r.end] = m.detach() if what == "main" else self.optimizer.state[m][what]
        dist.all_reduce(buf, group=self.data_parallel_group)
        return buf.view(p.shape)


class ChainedOptimizer:
    """The shape of Megatron-Core's ChainedOptimizer (``chained_optimizers``)."""

    def __init__(self, parts):
        self.chained_optimizers = parts

    def step(self):
        for part in self.chained_optimizers:
            part.step()


class Float16Reference:
    """Whole fp32 main copies of an unmoved bf16 model stepped by Adam (the arithmetic of the shards)."""

    def __init__(self, params):
        self.params = list(params)
        self.mains = [p.detach().float().clone().requires_grad_() for p in self.params]
        self.optimizer = torch.optim.Adam(self.mains, lr=1e-2)

    def step(self):
        for p, m in zip(self.params, self.mains):
            m.grad = p.main_grad.clone()
        self.optimizer.step()
        with torch.no_grad():
            for p, m in zip(self.params, self.mains):
                p.copy_(m)


def _slots(model, local):
    """(MoE layer index, local slot, tensor name, parameter, its view of the slot) of every expert tensor."""
    for name, p in model.named_parameters():
        parts = name.split(".")
        if "experts" not in parts:
            continue
        li = MOE_LAYERS.index(int(parts[parts.index("layers") + 1]))
        if "local_experts" in parts:
            j = int(parts[parts.index("local_experts") + 1])
            yield li, j, ".".join(parts[parts.index("local_experts") + 2:]), p, lambda t: t
        else:
            for j in range(local):
                yield li, j, parts[-1], p, (lambda t, j=j: t.reshape(local, -1)[j])


def set_grads(model, ep_rank, local, p2l, step):
    """main_grad (fp32) per logical expert: slot j of layer l gets logical expert p2l[l][ep_rank*local+j]'s."""
    for p in model.parameters():
        p.main_grad = torch.zeros(p.shape, dtype=torch.float32)
    for li, j, name, p, view in _slots(model, local):
        e = int(p2l[li][ep_rank * local + j])
        g = torch.Generator().manual_seed(((step * 8 + li) * 100 + e) * 16 + sum(map(ord, name)) % 16)
        target = view(p.main_grad)
        target.copy_(torch.randn(target.shape, generator=g))


def build(layout, ep_rank):
    from torch_moe import MoEModel

    ref = MoEModel(layout, experts=EXPERTS, top_k=2, dtype=torch.bfloat16)
    mine = MoEModel(layout, experts=EXPERTS, top_k=2, local=LOCAL, dtype=torch.bfloat16)
    whole = {(li, j, name): view(p) for li, j, name, p, view in _slots(ref, EXPERTS)}
    with torch.no_grad():
        for li, j, name, p, view in _slots(mine, LOCAL):
            view(p.data).copy_(whole[(li, ep_rank * LOCAL + j, name)])
        mine.load_state_dict({k: v for k, v in ref.state_dict().items() if "experts" not in k}, strict=False)
    return ref, mine


def differs(mine, expert_opt, ref, ref_opt, ep_rank, p2l):
    """Keys (layer, slot, tensor, field) where this rank's slot differs from the unmoved model's logical expert."""
    want = {}
    mains = dict(zip(map(id, ref_opt.params), ref_opt.mains))
    for li, j, name, p, view in _slots(ref, EXPERTS):
        m = mains[id(p)]
        want[(li, j, name)] = {"param": view(p.detach()), "main": view(m.detach()),
                               **{k: view(v) for k, v in ref_opt.optimizer.state[m].items() if k != "step"}}
    bad = []
    for li, j, name, p, view in _slots(mine, LOCAL):
        have = {"param": view(p.detach()),
                **{k: view(expert_opt.whole(p, k)) for k in ("main", "exp_avg", "exp_avg_sq")}}
        exp = want[(li, int(p2l[li][ep_rank * LOCAL + j]), name)]
        bad += [(li, j, name, k) for k in have if not torch.equal(have[k], exp[k])]
    return bad


def ranks_train(rank, port, plan_texts):
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=EP * EDP,
                            timeout=datetime.timedelta(seconds=30))
    ep_groups = [dist.new_group([d * EP + e for e in range(EP)]) for d in range(EDP)]
    edp_groups = [dist.new_group([d * EP + e for d in range(EDP)]) for e in range(EP)]
    ep_rank, edp_rank = rank % EP, rank // EP
    ep_group, edp_group = ep_groups[edp_rank], edp_groups[ep_rank]
    plans = [routepack.plan_from_json(t) for t in plan_texts]
    identity = np.tile(np.arange(EXPERTS), (len(MOE_LAYERS), 1))
    report = {}
    for layout in LAYOUTS:
        ref, mine = build(layout, ep_rank)
        experts = [p for n, p in mine.named_parameters() if ".experts." in n]
        dense = [p for n, p in mine.named_parameters() if ".experts." not in n]
        expert_opt = DistributedOptimizer(experts, edp_group)
        opt = ChainedOptimizer([DistributedOptimizer(dense, dist.group.WORLD), expert_opt])
        ref_opt = Float16Reference([p for n, p in ref.named_parameters() if ".experts." in n])
        p2l, diffs, results = identity, [], []
        for step, plan in enumerate(plans):
            set_grads(ref, 0, EXPERTS, identity, step)
            set_grads(mine, ep_rank, LOCAL, p2l, step)
            ref_opt.step()
            opt.step()
            diffs.append(differs(mine, expert_opt, ref, ref_opt, ep_rank, p2l))
            res = rt.apply_placement(mine, plan, optimizer=opt, group=ep_group)
            p2l = np.asarray(plan.physical_to_logical)
            diffs.append(differs(mine, expert_opt, ref, ref_opt, ep_rank, p2l))
            results.append({k: getattr(res, k) for k in ("experts_sent", "experts_received", "bytes_sent",
                                                          "bytes_received", "moved_bytes", "bytes_gathered")})
        shards = {id(p): (expert_opt.range(p).size if expert_opt.range(p) else 0, p.numel()) for p in experts}
        with pytest.raises(ValueError) as e:  # bad input on one rank: every rank refuses
            rt.apply_placement(mine, plans[0], previous=identity if rank == 2 else None, optimizer=opt, group=ep_group)
        report[layout] = dict(diffs=diffs, results=results, refused=str(e.value),
                              others=sum(n - own for own, n in shards.values()))
    return (report,)


def test_distributed_optimizer_shards_move_with_their_experts(tmp_path_factory, tmp_path):
    shared = shared_dir()
    if not shared:
        pytest.skip("no shared data folder (ROUTEPACK_SHARED_DIR): the plans come from its real traces")
    chain = plan_chain(trace_windows(shared, tmp_path_factory.mktemp("w"), windows=3), ep_ranks=EP, max_moves=24)
    results = run_ranks(partial(ranks_train, plan_texts=[p.to_json() for p in chain]), EP * EDP, tmp_path,
                        timeout=240)
    for rank, status in enumerate(results):
        assert status[0] == "ok", (rank, status[1:])
    for layout in LAYOUTS:
        for rank, (_, report) in enumerate(results):
            got = report[layout]
            assert got["diffs"] == [[]] * (2 * len(chain)), (layout, rank)
            for (n_out, n_in), res in zip(expected_traffic(chain, rank % EP, EP), got["results"]):
                assert (res["experts_sent"], res["experts_received"]) == (n_out, n_in)
                assert res["bytes_sent"] == n_out * MOVED_BYTES
                assert res["bytes_received"] == n_in * MOVED_BYTES
                # Every MoE layer has moves, so each rank gathers the other EDP rank's shards of all its
                # expert tensors: main copy and two moments, 4 bytes each.
                assert res["bytes_gathered"] == got["others"] * 12
            # Rank 2 (EP rank 0 of its EP group) finds it; ranks 0 and 1 learn it from DP rank 2 of the dense
            # part's DP group (all 4 ranks), then from EP rank 0 of their EP group.
            via = "DP rank 2: " if rank < EP else ""
            assert got["refused"].startswith(f"rank 0: {via}previous placement is not the model's current one: MoE "
                                             "layer 1 "), got["refused"]
        assert all(p.migration["moves"] > 0 for p in chain[1:])
        # Each EP group (one per EDP rank) sends every moved expert once: the plan's moves at the
        # experts' real bytes (the plans' migration section describes fp32 experts with gradients, so
        # its bytes figure is for those; the moves are the plan's).
        for s, p in enumerate(chain[1:], 1):
            for d in range(EDP):
                sent = sum(results[d * EP + e][1][layout]["results"][s]["bytes_sent"] for e in range(EP))
                assert sent == p.migration["moves"] * MOVED_BYTES
