"""Every adapter's fallback, each failure forced for real: routes the planner refuses (an expert id
outside the model, counts of the wrong shape) and a time limit the planner runs past. Then one warning
names the reason and the stack's own answer comes back: the original the adapter replaced (kept by
install, or handed in), else the adapter's own plain answer, checked value for value; the strict flag
raises instead. Upstream's own errors are never answered by the fallback. verl's fallback under a DP
group answers with the count all ranks agreed on, without a second all-reduce (2 ranks, gloo)."""

import datetime
import logging
import types
from types import SimpleNamespace

import numpy as np
import pytest

from gloo_ranks import require_gloo, run_ranks
from routepack.adapters import megatron, nemo_rl, slime, verl

LENGTHS = [10, 20, 30, 40, 50, 60, 70, 80]


def warnings_of(caplog, name):
    return [r.getMessage() for r in caplog.records if r.name == name and r.levelno == logging.WARNING]


def verl_batch(bad_routes=False):
    """8 samples of LENGTHS tokens in a width of 100; routed_experts [8, 100, 1, 1] over 4 experts,
    sample 0's first token routed to expert 7 when bad_routes."""
    mask = np.zeros((8, 100), dtype=np.int64)
    for i, t in enumerate(LENGTHS):
        mask[i, :t] = 1
    routes = np.where(mask[:, :, None, None] == 1, np.arange(100)[None, :, None, None] % 4, -1).astype(np.int16)
    if bad_routes:
        routes[0, 0, 0, 0] = 7
    return {"attention_mask": mask, "routed_experts": routes}


# The adapter's plain balancing of LENGTHS into 2 micro-batches (largest workload first to the
# lightest): {20, 30, 50, 80} and {10, 40, 60, 70}, 180 tokens each; equal workloads, so the one
# with the later first index leads.
PLAIN_TWO = [[1, 2, 4, 7], [0, 3, 5, 6]]
ROUTES_REFUSED = ("verl rearrange_micro_batches: RoutePack planning failed (InputError: routes[0, 0, 0, 0] = 7 is "
                  "outside 0..3 (-1 = no route)); answering with ")
TIMED_OUT = "RoutePack planning failed (TimeoutError: planning ran past time_limit_s = 1e-09 s); answering with "


def test_verl_rearrange_falls_back_to_the_plain_balancing(caplog):
    rearrange = verl.make_rearrange_micro_batches(num_experts=4, moe_layers=[0], ep_ranks=2)
    caplog.set_level(logging.WARNING)
    mbs, idx = rearrange(verl_batch(bad_routes=True), 200)
    assert idx == PLAIN_TWO and [int(mb["attention_mask"].sum()) for mb in mbs] == [180, 180]
    assert warnings_of(caplog, "routepack.adapters.verl") == [ROUTES_REFUSED + "the adapter's plain balancing"]
    # The same batch with good routes is planned (no warning), into verl's 2 micro-batches.
    caplog.clear()
    mbs, idx = rearrange(verl_batch(), 200)
    assert len(idx) == 2 and sorted(i for m in idx for i in m) == list(range(8))
    assert warnings_of(caplog, "routepack.adapters.verl") == []
    with pytest.raises(ValueError) as e:
        verl.make_rearrange_micro_batches(num_experts=4, moe_layers=[0], strict=True)(verl_batch(bad_routes=True), 200)
    assert str(e.value) == "routes[0, 0, 0, 0] = 7 is outside 0..3 (-1 = no route)"
    # Past the time limit (the planner is cancelled at its first event): the plain balancing, or
    # TimeoutError when strict.
    caplog.clear()
    mbs, idx = verl.make_rearrange_micro_batches(time_limit_s=1e-9)(verl_batch(), 200)
    assert idx == PLAIN_TWO
    assert warnings_of(caplog, "routepack.adapters.verl") == [
        "verl rearrange_micro_batches: " + TIMED_OUT + "the adapter's plain balancing"]
    with pytest.raises(TimeoutError) as e:
        verl.make_rearrange_micro_batches(time_limit_s=1e-9, strict=True)(verl_batch(), 200)
    assert str(e.value) == "planning ran past time_limit_s = 1e-09 s"
    # Upstream's own AssertionError is raised, never answered by the fallback.
    with pytest.raises(AssertionError):
        rearrange(verl_batch(bad_routes=True), 99)
    with pytest.raises(ValueError) as e:
        verl.make_rearrange_micro_batches(time_limit_s=0)
    assert str(e.value) == "time_limit_s must be a positive number of seconds or None, not 0"


