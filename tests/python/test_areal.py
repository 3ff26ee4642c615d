"""AReaL's split_padded_tensor_dict_into_mb_list as a drop-in (routepack.adapters.areal), on the real
DeepSeek-V2-Lite trace (ROUTEPACK_SHARED_DIR): the first 256 samples of at most 512 tokens in trace
order (12,872 tokens), padded to S = 512, with their routes as AReaL's R3 carries them
(``routed_experts`` [B, S, 26, 6] at the MoE layers 1..26), 8 EP ranks, attention stage mla 27/27.
Then upstream's errors, the fallback (each failure forced for real) and the DP agreement on the
micro-batch count (2 ranks, gloo)."""

import dataclasses
import datetime
import logging
import os
import types
from types import SimpleNamespace
from typing import Optional

import numpy as np
import pytest

import routepack
from gloo_ranks import require_gloo, run_ranks
from conftest import shared_dir
from routepack.adapters import areal

DS_STAGES = [("mla", 27.0, 27.0)]
MOE = list(range(1, 27))
EP, S, N = 8, 512, 256


@dataclasses.dataclass
class Spec:
    """AReaL's MicroBatchSpec fields (areal/api/cli_args.py at d3fbc53c) with its defaults."""

    n_mbs: Optional[int] = 1
    granularity: int = 1
    max_tokens_per_mb: Optional[int] = None
    n_mbs_divisor: int = 1
    packing_algorithm: str = "ffd"


@pytest.fixture(scope="module")
def step():
    shared = shared_dir()
    if shared is None:
        if os.environ.get("CI"):
            pytest.fail("ROUTEPACK_SHARED_DIR is absent")
        pytest.skip("../shared is absent")
    w = routepack.read_trace(os.path.join(shared, "traces", "deepseek-v2-lite"), model="deepseek-v2-lite")
    sel = [i for i, t in enumerate(w.lengths) if t <= S][:N]
    mask = np.zeros((N, S), dtype=np.int8)
    routes = np.zeros((N, S, 26, 6), dtype=np.int8)
    sample_routes = w.routes
    for j, i in enumerate(sel):
        mask[j, :w.lengths[i]] = 1
        routes[j, :sample_routes[i].shape[0]] = sample_routes[i]
    return SimpleNamespace(lengths=w.lengths[sel].astype(np.int64), counts=w.counts[sel], mask=mask, routes=routes)


def batch_of(step, routes=True):
    data = {"input_ids": np.arange(N * S).reshape(N, S), "attention_mask": step.mask, "version": 7}
    if routes:
        data["routed_experts"] = step.routes
    return data


def routed_split(**kw):
    return areal.make_split_padded_tensor_dict_into_mb_list(num_experts=64, moe_layers=MOE, ep_ranks=EP,
                                                            stages=DS_STAGES, strict=True, **kw)


def parts(result):
    """The sample indices of each micro-batch, from forward_indices and the micro-batch sizes."""
    bounds = np.cumsum([0] + [mb["attention_mask"].shape[0] for mb in result.mbs])
    return [result.forward_indices[bounds[m]:bounds[m + 1]] for m in range(len(result.mbs))]


