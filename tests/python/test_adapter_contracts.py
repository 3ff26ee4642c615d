"""The adapters keep their stacks' batch contracts through the planner's batch rules, and their
plans are the CLI's plans of the same topology options: verl's equal chunks (samples_per_dp_slot =
B / D) on the real DeepSeek-V2-Lite windows with routes, slime's static micro-batches
(samples_per_cell) and oversize samples alone, Megatron's max_num_seqs (max_samples_per_cell); an
adapter called every step starts from the previous step's placement (previous=, max_moves) as
`routepack plan --previous FILE --max-moves N` does. Also the Python Topology(...) batch-rule
keywords, Window.routes and expert_loads (router_layer_base, as `--router-layer-base`)."""

import json
import os
import subprocess
import types
from types import SimpleNamespace

import numpy as np
import pytest

import routepack
from conftest import cli, shared_dir
from routepack.adapters import megatron, nemo_rl, slime, verl


@pytest.fixture(scope="module")
def exe():
    path = cli()
    if not path or not os.path.exists(path):
        if os.environ.get("CI"):
            pytest.fail("ROUTEPACK_CLI does not name the built routepack binary")
        pytest.skip("ROUTEPACK_CLI is not set (run through ctest)")
    return path


def run(exe, *args, ok=True):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env=env)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


def moved(p, previous):
    """Experts moved from `previous` to `p`, summed over the MoE layers (Plan.moves lists them)."""
    return sum(len(layer) for layer in p.moves(previous))


def assert_same_plan(p, path):
    """The Python plan `p` is the CLI's plan file `path` but for the names of its inputs (trace,
    window, sample ids, model name, top-k): the same cells (by sample index), placement, row count
    and how it was found, score, bounds, every method's metrics, planner record and migration."""
    a, b = json.loads(p.to_json()), json.load(open(path))

    def cells(plan):
        index = {s["id"]: s["index"] for s in plan["samples"]}
        return [[[index[i] for i in cell] for cell in row] for row in plan["rows"]]

    assert cells(a) == cells(b)
    assert [s["length"] for s in a["samples"]] == [s["length"] for s in b["samples"]]
    for key in ("topology", "moe_layers", "placement", "row_count", "row_count_certified", "row_lower_bound",
                "row_count_how", "baseline_is_fixed_row_ffd", "score", "max_u_lower_bound", "metrics", "planner",
                "migration"):
        assert a.get(key) == b.get(key), key


# ---------------------------------------------------------------------------------------------
# Topology keywords, Window.routes, expert_loads


def test_topology_batch_rule_keywords():
    t = routepack.Topology(4, 2, None, 1000, samples_per_dp_slot=8, max_samples_per_cell=3, oversize="alone")
    assert t == routepack.Topology(4, 2, None, 1000).with_batch_rules(samples_per_dp_slot=8, max_samples_per_cell=3,
                                                                      oversize="alone")
    assert (t.samples_per_dp_slot, t.samples_per_cell, t.max_samples_per_cell, t.oversize) == (8, 0, 3, "alone")
    # Static micro-batches need no token cap: left out (None or 0), derived from the window.
    for cap in (None, 0):
        s = routepack.Topology(2, 2, token_cap=cap, samples_per_cell=4)
        assert s.token_cap == 0 and "token_cap" not in json.loads(s.to_json())
    with pytest.raises(ValueError) as e:
        routepack.Topology(2, 2)
    assert str(e.value) == "topology: token_cap is missing"
    with pytest.raises(ValueError) as e:
        routepack.Topology(2, 2, None, 0)
    assert str(e.value) == "topology: token_cap is 0, not an integer in 1..1099511627776"
    with pytest.raises(ValueError) as e:
        routepack.Topology(2, 2, None, 100, samples_per_cell=4, max_samples_per_cell=2)
    assert str(e.value) == "topology: samples_per_cell 4 exceeds max_samples_per_cell 2"
    with pytest.raises(ValueError) as e:
        routepack.Topology(2, 2, None, 100, oversize="split")
    assert str(e.value) == 'topology: oversize is "split", not "refuse" or "alone"'
    with pytest.raises(ValueError) as e:
        routepack.Topology(2, 2, None, 100, samples_per_dp_slot=True)
    assert str(e.value) == "topology: samples_per_dp_slot must be an integer (got True)"


