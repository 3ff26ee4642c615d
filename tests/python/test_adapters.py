"""The stack adapters against their upstream contracts (slime 624b824a build_dp_schedule, NeMo-RL
7ea279ab SequencePacker, Megatron-LM d48bd6be get_groups_and_subsamples), with small inputs (the
batch rules and the CLI equality: test_adapter_contracts.py)."""

from types import SimpleNamespace

import json
import numpy as np
import pytest

import routepack
from routepack.adapters import megatron, nemo_rl, slime


def slime_inputs(seed=2, rollouts=10, cap=1024):
    """Rollouts of one or two samples (compact/subagent rollouts emit two), lengths 60..cap,
    replay routes [T, num_layers=4, top_k=2] int16 over 8 experts (layer 0 dense)."""
    rng = np.random.default_rng(seed)
    lengths, rollout_ids, routes = [], [], []
    for rid in range(rollouts):
        for _ in range(1 + (rid % 3 == 0)):
            t = int(rng.integers(60, cap))
            lengths.append(t)
            rollout_ids.append(100 + rid)
            r = rng.integers(0, 8, size=(t - 1, 4, 2)).astype(np.int16)
            r[:, 0, :] = 0  # slime keeps a row for the dense layer
            routes.append(r)
    return lengths, rollout_ids, routes


def slime_args(**kw):
    a = dict(use_dynamic_batch_size=True, max_tokens_per_gpu=1024, num_layers=4, moe_layer_freq=[0, 1, 1, 1],
             num_experts=8, expert_model_parallel_size=2, balance_data=False, micro_batch_size=None)
    a.update(kw)
    return SimpleNamespace(**a)


def check_slime_schedule(out, lengths, rollout_ids, gbs, dp, cap, multiple):
    partitions, mbi, nmb, gbs_per_step = out
    order = list(dict.fromkeys(rollout_ids))
    steps = len(order) // gbs
    assert gbs_per_step == [gbs] * steps and len(nmb) == steps
    kept = sorted(i for i, rid in enumerate(rollout_ids) if rid in set(order[:steps * gbs]))
    assert sorted(i for part in partitions for i in part) == kept  # every kept sample exactly once
    for r in range(dp):
        assert len(mbi[r]) == sum(nmb)  # every rank runs the same micro-batch count
        assert [i for mb in mbi[r] for i in mb] == list(range(len(partitions[r])))  # local indices tile the rank
        pos = 0
        for s, n in enumerate(nmb):
            assert n % multiple == 0
            step_rollouts = set(order[s * gbs:(s + 1) * gbs])
            for mb in mbi[r][pos:pos + n]:
                samples = [partitions[r][j] for j in mb]
                assert mb and sum(lengths[i] for i in samples) <= cap
                assert all(rollout_ids[i] in step_rollouts for i in samples)  # a step's samples stay in it
            pos += n