def peak_rank_load(counts, groups):
    """Sum over micro-batches and MoE layers of the busiest EP rank's routed tokens at the identity
    placement (eq. 14 without 1 / C): what the plan's expert term balances."""
    total = 0
    for g in groups:
        load = counts[list(g)].sum(axis=0).reshape(26, EP, 64 // EP).sum(axis=2)
        total += int(load.max(axis=1).sum())
    return total


def check_contract(result, data, spec, cap):
    """Every sample once; forward / backward inverse permutations; each micro-batch ascending, under the
    cap, the micro-batches ordered by their first sample; rows, group_lens and whole keys as AReaL's."""
    n = data["attention_mask"].shape[0]
    groups = parts(result)
    assert sorted(result.forward_indices) == list(range(n))
    assert [result.forward_indices[b] for b in result.backward_indices] == list(range(n))
    assert all(g == sorted(g) for g in groups) and [g[0] for g in groups] == sorted(g[0] for g in groups)
    lengths = np.asarray(data["attention_mask"]).sum(axis=1)
    assert result.group_lens == [int(lengths[g].sum()) for g in groups]
    assert max(result.group_lens) <= cap
    for g, mb in zip(groups, result.mbs):
        assert np.array_equal(mb["input_ids"], data["input_ids"][g])
        assert np.array_equal(mb["attention_mask"], data["attention_mask"][g])
        assert mb["version"] == 7 and mb.get("routed_experts") is data.get("routed_experts")
    assert result.mb_spec == spec and result.data is data


def test_routes_plan_the_micro_batches(step):
    """With routes, at AReaL's budget 1024 / 2048 tokens: the smallest count (the token lower bound
    ceil(12,872 / C), certified) and a busiest-EP-rank load below the lengths-only plan's and the plain
    first fit decreasing's. AReaL's own ffd / kk (through the shim, docs/adapters.md): 321,156 /
    313,354 at 1024 and 314,988 / 309,838 at 2048, with the same counts."""
    data = batch_of(step)
    for cap, count, routed, by_length, ffd in ((1024, 13, 306576, 315031, 321001),
                                                 (2048, 7, 304182, 308975, 315087)):
        result = routed_split()(data, Spec(max_tokens_per_mb=cap))
        check_contract(result, data, Spec(max_tokens_per_mb=cap), cap)
        assert len(result) == count == -(-int(step.lengths.sum()) // cap)
        assert peak_rank_load(step.counts, parts(result)) == routed
        plain = areal.split_padded_tensor_dict_into_mb_list(data, Spec(max_tokens_per_mb=cap))
        assert len(plain) == count and peak_rank_load(step.counts, parts(plain)) == by_length
        first_fit = areal._plain_groups(step.lengths, cap, 1, 1)
        assert len(first_fit) == count and peak_rank_load(step.counts, first_fit) == ffd
    # The micro-batches are the rows of routepack.plan on the same window and topology, at the identity.
    topo = routepack.Topology(EP, 1, None, 1024, stages=DS_STAGES)
    p = routepack.plan(step.lengths, step.counts, topo, moe_layers=MOE,
                       previous=routepack.identity(26, 64, EP, moe_layers=MOE),
                       budgets={"max_moves": 0, "placement_rounds": 0})
    assert p.certified and parts(routed_split()(data, Spec(max_tokens_per_mb=1024))) == \
        sorted(sorted(row[0]) for row in p.rows)
    assert result.group_lens == [1889, 1883, 1799, 1777, 2048, 1744, 1732]


def test_lengths_only_plan_without_routes(step):
    """The plain drop-in (no routes configured) balances lengths: the lengths-only routepack.plan."""
    data = batch_of(step)
    result = areal.split_padded_tensor_dict_into_mb_list(data, Spec(max_tokens_per_mb=1024))
    topo = routepack.Topology(1, 1, None, 1024)
    p = routepack.plan(step.lengths, np.zeros((N, 1, 1), dtype=np.uint32), topo, moe_layers=[0])
    assert parts(result) == sorted(sorted(row[0]) for row in p.rows)
    assert result.group_lens == [980, 993, 999, 980, 981, 996, 991, 985, 993, 982, 997, 999, 996]


def test_megatron_engine_spec_and_actor_mini_batches(step):
    """Megatron's engine with pp_size 2: n_mbs = 4, n_mbs_divisor = 2 (13 rounds up to 14), granularity 2
    (consecutive pairs kept whole). The actor's mini-batch split: n_mbs = 4, no budget (the returned spec
    says 10^12, as AReaL's)."""
    data = batch_of(step)
    spec = Spec(n_mbs=4, n_mbs_divisor=2, granularity=2, max_tokens_per_mb=1024)
    result = routed_split()(data, spec)
    check_contract(result, data, spec, 1024)
    assert result.group_lens == [1020, 947, 997, 906, 1024, 976, 1021, 606, 915, 1017, 1023, 598, 901, 921]
    assert all(g[k] % 2 == 0 and g[k + 1] == g[k] + 1 for g in parts(result) for k in range(0, len(g), 2))
    mini = routed_split()(data, Spec(n_mbs=4))
    check_contract(mini, data, Spec(n_mbs=4, max_tokens_per_mb=10 ** 12), 10 ** 12)
    assert mini.group_lens == [3152, 3346, 3057, 3317]


def test_routes_from_the_engine_side_channel(step):
    """The engine's R3 side channel gives the batch's own answer; samples whose r3_routing_valid is
    False count by length alone (their counts zeroed), which changes the plan."""
    data = batch_of(step)
    carried = routed_split()(data, Spec(max_tokens_per_mb=1024))
    engine = SimpleNamespace(_r3_pending_routed_experts=step.routes, _r3_pending_valid=np.ones(N, dtype=bool))
    channel = routed_split(routes=areal.engine_routes(engine))
    assert parts(channel(batch_of(step, routes=False), Spec(max_tokens_per_mb=1024))) == parts(carried)
    valid = np.arange(N) >= 64
    engine._r3_pending_valid = valid
    partial = parts(channel(batch_of(step, routes=False), Spec(max_tokens_per_mb=1024)))
    zeroed = step.counts.copy()
    zeroed[~valid] = 0
    p = areal.plan_micro_batches(step.lengths, token_cap=1024, counts=zeroed, moe_layers=MOE, ep_ranks=EP,
                                 stages=DS_STAGES)
    assert partial == sorted(sorted(row[0]) for row in p.rows) and partial != parts(carried)
    engine._r3_pending_routed_experts = None
    by_length = areal.plan_micro_batches(step.lengths, token_cap=1024, stages=DS_STAGES)
    assert parts(channel(batch_of(step, routes=False), Spec(max_tokens_per_mb=1024))) == sorted(
        sorted(row[0]) for row in by_length.rows)


SMALL = {"attention_mask": np.array([[1] * 3 + [0] * 5, [1] * 5 + [0] * 3, [1] * 7 + [0], [1] * 2 + [0] * 6])}


@pytest.mark.parametrize("data, spec, error, text", [
    ({"input_ids": np.zeros((2, 3))}, Spec(), ValueError,
     "Input data must be padded and contain 'attention_mask' key."),
    (SMALL, Spec(granularity=3), RuntimeError, "Batch size 4 cannot divide granularity 3."),
    (SMALL, Spec(max_tokens_per_mb=6), RuntimeError, "Values [3 5 7 2] is larger than capacity 6"),
    (SMALL, Spec(max_tokens_per_mb=6, packing_algorithm="kk"), RuntimeError,
     "Some values exceed capacity 6. Cannot pack a single item that is larger than the bin."),
    (SMALL, Spec(n_mbs=5), RuntimeError, "Number of values 4 is smaller than min_groups 5"),
    ({"attention_mask": np.ones((3, 7), dtype=np.int8)}, Spec(max_tokens_per_mb=8, n_mbs_divisor=2), RuntimeError,
     "Cannot allocate values [7 7 7] that satisfies capacity 8, min_groups 4 and n_groups_divisor 2."),
])
def test_upstream_errors(data, spec, error, text, caplog):
    """AReaL's exception types and texts (areal/utils/data.py, areal/utils/seqpack.py at d3fbc53c),
    never answered by the fallback."""
    caplog.set_level(logging.WARNING)
    for split in (areal.split_padded_tensor_dict_into_mb_list, areal.make_split_padded_tensor_dict_into_mb_list()):
        with pytest.raises(error) as e:
            split(data, spec)
        assert str(e.value) == text
    assert caplog.records == []


def test_samples_without_tokens_join_the_smallest_micro_batch():
    """Lengths 3, 0, 7, 0, 5 under 8 tokens: the plan's {0, 4} and {2}; sample 1 joins {2} (fewer
    samples), sample 3 the first of two micro-batches of two."""
    data = {"attention_mask": np.array([[1] * 3 + [0] * 5, [0] * 8, [1] * 7 + [0], [0] * 8, [1] * 5 + [0] * 3])}
    result = areal.make_split_padded_tensor_dict_into_mb_list(strict=True)(data, Spec(max_tokens_per_mb=8))
    assert parts(result) == [[0, 3, 4], [1, 2]] and result.group_lens == [8, 7]


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "routepack.adapters.areal"
            and r.levelno == logging.WARNING]


LENGTHS = [10, 20, 30, 40, 50, 60, 70, 80]


def small_batch(bad_routes=False):
    """8 samples of LENGTHS tokens in a width of 100; routed_experts [8, 100, 1, 1] over 4 experts,
    sample 0's first token routed to expert 7 when bad_routes."""
    mask = np.zeros((8, 100), dtype=np.int64)
    for i, t in enumerate(LENGTHS):
        mask[i, :t] = 1
    routes = (np.arange(100)[None, :, None, None] % 4 + np.zeros((8, 1, 1, 1), dtype=np.int64)).astype(np.int16)
    if bad_routes:
        routes[0, 0, 0, 0] = 7
    return {"attention_mask": mask, "routed_experts": routes}


REFUSED = ("AReaL split_padded_tensor_dict_into_mb_list: RoutePack planning failed (InputError: routes[0, 0, 0, 0] "
           "= 7 is outside 0..3 (-1 = no route)); answering with ")
# The plain first fit decreasing of LENGTHS under 100 tokens: 80+20, 70+30, 60+40, 50+10.
PLAIN_FOUR = [[0, 4], [1, 7], [2, 6], [3, 5]]


def test_fallback_plain_strict_and_time_limit(caplog):
    """Routes the planner refuses: one warning, the adapter's plain first fit decreasing (AReaL is not
    importable here); strict raises; a time limit of 1e-9 s falls back (strict: TimeoutError)."""
    caplog.set_level(logging.WARNING)
    split = areal.make_split_padded_tensor_dict_into_mb_list(num_experts=4, moe_layers=[0], ep_ranks=2)
    result = split(small_batch(bad_routes=True), Spec(max_tokens_per_mb=100))
    assert parts(result) == PLAIN_FOUR and result.group_lens == [60, 100, 100, 100]
    assert warnings_of(caplog) == [REFUSED + "the adapter's plain first fit decreasing"]
    caplog.clear()
    planned = split(small_batch(), Spec(max_tokens_per_mb=100))
    assert len(planned) == 4 and warnings_of(caplog) == []
    strict = areal.make_split_padded_tensor_dict_into_mb_list(num_experts=4, moe_layers=[0], strict=True)
    with pytest.raises(routepack.InputError, match=r"routes\[0, 0, 0, 0\] = 7 is outside 0..3"):
        strict(small_batch(bad_routes=True), Spec(max_tokens_per_mb=100))
    late = areal.make_split_padded_tensor_dict_into_mb_list(time_limit_s=1e-9)
    assert parts(late(small_batch(), Spec(max_tokens_per_mb=100))) == PLAIN_FOUR
    assert warnings_of(caplog) == [
        "AReaL split_padded_tensor_dict_into_mb_list: RoutePack planning failed (TimeoutError: planning ran past "
        "time_limit_s = 1e-09 s); answering with the adapter's plain first fit decreasing"]
    with pytest.raises(TimeoutError, match="planning ran past time_limit_s = 1e-09 s"):
        areal.make_split_padded_tensor_dict_into_mb_list(time_limit_s=1e-9, strict=True)(
            small_batch(), Spec(max_tokens_per_mb=100))
    with pytest.raises(ValueError, match="time_limit_s must be a positive number of seconds or None, not 0"):
        areal.make_split_padded_tensor_dict_into_mb_list(time_limit_s=0)
    with pytest.raises(ValueError, match="num_experts and moe_layers go together"):
        areal.make_split_padded_tensor_dict_into_mb_list(num_experts=4)


def test_fallback_to_the_original_install_kept(caplog):
    """install keeps the module's function (also through a second install) and answers with the module's
    MicroBatchList; a failed plan calls that original once, with the call's own arguments."""
    calls = []

    class Own:
        def __init__(self, **fields):
            self.__dict__.update(fields)

    def original(data, mb_spec, group=None):
        calls.append((data, mb_spec, group))
        return Own(mbs=["upstream"], mb_spec=None)

    module, importer = types.ModuleType("data"), types.ModuleType("engine")
    module.split_padded_tensor_dict_into_mb_list = original
    module.MicroBatchList = Own
    areal.install(module, importer, num_experts=4, moe_layers=[0])
    fn = areal.install(module, importer, num_experts=4, moe_layers=[0])
    assert module.split_padded_tensor_dict_into_mb_list is fn is importer.split_padded_tensor_dict_into_mb_list
    assert fn._routepack_original is original
    caplog.set_level(logging.WARNING)
    data, spec = small_batch(bad_routes=True), Spec(max_tokens_per_mb=100)
    answer = fn(data, spec, group="dp")
    assert answer.mbs == ["upstream"] and answer.mb_spec is spec and calls == [(data, spec, "dp")]
    assert warnings_of(caplog) == [REFUSED + "AReaL's own split_padded_tensor_dict_into_mb_list"]
    planned = fn(small_batch(), spec)
    assert type(planned) is Own and len(planned.mbs) == 4 and len(calls) == 1


def test_torch_tensors():
    """A batch of torch tensors gets the numpy batch's micro-batches, as torch tensors."""
    if os.environ.get("ROUTEPACK_TORCH_TESTS") == "off":
        pytest.skip("torch tests run in the default pass only (as tests/python/test_torch_distributed.py)")
    torch = pytest.importorskip("torch")
    data = small_batch()
    data["position_ids"] = np.tile(np.arange(100), (8, 1))
    split = areal.make_split_padded_tensor_dict_into_mb_list(num_experts=4, moe_layers=[0], strict=True)
    as_numpy = split(data, Spec(max_tokens_per_mb=100))
    as_torch = split({k: torch.as_tensor(v) for k, v in data.items()}, Spec(max_tokens_per_mb=100))
    assert as_torch.forward_indices == as_numpy.forward_indices and as_torch.group_lens == as_numpy.group_lens
    for a, b in zip(as_torch.mbs, as_numpy.mbs):
        assert torch.is_tensor(a["position_ids"]) and np.array_equal(a["position_ids"].numpy(), b["position_ids"])



def _rank(rank, port):
    """Rank 0 plans LENGTHS under 100 tokens (4 micro-batches); rank 1 holds the first 4 samples (100
    tokens: 1 micro-batch) with routes the planner refuses, so it answers through the fallback."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=30))
    data = small_batch(bad_routes=rank == 1)
    if rank == 1:
        data = {k: v[:4] for k, v in data.items()}
    warnings = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warnings.append(record.getMessage())
    logging.getLogger("routepack.adapters.areal").addHandler(handler)
    split = areal.make_split_padded_tensor_dict_into_mb_list(num_experts=4, moe_layers=[0])
    result = split({k: torch.as_tensor(v) for k, v in data.items()}, Spec(max_tokens_per_mb=100),
                   group=dist.group.WORLD)
    return parts(result), result.group_lens, warnings


def test_dp_group_agrees_on_the_count(tmp_path):
    """The ranks of the group end with the same count, the largest (4), rank 1 through the fallback
    (its plain first fit decreasing split into 4), with one warning for its two allocations."""
    require_gloo()
    results = run_ranks(_rank, 2, tmp_path)
    assert [r[0] for r in results] == ["ok", "ok"], results
    assert results[0][1:] == ([[0, 7], [1, 5], [2, 6], [3, 4]], [90, 80, 100, 90], [])
    assert results[1][1:] == ([[0], [1], [2], [3]], [10, 20, 30, 40],
                              [REFUSED + "the adapter's plain first fit decreasing"])