def router_trace(path, ids, tops):
    """A Megatron-LM router_trace_rank0.jsonl: one decoder record per (layer id, top_indices)."""
    with open(path, "w") as f:
        for step, (layer, top) in enumerate(zip(ids, tops)):
            f.write(json.dumps({"step": 3, "stage": "fwd", "block": "decoder", "layer": layer, "rank": 0,
                                "num_tokens": len(top), "topk": 2, "top_indices": top}) + "\n")
    return path


def test_expert_loads_router_layer_base(exe, tmp_path):
    """A router trace of a 4-layer model (layer 0 dense, MoE layers 1-3, 4 experts, top-2) with
    1-based ids 2, 3, 4: detected (id 4 reaches num_hidden_layers) or given; read 0-based it is
    refused. Loads counted by hand; `routepack place --input --router-layer-base 1` places the same."""
    tops = [[[0, 1], [0, 2], [3, 0]], [[1, 2]], [[3, 2], [3, 1]]]
    f = router_trace(tmp_path / "router_trace_rank0.jsonl", [2, 3, 4], tops)
    model = dict(num_experts=4, top_k=2, num_hidden_layers=4, moe_layers=[1, 2, 3])
    want = np.array([[3, 1, 1, 1], [0, 1, 1, 0], [0, 1, 1, 2]], dtype=np.uint64)
    for base in ("auto", "1", 1):
        r = routepack.expert_loads(str(f), router_layer_base=base, **model)
        assert r["loads"].dtype == np.uint64 and (r["loads"] == want).all()
        assert (r["moe_layers"], r["num_hidden_layers"], r["num_experts"], r["top_k"]) == ([1, 2, 3], 4, 4, 2)
        assert r["format"] == "aggregate" and r["files"] == 1
    load_only = "load-only trace: per-layer expert totals, usable for placement views, not for packing"
    head = f"{f}: router trace layer ids read 1-based (the layer_number of Megatron-LM's inference record_indices)"
    assert routepack.expert_loads(f, **model)["notes"] == [
        head + ": read 0-based, layer 4 is not below num_hidden_layers = 4", load_only]
    assert routepack.expert_loads(f, router_layer_base=1, **model)["notes"] == [head + ", as given", load_only]
    with pytest.raises(ValueError) as e:
        routepack.expert_loads(f, router_layer_base=0, **model)
    assert str(e.value) == f"{f}: line 3: layer 4 is not below num_hidden_layers = 4"
    with pytest.raises(ValueError) as e:
        routepack.expert_loads(f, router_layer_base="2", **model)
    assert str(e.value) == "unknown router trace layer base '2' (valid: auto, 0, 1)"
    # Ids that fit both bases (1, 2 of a 4-layer all-MoE model): the base must be given.
    g = router_trace(tmp_path / "both.jsonl", [1, 2], tops[:2])
    with pytest.raises(ValueError) as e:
        routepack.expert_loads(g, num_experts=4, top_k=2, num_hidden_layers=4)
    assert str(e.value) == (f"{g}: the router trace's layer ids 1-2 fit the model read 0-based (decoder.layers index, "
                            "Megatron-LM's training hooks) and 1-based (layer_number, its inference record_indices) "
                            "alike: give the base (router_layer_base=0 or 1)")
    zero = routepack.expert_loads(g, num_experts=4, top_k=2, num_hidden_layers=4, router_layer_base=0)
    assert zero["moe_layers"] == [1, 2] and (zero["loads"] == want[:2]).all()
    # The CLI's placement from the same file and base.
    r = routepack.expert_loads(f, **model)
    out = tmp_path / "map.json"
    run(exe, "place", "--input", f, "--router-layer-base", "1", "--experts", 4, "--top-k", 2, "--layers", 4,
        "--moe-layers", "1-3", "--ep-ranks", 2, "--format", "vllm", "--out", out)
    placed = routepack.place(r["loads"], 2, moe_layers=r["moe_layers"], num_hidden_layers=r["num_hidden_layers"])
    assert json.load(open(out)) == placed.vllm_map()


# ---------------------------------------------------------------------------------------------
# A synthetic library (routes kept): slime and Megatron against the CLI