def test_verl_rearrange_falls_back_to_the_original_install_kept(caplog):
    calls = []

    def original(batch, max_token_len, dp_group=None, num_batches_divided_by=None, same_micro_num_in_dp=True,
                 min_num_micro_batch=None, use_dynamic_bsz_balance=True, force_group_size=1):
        calls.append((max_token_len, dp_group, num_batches_divided_by, min_num_micro_batch, force_group_size))
        return "verl's micro-batches", [[0]]

    module = SimpleNamespace(rearrange_micro_batches=original)
    importer = SimpleNamespace(rearrange_micro_batches=original)
    installed = verl.install(module, importer, num_experts=4, moe_layers=[0])
    assert module.rearrange_micro_batches is installed is importer.rearrange_micro_batches
    caplog.set_level(logging.WARNING)
    # Upstream's count is passed as min_num_micro_batch (2 rounded up to num_batches_divided_by 3) and
    # no DP group: the original answers with the count already agreed, without a second all-reduce.
    assert installed(verl_batch(bad_routes=True), 200, dp_group="group", num_batches_divided_by=3) == \
        ("verl's micro-batches", [[0]])
    assert calls == [(200, None, 3, 3, 1)]
    assert warnings_of(caplog, "routepack.adapters.verl") == [ROUTES_REFUSED + "verl's own rearrange_micro_batches"]
    # Installing again keeps upstream's function, not the adapter, as the original.
    assert verl.install(module)._routepack_original is original


class OwnTrainer:
    """A trainer class with verl's _balance_batch signature (it records the call and reverses the batch)."""

    actor_rollout_wg = None
    calls = []

    def _get_dp_size(self, wg, role):
        return 2

    def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        OwnTrainer.calls.append((logging_prefix, keep_minibatch))
        batch.reorder(np.arange(len(batch.batch["attention_mask"]))[::-1])


class Proto:
    def __init__(self, batch, uid=None):
        self.batch = batch
        self.non_tensor_batch = {} if uid is None else {"uid": np.asarray(uid)}
        self.meta_info = {}

    def reorder(self, idx):
        for k in list(self.batch):
            self.batch[k] = self.batch[k][idx]
        for k in list(self.non_tensor_batch):
            self.non_tensor_batch[k] = self.non_tensor_batch[k][idx]


def test_verl_balance_batch_falls_back_to_verls_own(caplog):
    caplog.set_level(logging.WARNING)
    settings = dict(max_token_len=200, num_experts=4, moe_layers=[0], ep_ranks=2)
    # The trainer class's own _balance_batch answers.
    trainer = OwnTrainer()
    trainer._balance_batch = types.MethodType(verl.make_balance_batch(ppo_mini_batch_size=len(LENGTHS), **settings),
                                              trainer)
    batch, metrics = Proto(verl_batch(bad_routes=True)), {}
    trainer._balance_batch(batch, metrics, "seq", True)
    assert OwnTrainer.calls == [("seq", True)] and metrics == {"seq/routepack_fallback": 1}
    assert batch.batch["attention_mask"].sum(-1).tolist() == LENGTHS[::-1]
    assert verl.ROW_KEY not in batch.batch and batch.meta_info == {} and not hasattr(trainer, "routepack_plan")
    assert warnings_of(caplog, "routepack.adapters.verl") == [
        "verl _balance_batch: RoutePack planning failed (InputError: routes[0, 0, 0, 0] = 7 is outside 0..3 (-1 = no "
        "route)); answering with the trainer class's own _balance_batch"]
    # install_balance_batch keeps the instance's method as the original.
    recorded = []
    holder = SimpleNamespace(actor_rollout_wg=None, _get_dp_size=lambda wg, role: 2,
                             _balance_batch=lambda *a: recorded.append(a))
    verl.install_balance_batch(holder, **settings)
    holder._balance_batch(batch, metrics)
    assert recorded == [(batch, metrics, "global_seqlen", False)]
    verl.install_balance_batch(holder, **settings)  # installed again: the original stays the trainer's own
    holder._balance_batch(batch, metrics, "again")
    assert recorded[1:] == [(batch, metrics, "again", False)]
    # Strict: the planner's error; keep_minibatch without a mini-batch size to read.
    strict = types.MethodType(verl.make_balance_batch(strict=True, **settings), trainer)
    with pytest.raises(ValueError, match="is outside 0..3"):
        strict(Proto(verl_batch(bad_routes=True)), {})
    with pytest.raises(ValueError) as e:
        strict(Proto(verl_batch()), {}, "seq", True)
    assert str(e.value) == ("keep_minibatch needs the PPO mini-batch size: give ppo_mini_batch_size, or a trainer "
                            "whose config.actor_rollout_ref.actor has ppo_mini_batch_size")
    # verl's own AssertionError for a batch D does not divide is raised, not answered.
    with pytest.raises(AssertionError) as e:
        trainer._balance_batch(Proto({k: v[:7] for k, v in verl_batch().items()}), {})
    assert str(e.value) == "7 % 2 != 0"


