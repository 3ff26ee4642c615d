"""verl's rearrange_micro_batches as a drop-in and make_balance_batch on verl's two paths, on the real
DeepSeek-V2-Lite trace (ROUTEPACK_SHARED_DIR): the first 512 samples of at most 512 tokens in trace
order, padded to S = 512, with their routes ([B, S, 26, 6], -1 in the padding), on 4 DP ranks and 8
EP ranks (attention stage mla 27/27). PPO mini-batches as verl cuts them (a global mini-batch of
B / 4 = 128: the ratio of verl's defaults 1024 / 256; 32 samples per rank), contiguous and
shuffled; the static micro-batch size (ppo_micro_batch_size_per_gpu 4)."""

import json
import os
import types
from types import SimpleNamespace

import numpy as np
import pytest

import routepack
from conftest import shared_dir
from routepack.adapters import verl
from routepack.adapters._common import lpt_parts

DS_STAGES = [("mla", 27.0, 27.0)]
MOE = list(range(1, 27))
D, EP, CAP, MINI = 4, 8, 512, 32


@pytest.fixture(scope="module")
def step():
    shared = shared_dir()
    if shared is None:
        if os.environ.get("CI"):
            pytest.fail("ROUTEPACK_SHARED_DIR is absent")
        pytest.skip("../shared is absent")
    w = routepack.read_trace(os.path.join(shared, "traces", "deepseek-v2-lite"), model="deepseek-v2-lite")
    sel = [i for i, t in enumerate(w.lengths) if t <= CAP][:512]
    mask = np.zeros((512, CAP), dtype=np.int8)
    routes = np.full((512, CAP, 26, 6), -1, dtype=np.int8)
    sample_routes = w.routes  # one list of [T, 26, 6] arrays (each access builds it anew)
    for j, i in enumerate(sel):
        mask[j, :w.lengths[i]] = 1
        routes[j, :sample_routes[i].shape[0]] = sample_routes[i]
    return SimpleNamespace(lengths=w.lengths[sel].astype(np.int64), counts=w.counts[sel], mask=mask, routes=routes)


class Proto:
    """The parts of verl's DataProto that _balance_batch touches: .batch (dict of arrays), reorder, meta_info."""

    def __init__(self, batch):
        self.batch = batch
        self.non_tensor_batch = {}
        self.meta_info = {}

    def reorder(self, idx):
        for k in list(self.batch):
            self.batch[k] = self.batch[k][idx]


def balanced(step, **kw):
    """The batch after the adapter's _balance_batch on D ranks, and the trainer."""
    trainer = SimpleNamespace(actor_rollout_wg=None, _get_dp_size=lambda wg, role: D)
    balance = types.MethodType(verl.make_balance_batch(num_experts=64, moe_layers=MOE, layer_axis="moe", ep_ranks=EP,
                                                       stages=DS_STAGES, strict=True, **kw), trainer)
    proto = Proto({"attention_mask": step.mask, "routed_experts": step.routes, "index": np.arange(512)})
    metrics = {}
    balance(proto, metrics)
    return proto, trainer, metrics