@pytest.fixture(scope="module")
def synth(exe, tmp_path_factory):
    d = tmp_path_factory.mktemp("synth")
    run(exe, "synth", "--out", d / "synth", "--groups", 4, "--group-size", 8, "--layers", 6, "--dense-layers", 1,
        "--experts", 16, "--top-k", 2, "--seed", 3)
    db = d / "lib.routepack"
    run(exe, "import", "--db", db, "--name", "syn", "--quiet", "--experts", 16, "--top-k", 2, "--layers", 6,
        "--moe-layers", "1-5", d / "synth")
    run(exe, "window", "--db", db, "--trace", "syn", "--name", "w", "--first", 24)
    return db, d


def topology_file(path, ep_ranks, dp_slots, token_cap=None, stages=(("attention", 1.0, 0.0),)):
    t = {"ep_ranks": ep_ranks, "dp_slots": dp_slots,
         "attention_stages": [{"name": n, "alpha": a, "beta": b} for n, a, b in stages]}
    if token_cap:
        t["token_cap"] = token_cap
    path.write_text(json.dumps(t))
    return path


def slime_routes(w):
    """slime's per-sample replay arrays [T, num_layers = 6, K]: the window's MoE-layer routes with a
    zero row block for the dense layer 0 (slime keeps one)."""
    out = []
    for i in range(len(w)):
        r = w.routes[i]
        full = np.zeros((r.shape[0], 6, r.shape[2]), dtype=np.int16)
        full[:, 1:] = r
        out.append(full)
    return out


def slime_args(**kw):
    a = dict(use_dynamic_batch_size=False, max_tokens_per_gpu=None, micro_batch_size=None, num_layers=6,
             moe_layer_freq="[0]*1+[1]*5", num_experts=16, expert_model_parallel_size=4, balance_data=False,
             balance_by_flops=False)
    a.update(kw)
    return SimpleNamespace(**a)


CFG = {"dp_size": 2, "cp_size": 1, "vpp_size": 1, "microbatch_group_size_per_vp_stage": 1}


def test_slime_static_micro_batches_are_the_cli_plan(exe, synth):
    """Static mode, micro_batch_size 3 on 24 samples and 2 DP ranks: every micro-batch exactly 3
    samples, R = 24 / (3 x 2) = 4, the plan of `--samples-per-cell 3` (no token cap)."""
    db, d = synth
    w = routepack.Library(str(db)).load("syn", "w")
    out = slime.build_dp_schedule(slime_args(micro_batch_size=3), CFG, list(w.lengths), global_batch_size=24,
                                  rollout_indices=list(range(24)), rollout_routed_experts=slime_routes(w))
    partitions, mbi, nmb, gbs = out
    assert nmb == [4] and gbs == [24]
    assert [len(mb) for r in range(2) for mb in mbi[r]] == [3] * 8
    topo = d / "static.json"
    topo.write_text(json.dumps({"ep_ranks": 4, "dp_slots": 2, "samples_per_cell": 3,
                                "attention_stages": [{"name": "attention", "alpha": 1.0, "beta": 0.0}]}))
    run(exe, "plan", "--db", db, "--trace", "syn", "--window", "w", "--topology", topo, "--seed", 1, "--threads", 1, "--quiet", "--out", d / "static-plan.json")
    assert_same_plan(slime.last_plans[0], d / "static-plan.json")
    p = slime.last_plans[0]
    assert partitions == [[i for cell in p.micro_batches()[r] for i in cell] for r in range(2)]
    assert p.num_experts == 16 and p.placement.ep_ranks == 4


def test_slime_static_short_last_micro_batch():
    """micro_batch_size 3 on 10 samples (slime: 4 micro-batches, the last of 1): 2 rows of at most 3
    samples on each of 2 ranks. 8 samples give 3 micro-batches: upstream's AssertionError."""
    lengths = [5, 9, 1, 7, 3, 8, 2, 6, 4, 10]
    partitions, mbi, nmb, _ = slime.build_dp_schedule(slime_args(micro_batch_size=3), CFG, lengths,
                                                      global_batch_size=10, rollout_indices=list(range(10)))
    assert nmb == [2] and all(1 <= len(mb) <= 3 for r in range(2) for mb in mbi[r])
    assert sorted(partitions[0] + partitions[1]) == list(range(10))
    with pytest.raises(AssertionError) as e:
        slime.build_dp_schedule(slime_args(micro_batch_size=3), CFG, [5] * 8, global_batch_size=8,
                                rollout_indices=list(range(8)))
    assert str(e.value) == (
        "static path: num_mbs (3) is not a multiple of dp_size * mb_group (2); got step_size=8, micro_batch_size=3, "
        "dp_size=2, mb_group=1. Splitting static mbs would break the fixed-size invariant; adjust the config so "
        "step_size % (dp_size * micro_batch_size * mb_group) == 0.")
    with pytest.raises(AssertionError) as e:
        slime.build_dp_schedule(slime_args(), CFG, [5] * 8, global_batch_size=8, rollout_indices=list(range(8)))
    assert str(e.value) == "the static mode (no --use-dynamic-batch-size) needs --micro-batch-size"