def test_verl_balance_batch_plain_fallback(caplog):
    """No original at hand: equal chunks by workload (largest first to the lighter rank with room), or
    whole uid groups with the PrefixGrouper, which the plan itself does not keep."""
    trainer = SimpleNamespace(actor_rollout_wg=None, _get_dp_size=lambda wg, role: 2)
    balance = types.MethodType(verl.make_balance_batch(max_token_len=200, time_limit_s=1e-9), trainer)
    batch, metrics = Proto(verl_batch()), {}
    with caplog.at_level(logging.WARNING):
        balance(batch, metrics)
    assert warnings_of(caplog, "routepack.adapters.verl") == [
        "verl _balance_batch: " + TIMED_OUT + "the adapter's plain balancing"]
    # 80 -> 0, 70 -> 1, 60 -> 1, 50 -> 0, 40 -> 1, 30 -> 0, 20 -> 0 (rank 1 is full), 10 -> 1.
    assert batch.batch["attention_mask"].sum(-1).tolist() == [20, 30, 50, 80, 10, 40, 60, 70]
    assert metrics == {"global_seqlen/routepack_fallback": 1}
    trainer.use_prefix_grouper = True
    batch = Proto(verl_batch(), uid=["a", "a", "b", "b", "c", "c", "d", "d"])
    balance = types.MethodType(verl.make_balance_batch(max_token_len=200), trainer)
    balance(batch, {})
    # Groups of 30, 70, 110, 150 tokens: {d, a} and {c, b}, each rank two whole groups.
    assert batch.non_tensor_batch["uid"].tolist() == ["a", "a", "d", "d", "b", "b", "c", "c"]
    strict = types.MethodType(verl.make_balance_batch(max_token_len=200, strict=True), trainer)
    with pytest.raises(ValueError) as e:
        strict(Proto(verl_batch(), uid=list("aabbccdd")), {})
    assert str(e.value) == ("use_prefix_grouper keeps each uid group on one DP rank; the RoutePack plan balances "
                            "samples, not groups")