def verl_count(lengths, max_token_len):
    """verl's own count for one rank, without a DP group: min(n, ceil(tokens / max_token_len))."""
    return min(len(lengths), -(-int(np.sum(lengths)) // max_token_len))


def peak_rank_load(counts, placement, parts):
    """Sum over micro-batches and MoE layers of the busiest EP rank's routed tokens (eq. 14 without 1 / C):
    what a plan's expert term balances."""
    l2p = np.asarray(placement.logical_to_physical)
    h = counts.shape[2] // EP
    total = 0
    for part in parts:
        load = counts[part].sum(axis=0)  # [L, E]
        per_rank = np.zeros((load.shape[0], EP), dtype=np.int64)
        for l in range(load.shape[0]):
            np.add.at(per_rank[l], l2p[l] // h, load[l])
        total += int(per_rank.max(axis=1).sum())
    return total


def test_rearrange_plans_every_ppo_mini_batch(step):
    """Every rank's chunk in 4 mini-batches of 32, contiguous and shuffled: each gets verl's count of
    micro-batches, exactly (its tests assert it), every sample once, micro-batches that hold the samples
    listed; the plans balance the busiest EP rank's load below the plain balancing's at the same count.
    Each rank's whole chunk needs R = 13 micro-batches, verl's count too: it is cut at the plan's rows."""
    proto, trainer, metrics = balanced(step, max_token_len=CAP)
    p = trainer.routepack_plan
    assert p.row_count == 13 and metrics["global_seqlen/routepack_fallback"] == 0
    verl.applied_plan = p  # what apply_in_actor leaves in the worker: local plans are scored at p's placement
    rearrange = verl.make_rearrange_micro_batches(num_experts=64, moe_layers=MOE, layer_axis="moe", ep_ranks=EP,
                                                  stages=DS_STAGES, strict=True)
    rng = np.random.default_rng(7)
    counts_seen, planned, plain = [], 0, 0
    try:
        for d in range(D):
            chunk = {k: v[d * 128:(d + 1) * 128] for k, v in proto.batch.items()}
            mbs, idx = rearrange(chunk, CAP)
            assert len(idx) == verl_count(step.lengths[chunk["index"]], CAP) == p.row_count
            assert [chunk["index"][i].tolist() for i in idx] == [list(c) for c in p.micro_batches()[d]]
            for order in (np.arange(128), rng.permutation(128)):
                for m in range(128 // MINI):
                    sub = {k: v[order[m * MINI:(m + 1) * MINI]] for k, v in chunk.items()}
                    mbs, idx = rearrange(sub, CAP)
                    lengths = step.lengths[sub["index"]]
                    assert len(idx) == verl_count(lengths, CAP)
                    counts_seen.append(len(idx))
                    assert sorted(i for part in idx for i in part) == list(range(MINI))
                    assert [mb["index"].tolist() for mb in mbs] == [sub["index"][part].tolist() for part in idx]
                    assert all(part == sorted(part) for part in idx)
                    assert max(int(lengths[part].sum()) for part in idx) <= verl.target_cap(lengths, len(idx), CAP)
                    c = step.counts[sub["index"]]
                    planned += peak_rank_load(c, p.placement, idx)
                    work = verl.workloads(lengths).tolist()
                    plain += peak_rank_load(c, p.placement, lpt_parts(work, len(idx)))
    finally:
        verl.applied_plan = None
    assert counts_seen == [7, 3, 3, 2, 4, 3, 4, 4, 7, 3, 3, 2, 3, 5, 3, 3, 7, 3, 2, 3, 3, 4, 4, 3, 7, 3, 2, 2,
                           3, 3, 5, 3]
    # The busiest EP rank's routed tokens summed over layers and micro-batches, at the step's placement:
    # 2.3% below the plain balancing of verl's workloads into the same counts.
    assert (planned, plain) == (1184339, 1212280)


def test_balance_batch_plans_the_static_micro_batch_size(step):
    """use_dynamic_bsz off (verl's default): ppo_micro_batch_size_per_gpu 4 is the plan's samples per
    cell, so every rank's contiguous chunks of 4 (prepare_micro_batches' chunk_tensordict) are the plan's
    cells, row by row, in every mini-batch of 32 per rank; the plan is routepack.plan's with
    samples_per_dp_slot 128 and samples_per_cell 4."""
    proto, trainer, metrics = balanced(step, micro_batch_size_per_gpu=4)
    p = trainer.routepack_plan
    assert p.row_count == 512 // (4 * D) == metrics["global_seqlen/routepack_rows"] == 32
    topo = json.loads(p.to_json())["topology"]
    assert (topo["samples_per_dp_slot"], topo["samples_per_cell"], "token_cap" in topo) == (128, 4, False)
    for d in range(D):
        chunk = proto.batch["index"][d * 128:(d + 1) * 128]
        cells = [chunk[i:i + 4].tolist() for i in range(0, 128, 4)]
        assert cells == [list(c) for c in p.micro_batches()[d]]
        assert proto.batch[verl.ROW_KEY][d * 128:(d + 1) * 128].tolist() == [r for r in range(32) for _ in range(4)]
    same = routepack.plan(step.lengths, step.counts, routepack.Topology(EP, D, None, None, stages=DS_STAGES,
                                                                        samples_per_dp_slot=128, samples_per_cell=4),
                          moe_layers=MOE)
    assert p.rows == same.rows and p.score == same.score
    # max_g U (eq. 15) 6.9% below the stacks' own balancing under the same counts (equal-size largest
    # differencing into cells of 4, the planner's karmarkar_karp baseline).
    kk = json.loads(p.to_json())["metrics"]["karmarkar_karp"]
    assert (round(p.score[0], 3), round(kk["score"][0], 3)) == (398.525, 428.071)


def test_balance_batch_keeps_the_ppo_mini_batches(step):
    """keep_minibatch=True (verl's _balance_batch): each global mini-batch of 128 (ppo_mini_batch_size,
    read from the trainer's config) is planned on its own over the 4 ranks, and each rank's k-th block
    of 32 is its share of mini-batch k in its plan's row order; every plan runs on the first one's
    placement (one placement for the step); rearrange_micro_batches cuts each block at its rows."""
    trainer = SimpleNamespace(actor_rollout_wg=None, _get_dp_size=lambda wg, role: D,
                              config=SimpleNamespace(actor_rollout_ref=SimpleNamespace(actor={"ppo_mini_batch_size":
                                                                                              128})))
    balance = types.MethodType(verl.make_balance_batch(num_experts=64, moe_layers=MOE, layer_axis="moe", ep_ranks=EP,
                                                       stages=DS_STAGES, strict=True, max_token_len=CAP), trainer)
    proto = Proto({"attention_mask": step.mask, "routed_experts": step.routes, "index": np.arange(512)})
    metrics = {}
    balance(proto, metrics, keep_minibatch=True)
    first = trainer.routepack_plan
    rearrange = verl.make_rearrange_micro_batches(num_experts=64, moe_layers=MOE, layer_axis="moe", ep_ranks=EP,
                                                  stages=DS_STAGES, strict=True)
    for k in range(4):
        lo = k * 128
        plan = routepack.plan(step.lengths[lo:lo + 128], step.counts[lo:lo + 128],
                              routepack.Topology(EP, D, None, CAP, stages=DS_STAGES, samples_per_dp_slot=32),
                              moe_layers=MOE, previous=first if k else None, budgets={"max_moves": 0} if k else None)
        assert (plan.logical_to_physical == first.logical_to_physical).all()
        for d in range(D):
            block = slice(d * 128 + k * 32, d * 128 + (k + 1) * 32)
            assert proto.batch["index"][block].tolist() == [lo + i for cell in plan.micro_batches()[d] for i in cell]
            rows = proto.batch[verl.ROW_KEY][block].tolist()
            assert rows == sorted(rows) and rows[-1] == plan.row_count - 1
            sub = {key: v[block] for key, v in proto.batch.items()}
            mbs, idx = rearrange(sub, CAP)
            # verl's count of each block is its plan's rows: the block is cut at them.
            assert len(idx) == plan.row_count
            assert [sub["index"][part].tolist() for part in idx] == [
                [lo + i for i in cell] for cell in plan.micro_batches()[d]]
    with pytest.raises(ValueError) as e:
        types.MethodType(verl.make_balance_batch(strict=True, max_token_len=CAP, ppo_mini_batch_size=100),
                         trainer)(Proto({"attention_mask": step.mask}), {}, keep_minibatch=True)
    assert str(e.value) == "keep_minibatch: the batch of 512 samples is not whole mini-batches of 100"