def test_slime_oversize_sample_alone_is_the_cli_plan(exe, synth):
    """Dynamic mode with max_tokens_per_gpu 1200 below the longest samples: each longer sample runs
    alone in its micro-batch, as slime's first fit gives it; the plan of `--oversize alone`."""
    db, d = synth
    w = routepack.Library(str(db)).load("syn", "w")
    over = [i for i, t in enumerate(w.lengths) if t > 1200]
    assert over  # the window has samples over the cap
    partitions, mbi, nmb, _ = slime.build_dp_schedule(
        slime_args(use_dynamic_batch_size=True, max_tokens_per_gpu=1200), CFG, list(w.lengths),
        global_batch_size=24, rollout_indices=list(range(24)), rollout_routed_experts=slime_routes(w))
    for r in range(2):
        for mb in mbi[r]:
            samples = [partitions[r][j] for j in mb]
            assert len(samples) == 1 or sum(w.lengths[i] for i in samples) <= 1200
            assert not (set(samples) & set(over)) or len(samples) == 1
    topo = topology_file(d / "cap1200.json", 4, 2, 1200)
    run(exe, "plan", "--db", db, "--trace", "syn", "--window", "w", "--topology", topo, "--oversize", "alone",
        "--seed", 1, "--threads", 1, "--quiet", "--out", d / "oversize-plan.json")
    assert_same_plan(slime.last_plans[0], d / "oversize-plan.json")
    cells = json.load(open(d / "oversize-plan.json"))["oversize_cells"]
    p = slime.last_plans[0]
    assert sorted(p.rows[r][c][0] for r, c in cells) == over