def _rank(rank, port):
    """Rank 0 holds 8 samples (2 micro-batches at 200 tokens), rank 1 the first 4 (1 micro-batch) with
    routes the planner refuses: both run verl's count, the maximum (2), rank 1 through the fallback."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=30))
    batch = verl_batch(bad_routes=rank == 1)
    if rank == 1:
        batch = {k: v[:4] for k, v in batch.items()}
    rearrange = verl.make_rearrange_micro_batches(num_experts=4, moe_layers=[0])
    first = rearrange({k: torch.as_tensor(v) for k, v in batch.items()}, 200, dp_group=dist.group.WORLD)[1]
    second = rearrange(batch, 200, dp_group=dist.group.WORLD, same_micro_num_in_dp=False)[1]
    return first, second


def test_verl_fallback_keeps_the_dp_groups_count(tmp_path):
    require_gloo()
    results = run_ranks(_rank, 2, tmp_path)
    assert [r[0] for r in results] == ["ok", "ok"], results
    assert len(results[0][1]) == 2 and sorted(i for m in results[0][1] for i in m) == list(range(8))
    # Rank 1: 100 tokens, its own count 1, the group's 2: the plain balancing of 10, 20, 30, 40 ({40, 10}
    # and {30, 20}, the heavier workload first).
    assert results[1][1] == [[0, 3], [1, 2]]
    # Without same_micro_num_in_dp each rank keeps its own count (and nothing is all-reduced).
    assert len(results[0][2]) == 2 and results[1][2] == [[0, 1, 2, 3]]


def slime_routes(lengths, bad=False):
    """slime's replay arrays [t - 1, 4, 2] over 8 experts on 4 layers (layer 0 dense); expert 9 in
    sample 0 when bad."""
    out = []
    for i, t in enumerate(lengths):
        r = (np.arange((t - 1) * 8).reshape(t - 1, 4, 2) % 8).astype(np.int16)
        r[:, 0] = 0
        if bad and i == 0:
            r[0, 1, 0] = 9
        out.append(r)
    return out


def slime_args(**kw):
    a = dict(use_dynamic_batch_size=True, max_tokens_per_gpu=100, num_layers=4, moe_layer_freq=[0, 1, 1, 1],
             num_experts=8, expert_model_parallel_size=2, micro_batch_size=None)
    a.update(kw)
    return SimpleNamespace(**a)


CFG = {"dp_size": 2, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}
SLIME_LENGTHS = [60, 50, 40, 30]
SLIME_REFUSED = ("slime build_dp_schedule: RoutePack planning failed (InputError: routes[0][0, 1, 0] = 9 is outside "
                 "0..7 (-1 = no route)); answering with ")


def test_slime_falls_back_to_the_plain_schedule(caplog, tmp_path):
    caplog.set_level(logging.WARNING)
    args = slime_args(routepack_plan_dir=str(tmp_path))
    slime.build_dp_schedule(args, CFG, SLIME_LENGTHS, global_batch_size=4, rollout_indices=[0, 1, 2, 3],
                            rollout_routed_experts=slime_routes(SLIME_LENGTHS))
    assert (tmp_path / "step_0.json").exists() and len(slime.last_plans) == 1
    out = slime.build_dp_schedule(args, CFG, SLIME_LENGTHS, global_batch_size=4, rollout_indices=[0, 1, 2, 3],
                                  rollout_routed_experts=slime_routes(SLIME_LENGTHS, bad=True))
    # First fit decreasing under 100 tokens: {60, 40} and {50, 30}, dealt round-robin.
    assert out == ([[0, 2], [1, 3]], [[[0, 1]], [[0, 1]]], [1], [4])
    assert warnings_of(caplog, "routepack.adapters.slime") == [SLIME_REFUSED + "the adapter's plain schedule"]
    # The call keeps no plan: the hook keeps the model's placement (one warning), or raises when strict.
    assert slime.last_plans == [] and not (tmp_path / "step_0.json").exists()
    caplog.clear()
    slime.before_train_step_hook(args, 0, 0, [], None, None)
    assert slime.last_apply is None and warnings_of(caplog, "routepack.adapters.slime") == [
        "no RoutePack plan for step 0 (build_dp_schedule answered with slime's own schedule, or "
        "args.routepack_plan_dir is unset): the model keeps its placement"]
    with pytest.raises(ValueError) as e:
        slime.before_train_step_hook(slime_args(routepack_plan_dir=str(tmp_path), routepack_strict=True), 0, 0, [],
                                     None, None)
    assert str(e.value) == f"no RoutePack plan for step 0: {tmp_path / 'step_0.json'} does not exist"
    with pytest.raises(ValueError, match="is outside 0..7"):
        slime.build_dp_schedule(slime_args(routepack_strict=True), CFG, SLIME_LENGTHS, global_batch_size=4,
                                rollout_indices=[0, 1, 2, 3], rollout_routed_experts=slime_routes(SLIME_LENGTHS, True))
    # Past the time limit: the plain static chunks of micro_batch_size 2.
    caplog.clear()
    static = dict(use_dynamic_batch_size=False, routepack_time_limit_s=1e-9)
    out = slime.build_dp_schedule(slime_args(micro_batch_size=2, **static), CFG, SLIME_LENGTHS, global_batch_size=4,
                                  rollout_indices=[0, 1, 2, 3])
    assert out == ([[0, 1], [2, 3]], [[[0, 1]], [[0, 1]]], [1], [4])
    assert warnings_of(caplog, "routepack.adapters.slime") == [
        "slime build_dp_schedule: " + TIMED_OUT + "the adapter's plain schedule"]
    # slime's own AssertionError for a static count off the multiple is raised as it is.
    with pytest.raises(AssertionError, match=r"static path: num_mbs \(3\)"):
        slime.build_dp_schedule(slime_args(micro_batch_size=3, **static), CFG, [5] * 8, global_batch_size=8,
                                rollout_indices=list(range(8)))


def test_slime_falls_back_to_the_original_install_kept(caplog):
    calls = []

    def original(args, train_parallel_config, total_lengths, *, global_batch_size, rollout_indices):
        calls.append((train_parallel_config, list(total_lengths), global_batch_size, list(rollout_indices)))
        return "slime's schedule"

    module = SimpleNamespace(build_dp_schedule=original)
    caplog.set_level(logging.WARNING)
    try:
        slime.install(module)
        assert module.build_dp_schedule is slime.build_dp_schedule
        out = module.build_dp_schedule(slime_args(), CFG, SLIME_LENGTHS, global_batch_size=4,
                                       rollout_indices=[0, 1, 2, 3],
                                       rollout_routed_experts=slime_routes(SLIME_LENGTHS, bad=True))
        slime.install(module)  # installing again keeps slime's function as the original
        assert slime.original_build_dp_schedule is original
    finally:
        slime.original_build_dp_schedule = None
    assert out == "slime's schedule" and calls == [(CFG, SLIME_LENGTHS, 4, [0, 1, 2, 3])]
    assert warnings_of(caplog, "routepack.adapters.slime") == [SLIME_REFUSED + "slime's own build_dp_schedule"]


def wrong_counts():
    """Counts [4, 2, 4] for one MoE layer: the planner refuses the shape."""
    return np.ones((4, 2, 4), dtype=np.int32)


COUNTS_REFUSED = ("RoutePack planning failed (InputError: counts has shape (4, 2, 4); expected (N, L, E) = (4, 1, "
                  "E >= 1) for 4 lengths and len(moe_layers) = 1); answering with ")


def test_nemo_rl_falls_back(caplog):
    caplog.set_level(logging.WARNING)
    packer = nemo_rl.RoutePackPacker(100, bin_count_multiple=2, ep_ranks=2)
    packer.set_routing(wrong_counts(), moe_layers=[0])
    assert packer.pack(SLIME_LENGTHS) == [[0, 2], [1, 3]] and packer.last_plan is None
    assert warnings_of(caplog, "routepack.adapters.nemo_rl") == [
        "NeMo-RL SequencePacker.pack: " + COUNTS_REFUSED + "the adapter's plain packing"]
    # Plain bins are split up to the count asked: first fit decreasing gives {60, 40} and {50, 30, 20}
    # (100 tokens each); for min_bin_count 4 the first full bin gives up its 40, then the other its 20.
    assert nemo_rl.RoutePackPacker(100, min_bin_count=4, bin_count_multiple=4, time_limit_s=1e-9).pack(
        [60, 50, 40, 30, 20]) == [[0], [1, 3], [2], [4]]
    own = SimpleNamespace(pack=lambda lengths: [[9]])
    packer = nemo_rl.RoutePackPacker(100, bin_count_multiple=2, ep_ranks=2, fallback=own)
    packer.set_routing(wrong_counts(), moe_layers=[0])
    assert packer.pack(SLIME_LENGTHS) == [[9]]
    strict = nemo_rl.RoutePackPacker(100, bin_count_multiple=2, ep_ranks=2, strict=True)
    strict.set_routing(wrong_counts(), moe_layers=[0])
    with pytest.raises(ValueError, match="counts has shape"):
        strict.pack(SLIME_LENGTHS)
    # install: get_packer answers with a RoutePackPacker whose fallback is upstream's packer.
    made = []

    def get_packer(algorithm, bin_capacity, collect_metrics=False, min_bin_count=None, bin_count_multiple=None):
        if algorithm == "nope":
            raise ValueError("Unknown packing algorithm: nope")
        made.append((algorithm, bin_capacity, collect_metrics, min_bin_count, bin_count_multiple))
        return own

    module, importer = SimpleNamespace(get_packer=get_packer), SimpleNamespace(get_packer=get_packer)
    new = nemo_rl.install(module, importer, ep_ranks=2)
    assert module.get_packer is new is importer.get_packer
    p = new("modified_first_fit_decreasing", 100, bin_count_multiple=2)
    assert isinstance(p, nemo_rl.RoutePackPacker) and p.fallback is own and p.ep_ranks == 2
    assert made == [("modified_first_fit_decreasing", 100, False, None, 2)]
    with pytest.raises(ValueError, match="Unknown packing algorithm: nope"):
        new("nope", 100)
    # Upstream's own errors are raised, not answered.
    with pytest.raises(ValueError, match="Sequence length 150 exceeds bin capacity 100"):
        nemo_rl.RoutePackPacker(100, fallback=own).pack([150])


def test_megatron_falls_back(caplog):
    caplog.set_level(logging.WARNING)
    seqlens = [(10 + i, t) for i, t in enumerate(SLIME_LENGTHS)]
    sched = megatron.RoutePackScheduler(100, 2, 2, None, ep_ranks=2)
    sched.set_routing(wrong_counts(), moe_layers=[0])
    # Cap 100 x CP 2: first fit decreasing puts all four (180 tokens) in one group; the shortest moves out.
    assert sched.get_groups_and_subsamples(seqlens) == [[[0, 1, 2], [0, 1, 2], [3], [3]]]
    assert sched.last_plan is None
    assert warnings_of(caplog, "routepack.adapters.megatron") == [
        "Megatron get_groups_and_subsamples: " + COUNTS_REFUSED + "the adapter's plain schedule"]
    own = SimpleNamespace(get_groups_and_subsamples=lambda s: "megatron's groups")
    sched = megatron.RoutePackScheduler(100, 1, 2, None, ep_ranks=2, fallback=own)
    sched.set_routing(wrong_counts(), moe_layers=[0])
    assert sched.get_groups_and_subsamples(seqlens) == "megatron's groups"
    assert megatron.RoutePackScheduler(100, 1, 2, None, time_limit_s=1e-9, fallback=own).get_groups_and_subsamples(
        seqlens) == "megatron's groups"
    strict = megatron.RoutePackScheduler(100, 1, 2, None, ep_ranks=2, strict=True)
    strict.set_routing(wrong_counts(), moe_layers=[0])
    with pytest.raises(ValueError, match="counts has shape"):
        strict.get_groups_and_subsamples(seqlens)
    # Upstream's AssertionError for too few samples is raised, not answered.
    with pytest.raises(AssertionError, match="Not enough samples to move"):
        megatron.RoutePackScheduler(100, 1, 3, None, fallback=own).get_groups_and_subsamples(seqlens[:2])

    # install: a subclass of the scheduler class whose get_groups_and_subsamples falls back to the class's.
    class DpBalancedScheduler:
        def __init__(self, max_seqlen_per_dp_cp_rank, cp_size, dp_size, microbatch_group_size_per_vp_stage,
                     max_num_seqs=None):
            self.max_seqlen_per_dp_cp_rank, self.cp_size, self.dp_size = max_seqlen_per_dp_cp_rank, cp_size, dp_size
            self.microbatch_group_size_per_vp_stage = microbatch_group_size_per_vp_stage
            self.max_num_seqs = max_num_seqs

        def get_groups_and_subsamples(self, sample_id_seqlens):
            return f"upstream's {len(sample_id_seqlens)} samples"

        def run(self):
            return "upstream's run"

    module = SimpleNamespace(scheduler_map={"dp_balanced": DpBalancedScheduler})
    cls = megatron.install(module, ep_ranks=2)
    assert module.scheduler_map["dp_balanced"] is cls and issubclass(cls, DpBalancedScheduler)
    s = cls(100, 1, 2, None, max_num_seqs=3)
    assert s.run() == "upstream's run" and s.routepack.max_num_seqs == 3
    assert s.get_groups_and_subsamples(seqlens) == [[[1, 2], [3, 0]]]  # planned: 90 tokens per DP rank
    s.routepack.set_routing(wrong_counts(), moe_layers=[0])
    assert s.get_groups_and_subsamples(seqlens) == "upstream's 4 samples"