def test_slime_schedule_contract():
    lengths, rids, routes = slime_inputs()
    cfg = {"dp_size": 2, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
    out = slime.build_dp_schedule(slime_args(), cfg, lengths, global_batch_size=4, rollout_indices=rids,
                                  rollout_routed_experts=routes)
    check_slime_schedule(out, lengths, rids, 4, 2, 1024, 1)
    # Two steps of 4 rollouts; the last 2 rollouts are dropped, as upstream does.
    assert len(out[2]) == 2
    # The placement of step 0 is LPT on that step's routed-expert counts (MoE layers 1..3), refined
    # for the plan's layout when the plan says so (then it differs from LPT).
    p = slime.last_plans[0]
    order = list(dict.fromkeys(rids))[:4]
    idx = [i for rid in order for i, x in enumerate(rids) if x == rid]
    counts = routepack.counts_from_routes([routes[i] for i in idx], 8, moe_layers=[1, 2, 3])
    lpt = routepack.place(counts.sum(axis=0), 2, moe_layers=[1, 2, 3]).logical_to_physical
    refined = json.loads(p.to_json())["planner"]["placement_refinement"]["refined"]
    assert (lpt == p.logical_to_physical).all() != refined


def test_slime_vpp_multiple_and_cp():
    lengths, rids, routes = slime_inputs(seed=5, rollouts=16, cap=700)
    cfg = {"dp_size": 2, "cp_size": 2, "vpp_size": 2, "microbatch_group_size_per_vp_stage": 3}
    out = slime.build_dp_schedule(slime_args(max_tokens_per_gpu=350), cfg, lengths, global_batch_size=16,
                                  rollout_indices=rids, rollout_routed_experts=routes)
    check_slime_schedule(out, lengths, rids, 16, 2, 700, 3)
    # Without routes the schedule still holds (a lengths-only plan).
    out2 = slime.build_dp_schedule(slime_args(max_tokens_per_gpu=350), cfg, lengths, global_batch_size=16,
                                   rollout_indices=rids)
    check_slime_schedule(out2, lengths, rids, 16, 2, 700, 3)


def test_slime_errors():
    lengths, rids, routes = slime_inputs()
    cfg = {"dp_size": 2, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
    # Samples over the cap run alone (oversize alone); step 1's five samples then need 6 micro-batches:
    # too few samples for the multiple, upstream's AssertionError ("dynamic path: ...").
    with pytest.raises(AssertionError) as e:
        slime.build_dp_schedule(slime_args(max_tokens_per_gpu=500), cfg, lengths, global_batch_size=4,
                                rollout_indices=rids)
    assert str(e.value) == ("dynamic path: step 1's 5 samples cannot fill a multiple of dp_size * mb_group (2) "
                            "micro-batches: no rectangular layout exists: 2062 tokens at cap 500 need at least 3 rows "
                            "of 2 cells = 6 non-empty cells, but there are only 5 samples")
    # slime's own exception types for the same mistakes (AssertionError, as its asserts raise).
    with pytest.raises(AssertionError) as e:
        slime.build_dp_schedule(slime_args(), cfg, lengths, global_batch_size=11, rollout_indices=rids)
    assert str(e.value) == "num_rollouts (10) < global_batch_size (11); need at least one rollout per step."
    with pytest.raises(AssertionError) as e:
        slime.build_dp_schedule(slime_args(), {**cfg, "dp_size": 4}, [100, 100, 100], global_batch_size=3,
                                rollout_indices=[0, 1, 2])
    assert str(e.value) == "step 0: 3 samples < dp_size 4; each step needs at least one sample per rank."
    with pytest.raises(AssertionError) as e:
        slime.build_dp_schedule(slime_args(max_tokens_per_gpu=None), cfg, lengths, global_batch_size=4,
                                rollout_indices=rids)
    assert str(e.value) == "--use-dynamic-batch-size needs --max-tokens-per-gpu"
    # Upstream divides by global_batch_size: ZeroDivisionError, with a message that names it.
    with pytest.raises(ZeroDivisionError) as e:
        slime.build_dp_schedule(slime_args(), cfg, lengths, global_batch_size=0, rollout_indices=rids)
    assert str(e.value) == "global_batch_size is 0: it counts the rollouts of one training step (>= 1)"
    # Lengths are never truncated: 1.7 tokens is refused, 300.0 is 300.
    with pytest.raises(ValueError) as e:
        slime.build_dp_schedule(slime_args(), cfg, [300, 1.7, 200, 100], global_batch_size=4,
                                rollout_indices=[0, 1, 2, 3])
    assert str(e.value) == "total_lengths[1] = 1.7 is not a whole number of tokens"
    whole = slime.build_dp_schedule(slime_args(), cfg, [300.0, 250, 200, 100], global_batch_size=4,
                                    rollout_indices=[0, 1, 2, 3])
    assert whole == slime.build_dp_schedule(slime_args(), cfg, [300, 250, 200, 100], global_batch_size=4,
                                            rollout_indices=[0, 1, 2, 3])


def test_slime_moe_layer_freq_megatron_semantics():
    """moe_layer_freq as Megatron reads it: an integer N puts a MoE layer where layer % N == 0, a
    list (or its text) marks each layer; dense layers are neither planned nor handed a map."""
    def layers(freq, num_layers=4):
        return slime.moe_layers_of(SimpleNamespace(num_layers=num_layers, moe_layer_freq=freq))

    assert layers(2) == [0, 2]
    assert layers(3, 7) == [0, 3, 6]
    assert layers(1) == layers(None) == [0, 1, 2, 3]
    assert layers([0, 1, 1, 0]) == [1, 2]
    assert layers("2") == [0, 2]
    assert layers("[0]*1+[1]*3") == [1, 2, 3]
    assert layers("([1]*1+[0]*1)*2") == [0, 2]
    with pytest.raises(AssertionError) as e:
        layers([1, 1, 1])
    assert str(e.value) == "moe_layer_freq has 3 entries but num_layers is 4: one 0/1 entry per layer"
    with pytest.raises(ValueError, match="moe_layer_freq must be >= 1"):
        layers(0)
    with pytest.raises(ValueError, match="is not a list of integers built with"):
        layers("[__import__('os')]")

    # N = 2 on 4 layers: layers 1 and 3 are dense, their replay rows zeros (slime keeps a row for
    # every decoder layer). Hand-checked: 4 samples of 3 routed rows each, top-2 over 4 experts.
    lengths, rids = [4, 4, 4, 4], [0, 1, 2, 3]
    routes = []
    for i in range(4):
        r = np.zeros((3, 4, 2), dtype=np.int16)
        r[:, 0] = [2, 3]  # layer 0: experts 2 and 3 on every row
        r[:, 2] = [1, 2] if i < 2 else [1, 3]
        routes.append(r)
    args = slime_args(max_tokens_per_gpu=8, moe_layer_freq=2, num_experts=4)
    cfg = {"dp_size": 2, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
    slime.build_dp_schedule(args, cfg, lengths, global_batch_size=4, rollout_indices=rids,
                            rollout_routed_experts=routes)
    p = slime.last_plans[0]
    assert p.moe_layers == [0, 2] and p.physical_to_logical.shape == (2, 4)
    # Loads per expert: layer 0 {2: 12, 3: 12}, layer 2 {1: 12, 2: 6, 3: 6}; no dense row is expert 0.
    loads = np.array([[0, 0, 12, 12], [0, 12, 6, 6]])
    assert (routepack.counts_from_routes(routes, 4, moe_layers=[0, 2]).sum(axis=0) == loads).all()
    # The hook's maps cover the MoE layers only (0 and 2). Chunks that are not torch modules get
    # nothing applied (tests/python/test_torch_apply.py applies the hook to a Megatron model).
    chunk = FakeChunk([FakeLayer(n) for n in (1, 2, 3, 4)])
    slime.before_train_step_hook(args, 0, 0, [chunk], None, None)
    assert sorted(slime.current_physical_to_logical) == [0, 2]
    assert (slime.current_physical_to_logical[0] == p.physical_to_logical[0]).all()
    assert (slime.current_physical_to_logical[2] == p.physical_to_logical[1]).all()
    assert slime.last_apply is None
    # A plan without routes (lengths alone) places no expert: no layer gets a map.
    slime.build_dp_schedule(args, cfg, lengths, global_batch_size=4, rollout_indices=rids)
    slime.before_train_step_hook(args, 0, 0, [chunk], None, None)
    assert slime.current_physical_to_logical == {} and slime.last_apply is None


class FakeLayer:
    def __init__(self, number):
        self.layer_number = number


class FakeChunk:
    def __init__(self, layers):
        self.layers = layers


def test_slime_hook_gives_the_step_its_physical_to_logical(tmp_path):
    lengths, rids, routes = slime_inputs()
    cfg = {"dp_size": 2, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
    args = slime_args(routepack_plan_dir=str(tmp_path))
    slime.build_dp_schedule(args, cfg, lengths, global_batch_size=4, rollout_indices=rids,
                            rollout_routed_experts=routes)
    chunk = FakeChunk([FakeLayer(n) for n in (1, 2, 3, 4)])  # 1-based: layer 1 is the dense layer 0
    slime.before_train_step_hook(args, 0, 1, [chunk], None, None)
    p = slime.last_plans[1]
    assert sorted(slime.current_physical_to_logical) == [1, 2, 3]
    for l in range(3):
        assert (slime.current_physical_to_logical[l + 1] == p.physical_to_logical[l]).all()
    # From the plan files alone (a training rank in another process), the same rows.
    slime.last_plans.clear()
    slime.current_physical_to_logical.clear()
    slime.before_train_step_hook(args, 0, 1, [chunk], None, None)
    for l in range(3):
        assert (slime.current_physical_to_logical[l + 1] == p.physical_to_logical[l]).all()


def test_nemo_rl_packer_contract():
    rng = np.random.default_rng(6)
    lengths = [int(x) for x in rng.integers(50, 1000, size=30)]
    counts = rng.integers(0, 50, size=(30, 2, 8)).astype(np.int32)
    packer = nemo_rl.RoutePackPacker(1000, min_bin_count=4, bin_count_multiple=4, ep_ranks=2)
    packer.set_routing(counts, moe_layers=[1, 3])
    bins = packer.pack(lengths)
    assert len(bins) >= 4 and len(bins) % 4 == 0
    assert sorted(i for b in bins for i in b) == list(range(30))
    assert all(b and sum(lengths[i] for i in b) <= 1000 for b in bins)
    # NeMo-RL deals bins[shard::shards]: shard d runs the plan's rows of DP slot d, in order.
    p = packer.last_plan
    for d in range(4):
        assert bins[d::4] == p.micro_batches()[d]
    assert (p.logical_to_physical == routepack.place(counts.sum(axis=0), 2, moe_layers=[1, 3]).logical_to_physical).all()
    # bin_count_multiple 8 on 4 shards: an even row count.
    bins8 = nemo_rl.RoutePackPacker(1000, min_bin_count=4, bin_count_multiple=8, dp_slots=4).pack(lengths)
    assert len(bins8) % 8 == 0 and sorted(i for b in bins8 for i in b) == list(range(30))
    with pytest.raises(ValueError) as e:
        nemo_rl.RoutePackPacker(100, min_bin_count=2, bin_count_multiple=2).pack([50, 150, 20])
    assert str(e.value) == "Sequence length 150 exceeds bin capacity 100"
    with pytest.raises(ValueError, match="bin_count_multiple must be positive"):
        nemo_rl.RoutePackPacker(100, bin_count_multiple=0)


def test_nemo_rl_packer_upstream_edges():
    """NeMo-RL's own answers for an empty list and too few sequences (SequencePacker.pack /
    _adjust_bin_count at 7ea279ab), routing consumed by a failed call, lengths never truncated."""
    for kw in ({}, {"bin_count_multiple": 4}, {"min_bin_count": 0}):
        assert nemo_rl.RoutePackPacker(100, **kw).pack([]) == []
    msg = ("Cannot create {} bins with only {} sequences. Each bin must contain at least one sequence. Either reduce "
           "min_bin_count/bin_count_multiple or provide more sequences.")
    cases = [
        (dict(min_bin_count=2, bin_count_multiple=3), [], msg.format(3, 0)),
        (dict(min_bin_count=3), [50, 50], msg.format(3, 2)),
        (dict(bin_count_multiple=4), [50, 50], msg.format(4, 2)),
        # Five full sequences need five bins: eight at multiple 4 (two rows of four DP slots).
        (dict(bin_count_multiple=4), [100] * 5, msg.format(8, 5)),
    ]
    for kw, lengths, text in cases:
        with pytest.raises(ValueError) as e:
            nemo_rl.RoutePackPacker(100, **kw).pack(lengths)
        assert str(e.value) == text
    with pytest.raises(ValueError) as e:
        nemo_rl.RoutePackPacker(100).pack([10, 1.7, 30])
    assert str(e.value) == "sequence_lengths[1] = 1.7 is not a whole number of tokens"
    assert nemo_rl.RoutePackPacker(100).pack([60.0, 50, 40]) == nemo_rl.RoutePackPacker(100).pack([60, 50, 40])
    # A call that raises consumes set_routing's counts: the next call of the same N is lengths-only.
    lengths = [60, 50, 40, 30]
    counts = np.zeros((4, 1, 4), dtype=np.int32)
    counts[:, 0, 0] = [118, 98, 78, 58]
    packer = nemo_rl.RoutePackPacker(100, bin_count_multiple=2, ep_ranks=2)
    packer.set_routing(counts, moe_layers=[0])
    with pytest.raises(ValueError, match="Sequence length 150 exceeds bin capacity 100"):
        packer.pack([60, 150, 40, 30])
    bins = packer.pack(lengths)
    assert packer.last_plan.num_experts == 1 and packer.last_plan.moe_layers == [0]  # no routes
    assert bins == nemo_rl.RoutePackPacker(100, bin_count_multiple=2, ep_ranks=2).pack(lengths)
    packer.set_routing(counts, moe_layers=[0])
    packer.pack(lengths)
    assert packer.last_plan.num_experts == 4


def test_nemo_rl_installed_packers_share_routing_and_chain():
    """shard_by_batch_size builds its packer inside each call and packs its chunks in order: the
    packers install() builds take the next rows of set_routing's counts per chunk, chain through
    nemo_rl.last_plan across calls, and plan by length once the counts are used up."""
    rng = np.random.default_rng(6)
    lengths = [int(x) for x in rng.integers(50, 1000, size=48)]
    counts = rng.integers(0, 50, size=(48, 2, 8)).astype(np.int32)
    own = SimpleNamespace(pack=lambda sequence_lengths: [[9]])
    module = SimpleNamespace(get_packer=lambda *a, **kw: own)
    new = nemo_rl.install(module, ep_ranks=2, max_moves=3)
    ref = nemo_rl.RoutePackPacker(1000, min_bin_count=4, bin_count_multiple=4, ep_ranks=2, max_moves=3)
    nemo_rl.last_plan = None
    nemo_rl.set_routing(counts[:32], [1, 3])
    packer = new("modified_first_fit_decreasing", 1000, min_bin_count=4, bin_count_multiple=4)
    for lo in (0, 16):  # one shard_by_batch_size call, two chunks of 16
        ref.set_routing(counts[lo:lo + 16], [1, 3])
        assert packer.pack(lengths[lo:lo + 16]) == ref.pack(lengths[lo:lo + 16])
        assert (nemo_rl.last_plan.logical_to_physical == ref.last_plan.logical_to_physical).all()
        assert packer.last_plan is nemo_rl.last_plan
    assert nemo_rl._routing is None and 0 < nemo_rl.last_plan.migration["moves"] <= 3
    # The next call's packer starts from the chain.
    nemo_rl.set_routing(counts[32:], [1, 3])
    ref.set_routing(counts[32:], [1, 3])
    assert new("x", 1000, min_bin_count=4, bin_count_multiple=4).pack(lengths[32:]) == ref.pack(lengths[32:])
    assert nemo_rl.last_plan.migration["moves"] == ref.last_plan.migration["moves"] <= 3
    # Without counts left: lengths only; a chunk larger than what is left is refused, the rest dropped.
    later = new("x", 1000, min_bin_count=4, bin_count_multiple=4)
    assert later.pack(lengths[:16]) == nemo_rl.RoutePackPacker(1000, min_bin_count=4, bin_count_multiple=4,
                                                              ep_ranks=2).pack(lengths[:16])
    assert nemo_rl.last_plan.num_experts == 1
    nemo_rl.set_routing(counts[:20], [1, 3])
    later.pack(lengths[:16])
    with pytest.raises(ValueError) as e:
        later.pack(lengths[16:32])
    assert str(e.value) == "set_routing gave counts for 4 more sequences; pack got 16"
    assert nemo_rl._routing is None
    # A hand-built packer keeps its own routing and chain.
    nemo_rl.set_routing(counts[:16], [1, 3])
    mine = nemo_rl.RoutePackPacker(1000, min_bin_count=4, bin_count_multiple=4, ep_ranks=2)
    mine.pack(lengths[:16])
    assert mine.last_plan.num_experts == 1 and nemo_rl._routing is not None
    nemo_rl.last_plan, nemo_rl._routing = None, None


def test_megatron_scheduler_upstream_edges():
    """Megatron-Core's answers (DpBalancedScheduler at d48bd6be): no samples give no micro-batches,
    too few samples is its AssertionError; routing consumed by a failed call; lengths whole."""
    sched = megatron.RoutePackScheduler(100, 1, 2, None)
    assert sched.get_groups_and_subsamples([]) == []
    with pytest.raises(AssertionError) as e:
        sched.get_groups_and_subsamples([(7, 40)])
    assert str(e.value) == ("Not enough samples to move: no rectangular layout exists: 1 samples cannot fill 2 DP "
                            "slots")
    with pytest.raises(ValueError) as e:
        sched.get_groups_and_subsamples([(0, 40), (1, 1.7)])
    assert str(e.value) == "sample_id_seqlens[1][1] = 1.7 is not a whole number of tokens"
    seqlens = [(0, 60), (1, 50), (2, 40), (3, 30)]
    counts = np.zeros((4, 1, 4), dtype=np.int32)
    counts[:, 0, 1] = [118, 98, 78, 58]
    sched = megatron.RoutePackScheduler(100, 1, 2, None, ep_ranks=2)
    sched.set_routing(counts, moe_layers=[3])
    with pytest.raises(ValueError, match="is not a whole number of tokens"):
        sched.get_groups_and_subsamples([(0, 60), (1, 1.5), (2, 40), (3, 30)])
    groups = sched.get_groups_and_subsamples(seqlens)
    assert sched.last_plan.num_experts == 1 and sched.last_plan.moe_layers == [0]  # no routes
    assert groups == megatron.RoutePackScheduler(100, 1, 2, None, ep_ranks=2).get_groups_and_subsamples(seqlens)
    sched.set_routing(counts, moe_layers=[3])
    sched.get_groups_and_subsamples(seqlens)
    assert sched.last_plan.moe_layers == [3] and sched.last_plan.num_experts == 4


def test_megatron_scheduler_contract():
    rng = np.random.default_rng(7)
    n = 26
    seqlens = [(1000 + i, int(x)) for i, x in enumerate(rng.integers(40, 900, size=n))]
    sched = megatron.RoutePackScheduler(450, 2, 3, 2)
    groups = sched.get_groups_and_subsamples(seqlens)
    assert len(groups) % 2 == 0  # microbatch_group_size_per_vp_stage
    seen = []
    for mb in groups:
        assert len(mb) == 2 * 3  # one entry per DP x CP rank
        for d in range(3):
            assert mb[2 * d] == mb[2 * d + 1]  # the CP ranks of one DP rank share its group
            assert mb[2 * d] and sum(seqlens[i][1] for i in mb[2 * d]) <= 900
            seen.extend(mb[2 * d])
    assert sorted(seen) == list(range(n))  # indices into sample_id_seqlens, each exactly once
    assert sched.get_required_sample_keys()[0] == "tokens"
    # max_num_seqs is planned for: one sequence per group gives two micro-batches.
    assert megatron.RoutePackScheduler(5000, 1, 1, None, max_num_seqs=1).get_groups_and_subsamples(
        [(0, 10), (1, 20)]) == [[[1]], [[0]]]


def test_placement_applied_in_a_megatron_style_moe_layer():
    """Reordering the router's probs / routing_map columns with [:, physical_to_logical] after
    routing sends each token to the physical slot (and EP rank) the placement gives its expert;
    router weights and replay indices stay logical."""
    rng = np.random.default_rng(1)
    T, E, P, k = 40, 8, 2, 2
    loads = rng.integers(0, 100, size=(1, E))
    pl = routepack.place(loads, P)
    p2l, l2p = pl.physical_to_logical[0], pl.logical_to_physical[0]
    logits = rng.normal(size=(T, E))
    top = np.argsort(-logits, axis=1)[:, :k]  # logical experts (replay indices stay logical)
    routing_map = np.zeros((T, E), dtype=bool)
    np.put_along_axis(routing_map, top, True, axis=1)
    probs = np.where(routing_map, np.exp(logits), 0.0)
    phys_map, phys_probs = routing_map[:, p2l], probs[:, p2l]
    H = E // P
    for t in range(T):
        for e in top[t]:
            v = l2p[e]
            assert phys_map[t, v] and phys_probs[t, v] == probs[t, e]
            assert v // H == pl.logical_to_physical[0, e] // H  # the EP rank the placement chose
    assert phys_map.sum() == routing_map.sum()


class FakeDataProto:
    """The parts of verl's DataProto that _balance_batch touches: .batch (dict of arrays), reorder."""

    def __init__(self, batch):
        self.batch = batch
        self.meta_info = {}

    def reorder(self, idx):
        for k in list(self.batch):
            self.batch[k] = self.batch[k][idx]

    def chunk(self, chunks):
        n = len(self.batch["attention_mask"]) // chunks
        return [{k: v[c * n:(c + 1) * n] for k, v in self.batch.items()} for c in range(chunks)]


class FakeTrainer:
    actor_rollout_wg = None

    def __init__(self, dp):
        self.dp = dp

    def _get_dp_size(self, wg, role):
        assert role == "actor"
        return self.dp


def test_verl_balance_then_rearrange():
    import types

    from routepack.adapters import verl

    rng = np.random.default_rng(3)
    B, S, L, K, E = 16, 100, 3, 2, 8
    mask = np.zeros((B, S), dtype=np.int64)
    mask[:, :90] = 1  # every sample 90 tokens: cap 180 holds two per cell, so every slot gets 4
    routes = rng.integers(0, E, size=(B, S, L, K)).astype(np.int16)
    routes[:, 90:] = -1
    batch = FakeDataProto({"attention_mask": mask.copy(), "routed_experts": routes.copy(),
                           "uid": np.arange(B)})
    trainer = FakeTrainer(4)
    trainer._balance_batch = types.MethodType(
        verl.make_balance_batch(max_token_len=180, num_experts=E, moe_layers=[1, 2], ep_ranks=2), trainer)
    metrics = {}
    trainer._balance_batch(batch, metrics)
    p = trainer.routepack_plan
    assert metrics["global_seqlen/routepack_rows"] == p.row_count == 2
    assert batch.meta_info[verl.PLAN_KEY] == p.to_json()  # for verl.apply_in_actor on the workers
    # DP-slot-major, then by row: the equal chunks are exactly the plan's DP partitions.
    chunks = batch.chunk(4)
    for d, local in enumerate(chunks):
        assert local["uid"].tolist() == p.dp_partitions()[d]
        mbs, idx = verl.rearrange_micro_batches(local, max_token_len=180, num_batches_divided_by=2)
        assert len(mbs) == p.row_count  # every rank the same micro-batch count
        assert [local["uid"][i].tolist() for i in idx] == [list(c) for c in p.micro_batches()[d]]
        assert all(mb["attention_mask"].sum() <= 180 for mb in mbs)
    # The placement follows the masked routed_experts counts.
    counts = routepack.counts_from_routes(routes, E, moe_layers=[1, 2], valid=mask.astype(bool))
    assert (p.logical_to_physical == routepack.place(counts.sum(axis=0), 2, moe_layers=[1, 2]).logical_to_physical).all()
    # Another count than the plan's rows (num_batches_divided_by 3: 3 micro-batches): the chunk is
    # planned locally; heaviest micro-batch in the middle (use_dynamic_bsz_balance).
    mbs, idx = verl.rearrange_micro_batches(chunks[0], max_token_len=180, num_batches_divided_by=3)
    assert [len(i) for i in idx] == [1, 2, 1] and sorted(i for m in idx for i in m) == [0, 1, 2, 3]
    # max_token_len 100: min(4 samples, ceil(360 / 100)) = 4, one sample each; equal workloads rank by
    # first index, so the order is 1, 3, 2, 0.
    mbs, idx = verl.rearrange_micro_batches(chunks[0], max_token_len=100)
    assert idx == [[1], [3], [2], [0]] and [mb["uid"].tolist() for mb in mbs] == [[chunks[0]["uid"][i]] for i in
                                                                                    (1, 3, 2, 0)]
    # A batch never planned: min(16, ceil(1440 / 180)) = 8 micro-batches of exactly 180 tokens.
    mbs, idx = verl.rearrange_micro_batches({"attention_mask": mask}, max_token_len=180)
    assert len(idx) == 8 and [int(mb["attention_mask"].sum()) for mb in mbs] == [180] * 8
    assert sorted(i for m in idx for i in m) == list(range(16))


def test_verl_rearrange_plans_a_batch_whose_rows_are_not_a_planned_chunk():
    """Rows that are not integers running 0, 1, ... in order with exactly verl's count are not used:
    the batch is planned locally (min(4, ceil(20 / 10)) = 2 micro-batches of two 5-token samples)."""
    from routepack.adapters import verl

    mask = np.zeros((4, 10), dtype=np.int64)
    mask[:, :5] = 1
    for rows in (np.array([0.0, 1.7, 1.0, 2.0]), np.array([0.0, 0.0, 1.0, 1.0]), np.array([2, 2, 0, 0]),
                 np.array([1, 1, 0, 0]), np.array([0, 0, 0, 2])):
        mbs, idx = verl.rearrange_micro_batches({"attention_mask": mask, verl.ROW_KEY: rows}, max_token_len=10)
        assert len(idx) == 2 and sorted(i for m in idx for i in m) == [0, 1, 2, 3]
        assert [int(mb["attention_mask"].sum()) for mb in mbs] == [10, 10]
    # Integer rows 0, 0, 1, 1: a planned chunk with verl's count, cut at its rows.
    mbs, idx = verl.rearrange_micro_batches({"attention_mask": mask, verl.ROW_KEY: np.array([0, 0, 1, 1], np.int32)},
                                            max_token_len=10)
    assert idx == [[0, 1], [2, 3]] and [mb["attention_mask"].sum() for mb in mbs] == [10, 10]
    # The same rows with 3 micro-batches asked (min_num_micro_batch): planned locally, 5 + 5, 5, 5.
    mbs, idx = verl.rearrange_micro_batches({"attention_mask": mask, verl.ROW_KEY: np.array([0, 0, 1, 1])},
                                            max_token_len=10, min_num_micro_batch=3)
    assert [len(i) for i in idx] == [1, 2, 1]


def test_verl_count_rule_and_groups():
    """verl's count: min(groups, ceil(tokens / max_token_len)), raised to min_num_micro_batch, rounded up
    to num_batches_divided_by; groups of force_group_size stay whole; upstream's AssertionErrors."""
    from routepack.adapters import verl

    lengths = [10, 20, 30, 40, 50, 60, 70, 80]
    mask = np.zeros((8, 100), dtype=np.int64)
    for i, t in enumerate(lengths):
        mask[i, :t] = 1
    batch = {"attention_mask": mask}
    count = {}
    for kw in ({}, {"min_num_micro_batch": 3}, {"num_batches_divided_by": 3}, {"min_num_micro_batch": 5,
                                                                                 "num_batches_divided_by": 2}):
        count[tuple(kw)] = len(verl.rearrange_micro_batches(batch, 200, **kw)[1])
    assert count == {(): 2, ("min_num_micro_batch",): 3, ("num_batches_divided_by",): 3,
                     ("min_num_micro_batch", "num_batches_divided_by"): 6}
    # Pairs (force_group_size 2) of 30, 70, 110, 150 tokens into 2 micro-batches of 180 each; the
    # heavier workload (24576 t + t^2: samples 0, 1, 6, 7) first, then 2..5.
    mbs, idx = verl.rearrange_micro_batches(batch, 200, force_group_size=2)
    assert idx == [[0, 1, 6, 7], [2, 3, 4, 5]]
    mbs, idx = verl.rearrange_micro_batches(batch, 200, force_group_size=2, use_dynamic_bsz_balance=False)
    assert sorted(idx) == [[0, 1, 6, 7], [2, 3, 4, 5]]
    with pytest.raises(AssertionError) as e:
        verl.rearrange_micro_batches(batch, 200, force_group_size=3)
    assert str(e.value) == "Batch size 8 must be divisible by force_group_size 3"
    with pytest.raises(AssertionError) as e:
        verl.rearrange_micro_batches(batch, 200, min_num_micro_batch=5, force_group_size=2)
    assert str(e.value) == "5 micro-batches for 4 groups of force_group_size 2"
    with pytest.raises(AssertionError) as e:
        verl.rearrange_micro_batches(batch, 99)
    assert str(e.value) == "max_token_len must be greater than the sequence length. Got max_token_len=99 and " \
                           "max_seq_len=100"