def test_megatron_max_num_seqs_is_the_cli_plan(exe, synth):
    """max_num_seqs 2 with cap 3000 on 2 DP ranks, CP 2: no group holds more than 2 sequences (the
    planner keeps it: `--max-samples-per-cell 2`), and the plan is the CLI's."""
    db, d = synth
    w = routepack.Library(str(db)).load("syn", "w")
    sched = megatron.RoutePackScheduler(1500, 2, 2, None, max_num_seqs=2, ep_ranks=4)
    sched.set_routing(w.counts, moe_layers=w.moe_layers)
    groups = sched.get_groups_and_subsamples([(100 + i, int(t)) for i, t in enumerate(w.lengths)])
    assert len(groups) == sched.last_plan.row_count == 6  # 24 samples, at most 2 per group, 2 DP ranks
    assert all(1 <= len(g) <= 2 and g == mb[2 * (j // 2)] for mb in groups for j, g in enumerate(mb))
    topo = topology_file(d / "cap3000.json", 4, 2, 3000)
    run(exe, "plan", "--db", db, "--trace", "syn", "--window", "w", "--topology", topo, "--max-samples-per-cell", 2,
        "--oversize", "alone", "--seed", 1, "--threads", 1, "--quiet", "--out", d / "seqs-plan.json")
    assert_same_plan(sched.last_plan, d / "seqs-plan.json")


def test_megatron_oversize_sample_alone():
    """A sample longer than max_seqlen_per_dp_cp_rank * cp_size gets a micro-batch of its own (as
    upstream's packing gives it); too few samples stay upstream's AssertionError."""
    groups = megatron.RoutePackScheduler(450, 1, 2, None).get_groups_and_subsamples([(0, 10), (1, 2000), (2, 30),
                                                                                        (3, 40)])
    assert groups == [[[1], [3, 2, 0]]]
    with pytest.raises(AssertionError) as e:
        megatron.RoutePackScheduler(450, 2, 3, None).get_groups_and_subsamples([(0, 10), (1, 2000)])
    assert str(e.value) == ("Not enough samples to move: no rectangular layout exists: 2 samples cannot fill 3 DP "
                            "slots")


# ---------------------------------------------------------------------------------------------
# verl: equal chunks, exception types


def test_verl_equal_chunks_and_upstream_assertions():
    mask = np.zeros((6, 10), dtype=np.int64)
    for i, t in enumerate([10, 1, 1, 1, 1, 1]):
        mask[i, :t] = 1
    # Free, the planner would put the 10-token sample alone in one DP slot's cell and the five
    # 1-token samples in the other's; with samples_per_dp_slot 3 each slot holds 3 samples.
    p, global_idx, rows = verl.plan_batch(mask, 2, max_token_len=10)
    assert [len(part) for part in p.dp_partitions()] == [3, 3] and sorted(global_idx) == list(range(6))
    assert p.row_count == 2 and json.loads(p.to_json())["topology"]["samples_per_dp_slot"] == 3
    assert global_idx == p.dp_partitions()[0] + p.dp_partitions()[1]
    assert rows == [r for slot in p.micro_batches() for r, cell in enumerate(slot) for _ in cell]
    with pytest.raises(AssertionError) as e:
        verl.plan_batch(np.ones((6, 5)), 4, max_token_len=10)
    assert str(e.value) == "6 % 4 != 0"
    with pytest.raises(AssertionError) as e:
        verl.plan_batch(np.ones((3, 5)), 4, max_token_len=10)
    assert str(e.value) == "number of items:[3] < k_partitions:[4]"
    local = {"attention_mask": np.ones((2, 12)), verl.ROW_KEY: np.array([0, 0])}
    with pytest.raises(AssertionError) as e:
        verl.rearrange_micro_batches(local, max_token_len=10)
    assert str(e.value) == ("max_token_len must be greater than the sequence length. Got max_token_len=10 and "
                            "max_seq_len=12")


def test_verl_prefix_grouper_is_not_planned():
    """The PrefixGrouper branch (whole uid groups per rank) is answered by verl's own balancing
    (tests/python/test_adapter_fallback.py); strict, it is refused."""
    class Batch:
        batch = {"attention_mask": np.ones((4, 5))}
        non_tensor_batch = {"uid": np.array(["a", "a", "b", "b"])}

    trainer = SimpleNamespace(use_prefix_grouper=True, actor_rollout_wg=None, _get_dp_size=lambda wg, role: 2)
    balance = verl.make_balance_batch(max_token_len=10, strict=True)
    with pytest.raises(ValueError) as e:
        balance(trainer, Batch(), {})
    assert str(e.value) == ("use_prefix_grouper keeps each uid group on one DP rank; the RoutePack plan balances "
                            "samples, not groups")


# ---------------------------------------------------------------------------------------------
# verl on the real DeepSeek-V2-Lite windows


@pytest.fixture(scope="module")
def deepseek(exe, tmp_path_factory):
    shared = shared_dir()
    if shared is None:
        if os.environ.get("CI"):
            pytest.fail("ROUTEPACK_SHARED_DIR is absent")
        pytest.skip("../shared is absent")
    d = tmp_path_factory.mktemp("deepseek")
    db = d / "lib.routepack"
    run(exe, "import", "--db", db, "--name", "ds", "--model", "deepseek-v2-lite", "--quiet",
        os.path.join(shared, "traces", "deepseek-v2-lite"))
    run(exe, "window", "--db", db, "--trace", "ds", "--name", "first", "--first", 512)
    run(exe, "window", "--db", db, "--trace", "ds", "--name", "w", "--split", 128)
    return db, d


DS_STAGES = [("mla", 27.0, 27.0)]


def verl_batch(w):
    """verl's padded batch of a window: attention_mask [B, S] and routed_experts [B, S, 26, 6]
    (the MoE layers' routes, -1 in the padding), S = the longest sample."""
    n, s = len(w), int(w.lengths.max())
    mask = np.zeros((n, s), dtype=np.int8)
    routes = np.full((n, s, 26, 6), -1, dtype=np.int8)
    for i in range(n):
        r = w.routes[i]
        mask[i, :w.lengths[i]] = 1
        routes[i, :r.shape[0]] = r
    return {"attention_mask": mask, "routed_experts": routes, "index": np.arange(n)}


class Proto:
    """The parts of verl's DataProto that _balance_batch touches: .batch (dict of arrays), reorder."""

    def __init__(self, batch):
        self.batch = batch
        self.non_tensor_batch = {}

    def reorder(self, idx):
        for k in list(self.batch):
            self.batch[k] = self.batch[k][idx]


# The 512-sample windows take about 15 s each here and ten times that in the sanitizer pass, which
# keeps the four windows of 128 (the same code paths).
_UNDER_ASAN = "asan" in os.environ.get("LD_PRELOAD", "")
_FIRST_512 = pytest.mark.skipif(_UNDER_ASAN, reason="the 512-sample windows are slow under the sanitizer pass")


#: Per window and D: the plan's R and each rank's verl count (min(B / D, ceil(tokens / 4096)), no DP
#: group: each rank its own). Rank 0 of the first 512 on 4 ranks needs 3 (a local plan); with
#: same_micro_num_in_dp over the group every rank would run the maximum, 4 = R, the plan's rows.
VERL_COUNTS = {("first", 4): (4, [3, 4, 4, 4]), ("first", 8): (2, [2] * 8), ("w-000", 4): (1, [1] * 4),
               ("w-001", 8): (1, [1] * 8), ("w-002", 4): (1, [1] * 4), ("w-003", 8): (1, [1] * 8)}


@pytest.mark.parametrize("window, dp", [pytest.param("first", 4, marks=_FIRST_512),
                                        pytest.param("first", 8, marks=_FIRST_512), ("w-000", 4), ("w-001", 8),
                                        ("w-002", 4), ("w-003", 8)])
def test_verl_plans_real_deepseek_windows_with_routes(exe, deepseek, window, dp):
    """The first 512 samples and windows of 128 on 8 EP ranks and D = 4 or 8 DP ranks: every rank's
    equal chunk B / D (verl's dispatch), a plan from the routes (64 experts placed on 8 EP ranks),
    and the CLI's `--samples-per-dp-slot B/D` plan. Each rank's rearrange_micro_batches runs verl's
    count of micro-batches: the plan's rows where the count is R, else a local plan of that count."""
    db, d = deepseek
    w = routepack.Library(str(db)).load("ds", window)
    batch = Proto(verl_batch(w))
    b = len(w)
    trainer = SimpleNamespace(actor_rollout_wg=None, _get_dp_size=lambda wg, role: dp)
    balance = types.MethodType(verl.make_balance_batch(max_token_len=4096, num_experts=64, moe_layers=w.moe_layers,
                                                       layer_axis="moe", ep_ranks=8, stages=DS_STAGES), trainer)
    metrics = {}
    balance(batch, metrics)
    p = trainer.routepack_plan
    assert p.num_experts == 64 and p.placement.ep_ranks == 8 and p.moe_layers == list(range(1, 27))
    chunk = b // dp
    counts = []
    for r in range(dp):
        local = {k: v[r * chunk:(r + 1) * chunk] for k, v in batch.batch.items()}
        assert local["index"].tolist() == p.dp_partitions()[r]
        mbs, idx = verl.rearrange_micro_batches(local, max_token_len=4096)
        counts.append(len(mbs))
        assert len(mbs) == min(chunk, -(-int(local["attention_mask"].sum()) // 4096))
        if len(mbs) == p.row_count:
            assert [local["index"][i].tolist() for i in idx] == [list(c) for c in p.micro_batches()[r]]
        assert sorted(local["index"][i] for m in idx for i in m) == sorted(p.dp_partitions()[r])
    assert (p.row_count, counts) == VERL_COUNTS[window, dp]
    topo = topology_file(d / f"ep8-dp{dp}.json", 8, dp, 4096, DS_STAGES)
    out = d / f"{window}-dp{dp}.json"
    run(exe, "plan", "--db", db, "--trace", "ds", "--window", window, "--topology", topo, "--samples-per-dp-slot",
        chunk, "--seed", 1, "--threads", 1, "--quiet", "--out", out)
    assert_same_plan(p, out)
    assert metrics["global_seqlen/routepack_rows"] == p.row_count
    assert "global_seqlen/routepack_experts_moved" not in metrics


# ---------------------------------------------------------------------------------------------
# The last plan passed on


def test_verl_next_step_starts_from_the_last_placement(exe, deepseek):
    """Two steps (w-000, then w-001) through one trainer with max_moves 40: step 2 moves at most 40
    of the 26 x 64 experts, and its plan is `routepack plan --previous step1.json --max-moves 40`."""
    db, d = deepseek
    lib = routepack.Library(str(db))
    trainer = SimpleNamespace(actor_rollout_wg=None, _get_dp_size=lambda wg, role: 4)
    balance = types.MethodType(verl.make_balance_batch(max_token_len=4096, num_experts=64, moe_layers=list(range(1, 27)),
                                                       layer_axis="moe", ep_ranks=8, stages=DS_STAGES, max_moves=40,
                                                       model_name="deepseek-v2-lite"),
                               trainer)
    balance(Proto(verl_batch(lib.load("ds", "w-000"))), {})
    first = trainer.routepack_plan
    assert first.migration is None
    first.save(str(d / "step1.json"))
    metrics = {}
    balance(Proto(verl_batch(lib.load("ds", "w-001"))), metrics)
    second = trainer.routepack_plan
    n_moved = second.migration["moves"]
    assert n_moved == moved(second, first) == metrics["global_seqlen/routepack_experts_moved"]
    assert 0 < n_moved <= 40 and second.migration["max_moves"] == 40
    topo = topology_file(d / "ep8-dp4.json", 8, 4, 4096, DS_STAGES)
    out = d / "step2.json"
    run(exe, "plan", "--db", db, "--trace", "ds", "--window", "w-001", "--topology", topo, "--samples-per-dp-slot",
        32, "--previous", d / "step1.json", "--max-moves", 40, "--seed", 1, "--threads", 1, "--quiet", "--out", out)
    assert_same_plan(second, out)
    # Re-placing freshly would move most experts: the budget is what keeps them.
    fresh = verl.plan_batch(verl_batch(lib.load("ds", "w-001"))["attention_mask"], 4, max_token_len=4096,
                            routed_experts=verl_batch(lib.load("ds", "w-001"))["routed_experts"], num_experts=64,
                            moe_layers=list(range(1, 27)), layer_axis="moe", ep_ranks=8, stages=DS_STAGES)[0]
    assert moved(fresh, first) > 10 * 40


def test_slime_megatron_nemo_rl_chain_their_plans(synth):
    """slime chains the steps of a call (and calls), Megatron's scheduler and NeMo-RL's packer their
    calls: each next plan starts from the last one and moves at most max_moves experts."""
    db, _ = synth
    w = routepack.Library(str(db)).load("syn")
    routes = slime_routes(w)
    args = slime_args(use_dynamic_batch_size=True, max_tokens_per_gpu=2000, routepack_max_moves=3)
    slime.last_plans.clear()
    slime.build_dp_schedule(args, CFG, list(w.lengths), global_batch_size=16, rollout_indices=list(range(32)),
                            rollout_routed_experts=routes)
    a, b = slime.last_plans
    assert a.migration is None and b.migration["moves"] == moved(b, a) <= 3 and b.migration["max_moves"] == 3
    slime.build_dp_schedule(args, CFG, list(w.lengths[:16]), global_batch_size=16, rollout_indices=list(range(16)),
                            rollout_routed_experts=routes[:16])
    assert moved(slime.last_plans[0], b) == slime.last_plans[0].migration["moves"] <= 3
    sched = megatron.RoutePackScheduler(2000, 1, 2, None, ep_ranks=4, max_moves=2)
    packer = nemo_rl.RoutePackPacker(2000, bin_count_multiple=2, ep_ranks=4, max_moves=0)
    for lo in (0, 16):
        sched.set_routing(w.counts[lo:lo + 16], moe_layers=w.moe_layers)
        sched.get_groups_and_subsamples([(i, int(t)) for i, t in enumerate(w.lengths[lo:lo + 16])])
        packer.set_routing(w.counts[lo:lo + 16], moe_layers=w.moe_layers)
        packer.pack([int(t) for t in w.lengths[lo:lo + 16]])
        if lo == 0:
            m0, n0 = sched.last_plan, packer.last_plan
    assert sched.last_plan.migration["moves"] == moved(sched.last_plan, m0) <= 2
    # Budget 0 keeps the previous placement slot for slot.
    assert packer.last_plan.migration["moves"] == 0
    assert (packer.last_plan.logical_to_physical == n0.logical_to_physical).all()
