"""routepack (the Python module): plan, place, moves, plan files, maps, errors, cancellation."""

import json
import pathlib
import re
import threading
import time
import _thread

import numpy as np
import pytest

import routepack
from conftest import make_window

TOPO = dict(ep_ranks=4, dp_slots=4, edp_shards=2, token_cap=2048, stages=[("kda", 10.0, 0.0), ("mla", 27.0, 27.0)])


def topo(**kw):
    args = dict(TOPO)
    args.update(kw)
    return routepack.Topology(**args)


def check_layout(p, lengths, cap, D):
    """Independent check of the plan's layout: R x D non-empty cells, every sample once, cap."""
    rows = p.rows
    assert len(rows) == p.row_count
    seen = []
    for r, row in enumerate(rows):
        assert len(row) == D
        for d, cell in enumerate(row):
            assert cell, f"cell ({r}, {d}) is empty"
            assert sum(int(lengths[i]) for i in cell) <= cap
            seen.extend(cell)
    assert sorted(seen) == list(range(len(lengths)))


def test_import_names():
    for name in ("plan", "place", "load_plan", "counts_from_routes", "Library", "Topology", "Plan", "Placement"):
        assert hasattr(routepack, name)


def test_topology_fields_and_json():
    t = topo()
    assert (t.ep_ranks, t.dp_slots, t.token_cap, t.min_rows, t.row_multiple) == (4, 4, 2048, 0, 1)
    assert "row_multiple" not in json.loads(t.to_json())
    m = topo(min_rows=3, row_multiple=4)
    assert (m.min_rows, m.row_multiple) == (3, 4)
    assert json.loads(m.to_json())["row_multiple"] == 4
    assert routepack.Topology.from_json(m.to_json()) == m
    assert t.edp_shards == [[0, 1], [2, 3]]
    assert t.stages == [("kda", 10.0, 0.0), ("mla", 27.0, 27.0)]
    assert routepack.Topology.from_json(t.to_json()) == t
    assert routepack.Topology(2, 3, None, 10).edp_shards == [[0, 1, 2]]
    shipped = routepack.Topology.load("synthetic-demo-ep8-dp4")
    assert (shipped.ep_ranks, shipped.dp_slots, shipped.token_cap) == (8, 4, 8192)


@pytest.mark.parametrize("kwargs, message", [
    (dict(ep_ranks=0), "topology: ep_ranks is 0, not an integer in 1..1048576"),
    (dict(token_cap=0), "topology: token_cap is 0, not an integer in 1..1099511627776"),
    (dict(edp_shards=3), "topology: edp_shards = 3 must be >= 1 and divide dp_slots = 4"),
    (dict(edp_shards=[[0, 1], [1, 2, 3]]), "topology: DP slot 1 is in edp_shards[0] and edp_shards[1]; shards must partition the DP slots"),
    (dict(stages=[("kda", float("nan"), 0.0)]), "topology: attention_stages[0]: 'alpha' must be finite and >= 0 (got nan)"),
    (dict(stages=[("kda", 1.0, -2.0)]), "topology: attention_stages[0]: 'beta' must be finite and >= 0 (got -2.0)"),
    (dict(row_multiple=0), "topology: row_multiple is 0, not an integer in 1..1048576"),
    (dict(row_multiple=1 << 21), "topology: row_multiple is 2097152, not an integer in 1..1048576"),
    (dict(min_rows=1 << 30, row_multiple=3),
     "topology: min_rows 1073741824 rounded up to a multiple of row_multiple 3 is 1073741826 rows, above the largest "
     "row count 1073741824"),
])
def test_topology_errors(kwargs, message):
    with pytest.raises(ValueError) as e:
        topo(**kwargs)
    assert str(e.value) == message


def test_batch_rules(window):
    # The stacks' batch rules: read back from the topology, kept by the plan (6 samples per DP slot of
    # 24 on 4 slots; 2 per cell), refused with the numbers when they cannot hold.
    lengths, counts = window
    t = topo().with_batch_rules(samples_per_dp_slot=6, max_samples_per_cell=3)
    assert (t.samples_per_dp_slot, t.samples_per_cell, t.max_samples_per_cell, t.oversize) == (6, 0, 3, "refuse")
    assert routepack.Topology.from_json(t.to_json()) == t
    p = routepack.plan(lengths, counts, t, moe_layers=[1, 3], seed=7)
    check_layout(p, lengths, 2048, 4)
    assert all(sum(len(cell) for cell in slot) == 6 for slot in p.micro_batches())
    assert all(len(cell) <= 3 for row in p.rows for cell in row)
    c = routepack.plan(lengths, counts, topo().with_batch_rules(samples_per_cell=2), moe_layers=[1, 3], seed=7)
    assert c.row_count == 3 and all(len(cell) == 2 for row in c.rows for cell in row)
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo().with_batch_rules(samples_per_dp_slot=7), moe_layers=[1, 3], seed=7)
    assert str(e.value) == "24 samples cannot fill 4 DP slots with 7 each"
    with pytest.raises(ValueError) as e:
        topo().with_batch_rules(samples_per_cell=4, max_samples_per_cell=2)
    assert str(e.value) == "topology: samples_per_cell 4 exceeds max_samples_per_cell 2"


def test_migration_model(window):
    # The topology's migration cost model from Python: read back as to_json writes it, the same
    # topology as the file's "migration" object, refused with the file's text. A plan from the
    # identity: 2 moves inside node 0 (no node layout given) of 384 x 16.5 bytes each; the busiest
    # rank's bytes over 400 GB/s are the materialization seconds.
    lengths, counts = window
    model = {"expert_parameters": 384, "state_bytes_per_param": 16.5, "inter_node_GBps": 25, "seconds_per_U": 1.0}
    t = topo(migration=model)
    assert t.migration == {"achieved_TFLOPs": 400.0, "expert_parameters": 384, "inter_node_GBps": 25.0,
                           "intra_node_GBps": 400.0, "seconds_per_U": 1.0, "state_bytes_per_param": 16.5}
    doc = json.loads(topo().to_json())
    doc["migration"] = model
    assert routepack.Topology.from_json(json.dumps(doc)) == t and routepack.Topology.from_json(t.to_json()) == t
    assert topo().with_migration(model) == t and t.with_migration(None) == topo() and topo().migration is None
    assert repr(t).endswith(", migration model>")
    p = routepack.plan(lengths, counts, t, moe_layers=[1, 3], seed=7, previous=routepack.identity(2, 8, 4, moe_layers=[1, 3]))
    m = p.migration
    assert (m["objective"], m["moves"], m["layer_moves"], m["bytes"]) == ("modelled time", 2, [2, 0], 2 * 384 * 16.5)
    assert m["cost_model"]["from_topology"] and m["materialization_seconds"] == pytest.approx(12672 / 400e9, rel=1e-12)
    for bad, message in (
            ({"bogus": 1}, "topology: migration: unknown field 'bogus' (known: state_bytes_per_param, "
                           "expert_parameters, intra_node_GBps, inter_node_GBps, seconds_per_U, achieved_TFLOPs, "
                           "plan_seconds, planning)"),
            ({"inter_node_GBps": 0}, "topology: migration.inter_node_GBps is 0, not a number in [1e-06, 1e+15]"),
            ({"expert_parameters": 1.5},
             "topology: migration.expert_parameters is 1.5, not an integer in 1..1099511627776"),
            ({"seconds_per_U": "1"}, "topology: migration['seconds_per_U'] must be a number (got '1')"),
            ([("expert_parameters", 1)],
             "topology: migration must be a mapping of the cost model's fields to numbers (got list)")):
        with pytest.raises(routepack.InputError) as e:
            topo(migration=bad)
        assert str(e.value) == message


def test_row_multiple(window):
    # R is the smallest multiple of row_multiple >= the plain certified R*, with exactly that many
    # rows of D non-empty cells; the plan file records it and loads back.
    lengths, counts = window
    plain = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=7)
    assert plain.certified
    for m in (2, 3, 5):
        p = routepack.plan(lengths, counts, topo(row_multiple=m), moe_layers=[1, 3], seed=7)
        want = -(-plain.row_count // m) * m
        assert p.row_count == want and p.certified and p.row_lower_bound == want
        check_layout(p, lengths, 2048, 4)
        assert all(len(slot) == want for slot in p.micro_batches())
        assert p.topology.row_multiple == m
        assert json.loads(p.to_json())["topology"]["row_multiple"] == m
        assert routepack.plan_from_json(p.to_json()).topology.row_multiple == m
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topo(row_multiple=len(lengths)), moe_layers=[1, 3])
    assert str(e.value).startswith(f"no rectangular layout exists: row_multiple {len(lengths)} rounds the lower bound ")


def test_plan_invariants(window):
    lengths, counts = window
    p = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=7)
    check_layout(p, lengths, 2048, 4)
    assert p.moe_layers == [1, 3]
    assert p.num_hidden_layers == 4
    assert p.num_experts == 8
    assert p.seed == 7
    assert not p.cancelled
    # cell_of agrees with rows; dp_partitions / micro_batches are the rows seen per DP slot.
    cell_of = p.cell_of
    assert cell_of.dtype == np.int64 and cell_of.shape == (len(lengths), 2)
    for r, row in enumerate(p.rows):
        for d, cell in enumerate(row):
            for i in cell:
                assert tuple(cell_of[i]) == (r, d)
    mb = p.micro_batches()
    assert len(mb) == 4 and all(len(slot) == p.row_count for slot in mb)
    assert p.dp_partitions() == [[i for cell in slot for i in cell] for slot in mb]
    # Maps: int64 [L, E], mutually inverse permutations.
    p2l, l2p = p.physical_to_logical, p.logical_to_physical
    assert p2l.dtype == np.int64 and p2l.shape == (2, 8) and l2p.shape == (2, 8)
    for l in range(2):
        assert sorted(p2l[l]) == list(range(8))
        for e in range(8):
            assert p2l[l, l2p[l, e]] == e
    # The placement is LPT on the window's aggregate loads: the same as place() on those loads.
    placed = routepack.place(counts.sum(axis=0), 4, moe_layers=[1, 3])
    assert (placed.logical_to_physical == l2p).all()
    assert placed.moves(p) == [[], []]
    # Metrics of all four methods; the plan's score is routepack's.
    assert set(p.metrics) == {"baseline", "reorder", "karmarkar_karp", "routepack"}
    assert p.metrics["routepack"]["score"] == p.score
    assert p.metrics["routepack"]["score"] <= p.metrics["reorder"]["score"]
    # Each method's metrics are the plan file's, key for key and in the file's order, with the
    # integer fields as int.
    file_metrics = json.loads(p.to_json())["metrics"]
    for method, m in p.metrics.items():
        fields = {k: v for k, v in file_metrics[method].items() if k not in ("placement", "score")}
        assert list(m) == ["score"] + list(fields)
        assert list(m["score"]) == file_metrics[method]["score"]
        for key, value in fields.items():
            assert m[key] == value and type(m[key]) is type(value), (method, key)
    assert type(p.metrics["routepack"]["ep_peak_sum"]) is int
    assert p.certified == (p.row_count == p.row_lower_bound) or p.certified


def test_plan_same_whatever_workers(window):
    lengths, counts = window
    plans = [routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=5, workers=w) for w in (1, 2, 0)]
    def core(p):
        j = json.loads(p.to_json())
        j.pop("timings", None)
        j["planner"].pop("workers", None)
        return j
    assert core(plans[0]) == core(plans[1]) == core(plans[2])
    assert plans[0].rows == plans[1].rows == plans[2].rows


def test_plan_json_roundtrip(tmp_path, window):
    lengths, counts = window
    p = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], sample_ids=[f"s{i}" for i in range(24)])
    path = tmp_path / "plan.json"
    p.save(str(path))
    q = routepack.load_plan(str(path))
    assert q.rows == p.rows and q.score == p.score and q.metrics == p.metrics
    # Every field of the fresh plan is what its own plan file says.
    for field in ("row_count", "certified", "row_lower_bound", "lower_bound", "dp_slots", "moe_layers", "num_hidden_layers",
                  "num_experts", "sample_ids", "seed", "fingerprint", "topology"):
        assert getattr(q, field) == getattr(p, field), field
    assert (q.lengths == p.lengths).all() and (q.cell_of == p.cell_of).all()
    assert q.sample_ids == [f"s{i}" for i in range(24)]
    assert (q.physical_to_logical == p.physical_to_logical).all()
    assert q.to_json() == p.to_json()
    assert path.read_text() == p.to_json() + "\n"  # the file is the text plus a newline, as the CLI writes it
    assert routepack.plan_from_json(p.to_json()).rows == p.rows
    j = json.loads(p.to_json())
    assert j["format"] == "routepack-plan" and j["version"] == 10
    assert j["topology"]["row_multiple"] == 1
    # The published schema is valid JSON, names this version, and every key it requires is written.
    schema_path = pathlib.Path(__file__).resolve().parents[2] / "resources" / "schema" / "plan.schema.json"
    schema = json.loads(schema_path.read_text())
    assert schema["properties"]["version"]["const"] == j["version"]
    assert set(schema["required"]) <= set(j)
    for key, sub in schema["properties"].items():
        if key in j and isinstance(sub, dict) and "required" in sub:
            assert set(sub["required"]) <= set(j[key]), key
    # The topology object holds no field the schema (and the topology reader) does not know.
    topo_schema = schema["properties"]["topology"]
    assert topo_schema["additionalProperties"] is False
    assert set(j["topology"]) <= set(topo_schema["properties"])
    # Every method's placement name and the planner's placement_refinement are what the schema allows.
    enum = schema["$defs"]["metrics"]["properties"]["placement"]["enum"]
    assert {m["placement"] for m in j["metrics"].values()} <= set(enum)
    assert "refined" in enum
    pr_schema = schema["properties"]["planner"]["properties"]["placement_refinement"]
    assert set(j["planner"]["placement_refinement"]) == set(pr_schema["required"]) == set(pr_schema["properties"])
    assert {"comm_weight", "comm_load_tolerance", "gpus_per_node"} <= set(topo_schema["properties"])
    lb = p.lower_bound
    assert lb["value"] == j["max_u_lower_bound"]["value"] and 0 < lb["value"] <= p.score[0]
    assert lb["value"] <= max(lb["mean"], lb["sample"]) and lb["value"] > 0.999 * max(lb["mean"], lb["sample"])
    assert abs(lb["gap"] - (p.score[0] / lb["value"] - 1)) < 1e-12
    assert j["moe_layers"] == [1, 3]


def test_maps(window):
    lengths, counts = window
    p = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3])
    sg = p.sglang_map()["physical_to_logical_map"]
    vl = p.vllm_map()["physical_to_logical_map"]
    p2l = p.physical_to_logical.tolist()
    # SGLang: rows are every decoder layer 0..3, dense layers the identity; vLLM: MoE layers only.
    assert sg == [list(range(8)), p2l[0], list(range(8)), p2l[1]]
    assert vl == p2l
    assert p.placement.vllm_map() == p.vllm_map()


def test_load_plan_errors(tmp_path):
    with pytest.raises(ValueError) as e:
        routepack.load_plan(str(tmp_path / "missing.json"))
    assert str(e.value) == f"{tmp_path / 'missing.json'}: no such plan file"  # the CLI's reader and text
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match=re.escape(str(bad))):
        routepack.load_plan(str(bad))


def test_place_hand_case():
    # Algorithm 1 on one layer, E = 6, P = 2, loads (8, 5, 5, 6, 10, 1): order e4 (10), e0 (8),
    # e3 (6), e1 (5), e2 (5), e5 (1): e4 -> rank 0 slot 0; e0 -> rank 1 slot 3; e3 -> rank 1
    # (G 8 < 10) slot 4; e1 -> rank 0 (10 < 14) slot 1; e2 -> rank 0 (15 > 14? no: 15 vs 14 ->
    # rank 1 has 14 < 15) slot 5; e5 -> rank 0 slot 2.
    pl = routepack.place([[8, 5, 5, 6, 10, 1]], 2)
    assert pl.logical_to_physical.tolist() == [[3, 1, 5, 4, 0, 2]]
    assert pl.physical_to_logical.tolist() == [[4, 1, 5, 0, 3, 2]]
    assert pl.rank_loads([[8, 5, 5, 6, 10, 1]]).tolist() == [[16, 19]]
    assert routepack.rank_max_over_mean(pl.rank_loads([[8, 5, 5, 6, 10, 1]])) == [19 / 17.5]
    # Float loads holding whole numbers and [N, L, E] counts give the same placement.
    assert routepack.place(np.array([[8.0, 5, 5, 6, 10, 1]]), 2) == pl
    assert routepack.place(np.array([[[8, 5, 5, 6, 10, 1]]], dtype=np.int32), 2) == pl


def test_moves_hand_case():
    ident = routepack.identity(1, 6, 2)
    pl = routepack.place([[8, 5, 5, 6, 10, 1]], 2)
    # Identity -> pl: slot 0 now e4 (was in slot 4), slot 1 keeps e1, slot 2 e5 (from 5),
    # slot 3 e0 (from 0), slot 4 e3 (from 3), slot 5 e2 (from 2).
    assert pl.slot_changes(ident) == [[(0, 4, 4, 0), (2, 5, 5, 2), (3, 0, 0, 3), (4, 3, 3, 4), (5, 2, 2, 5)]]
    assert pl.slot_changes(pl) == [[]]
    # Experts moved (H = 3): e0 and e2 go from rank 0 to 1, e4 and e5 from rank 1 to 0; e1 and e3 keep
    # their ranks (e3 changes slot inside rank 1, which is not a move).
    assert pl.moves(ident) == [[(0, 0, 1, 0, 3), (2, 0, 1, 2, 5), (4, 1, 0, 4, 0), (5, 1, 0, 5, 2)]]
    assert pl.moves(pl) == [[]]
    with pytest.raises(ValueError, match="placements differ in shape"):
        pl.moves(routepack.identity(1, 6, 3))
    with pytest.raises(ValueError, match="previous must be a routepack Placement or Plan"):
        pl.moves([0, 1])


def test_plan_history_travels_with_the_plan(window, tmp_path):
    """Budget history_decay: the plan records the run's decayed expert loads, and the next step's plan
    folds its own into them whether the previous plan comes as a Plan, a plan file or its dict; a bare
    placement carries no history (the run starts again)."""
    lengths, counts = window
    budgets = {"history_decay": 0.5, "max_moves": 4}
    p0 = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=3, budgets=budgets)
    h0 = json.loads(p0.to_json())["history"]
    assert h0["decay"] == 0.5 and h0["steps"] == 1 and h0["weight"] == 1
    assert h0["loads"] == counts.sum(axis=0).tolist()
    shifted = counts[:, :, ::-1].copy()
    p1 = routepack.plan(lengths, shifted, topo(), moe_layers=[1, 3], seed=3, budgets=budgets, previous=p0)
    h1 = json.loads(p1.to_json())["history"]
    assert h1["steps"] == 2 and h1["weight"] == 1.5
    assert h1["loads"] == (0.5 * counts.sum(axis=0) + shifted.sum(axis=0)).tolist()
    (tmp_path / "p0.json").write_text(p0.to_json())
    for prev in (str(tmp_path / "p0.json"), json.loads(p0.to_json())):
        again = routepack.plan(lengths, shifted, topo(), moe_layers=[1, 3], seed=3, budgets=budgets, previous=prev)
        assert json.loads(again.to_json())["history"] == h1 and again.rows == p1.rows
    fresh = routepack.plan(lengths, shifted, topo(), moe_layers=[1, 3], seed=3, budgets=budgets, previous=p0.placement)
    assert json.loads(fresh.to_json())["history"]["steps"] == 1
    with pytest.raises(ValueError, match=r"^budgets\['history_decay'\] = 2 must be in \[0, 1\]$"):
        routepack.plan(lengths, shifted, topo(), moe_layers=[1, 3], budgets={"history_decay": 2})


def test_plan_with_previous(window, tmp_path):
    """The next step pays for its moves: within the budget, the previous slot kept for every expert
    that stays on its rank, the same plan whatever form the previous placement comes in."""
    lengths, counts = window
    p0 = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=3)
    assert p0.migration is None
    shifted = counts[:, :, ::-1].copy()  # the next step routes elsewhere
    p1 = routepack.plan(lengths, shifted, topo(), moe_layers=[1, 3], seed=3, previous=p0,
                        budgets={"max_moves": 4})
    m = p1.migration
    assert m["max_moves"] == 4 and m["objective"] == "score"
    assert m["moves"] <= 4 and m["moves"] == sum(len(layer) for layer in p1.moves(p0))
    before, after = p0.logical_to_physical, p1.logical_to_physical
    for l in range(2):
        for e in range(8):
            if before[l, e] // 2 == after[l, e] // 2:  # H = 8 / 4 = 2 slots per rank
                assert before[l, e] == after[l, e]
    # A Placement, a map dict, a map file and an [L, E] array name the same previous placement.
    same = dict(moe_layers=[1, 3], seed=3, budgets={"max_moves": 4})
    for prev in (p0.placement, {"moe_layers": [1, 3], "placement": before.tolist()}, before):
        assert routepack.plan(lengths, shifted, topo(), previous=prev, **same).rows == p1.rows
    (tmp_path / "map.json").write_text(json.dumps({"physical_to_logical_map": p0.physical_to_logical.tolist()}))
    assert routepack.plan(lengths, shifted, topo(), previous=str(tmp_path / "map.json"), **same).rows == p1.rows
    # Budget 0 keeps every slot; the plan file carries the section.
    kept = routepack.plan(lengths, shifted, topo(), moe_layers=[1, 3], seed=3, previous=p0, budgets={"max_moves": 0})
    assert (kept.logical_to_physical == before).all()
    assert kept.migration["moves"] == 0
    again = routepack.plan_from_json(p1.to_json())
    assert again.migration["moves"] == m["moves"]
    # One shape whether made or loaded: the plan file's section, key for key and value for value.
    assert list(again.migration) == list(m) == [
        "previous_fingerprint", "max_moves", "objective", "cost_model", "moves", "intra_node_moves",
        "inter_node_moves", "layer_moves", "bytes", "busiest_rank", "busiest_intra_node_bytes",
        "busiest_inter_node_bytes", "materialization_seconds", "compute_seconds", "modelled_seconds",
        "peak_sum_previous", "peak_sum_start"]
    assert again.migration == m
    assert again.metrics == p1.metrics and list(again.metrics) == ["baseline", "reorder", "karmarkar_karp", "routepack"]
    assert again.timings == p1.timings and "total" in again.timings
    assert again.to_json() == p1.to_json()
    with pytest.raises(ValueError, match="previous placement has 1 MoE layers x 8 experts"):
        routepack.plan(lengths, shifted, topo(), moe_layers=[1, 3], previous=before[:1])
    # place(): from the previous placement within max_moves; without a budget, LPT relabeled.
    loads = shifted.sum(axis=0)
    pl = routepack.place(loads, 4, moe_layers=[1, 3], previous=p0.placement, max_moves=2)
    assert sum(len(layer) for layer in pl.moves(p0.placement)) <= 2
    # Unlimited: per layer the busiest EP rank at most LPT's (LPT's layer is one of the options).
    full = routepack.place(loads, 4, moe_layers=[1, 3], previous=p0.placement)
    assert (full.rank_loads(loads).max(axis=1) <= routepack.place(loads, 4).rank_loads(loads).max(axis=1)).all()
    # The previous placement's MoE layers must be the loads' (once matched row by row whatever they were).
    with pytest.raises(ValueError) as e:
        routepack.place(loads, 4, previous=p0.placement)
    assert str(e.value) == "previous: the placement has MoE layers 1,3, the window 0-1"


@pytest.mark.parametrize("loads, ranks, message", [
    ([[1, 2, 3]], 2, "topology: 3 experts are not divisible by 2 EP ranks"),
    ([[1, -2]], 1, "loads[0, 1] = -2 is negative"),
    ([[1.0, float("nan")]], 1, "loads[0, 1] = nan is not a finite non-negative whole number"),
    ([[1.5, 2.0]], 1, "loads[0, 0] = 1.5 is not a finite non-negative whole number"),
    ([1, 2], 1, "loads must be 2-dimensional [L, E] with L, E >= 1 (got shape (2,))"),
    ([["a", "b"]], 1, "loads must hold integers (got dtype <U1)"),
    ([[1, 2]], 0, "ep_ranks must be >= 1 (got 0)"),
])
def test_place_errors(loads, ranks, message):
    with pytest.raises(ValueError) as e:
        routepack.place(loads, ranks)
    assert str(e.value) == message


def plan_error(lengths, counts, t=None, **kw):
    kw.setdefault("moe_layers", [1, 3])
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, t or topo(), **kw)
    return str(e.value)


def test_plan_errors(window):
    lengths, counts = window
    assert plan_error(lengths.astype(np.float64), counts) == "lengths must hold integers (got dtype float64)"
    nan_lengths = lengths.astype(np.float64)
    nan_lengths[2] = np.nan
    assert plan_error(nan_lengths, counts) == "lengths must hold integers (got dtype float64)"
    assert plan_error(lengths, counts.astype(np.float32)) == "counts must hold integers (got dtype float32)"
    neg = counts.astype(np.int64)
    neg[3, 1, 5] = -4
    assert plan_error(lengths, neg) == "counts[3, 1, 5] = -4 is negative"
    big = counts.astype(np.int64)
    big[0, 0, 0] = 1 << 40
    assert plan_error(lengths, big) == "counts[0, 0, 0] = 1099511627776 exceeds 4294967295"
    zero = lengths.copy()
    zero[4] = 0
    assert plan_error(zero, counts) == "lengths[4] = 0 must be >= 1"
    assert plan_error(lengths, counts[:, :1]) == (
        "counts has shape (24, 1, 8); expected (N, L, E) = (24, 2, E >= 1) for 24 lengths and len(moe_layers) = 2")
    assert plan_error(lengths, counts[0]) == "counts must be 3-dimensional [N, L, E] (got shape (2, 8))"
    assert plan_error(lengths[:, None], counts) == "lengths must be 1-dimensional [N] (got shape (24, 1))"
    assert plan_error(lengths, counts, moe_layers=[3, 1]) == (
        "moe_layers[1] = 1 is not above moe_layers[0] = 3 (absolute decoder-layer ids, ascending)")
    assert plan_error(lengths, counts, t=topo(ep_ranks=3)) == "topology: 8 experts are not divisible by 3 EP ranks"
    assert plan_error(lengths, counts, t=topo(token_cap=500)).startswith("sample ")
    assert "more than the cap C = 500" in plan_error(lengths, counts, t=topo(token_cap=500)) or \
        "> token cap 500" in plan_error(lengths, counts, t=topo(token_cap=500))
    assert plan_error(lengths[:3], counts[:3]) == "no rectangular layout exists: 3 samples cannot fill 4 DP slots"
    assert plan_error(lengths, counts, workers=-1) == "workers must be >= 0 (0 = all cores; got -1)"
    assert plan_error(lengths, counts, time_limit_s=float("nan")) == "time_limit_s must be finite and >= 0 (0 = none)"
    assert plan_error(lengths, counts, budgets={"stepz": 3}).startswith("budgets: unknown budget 'stepz' (known: seeds_M,")
    assert plan_error(lengths, counts, budgets={"stepz": 3}).endswith(
        "row_nodes, polish_evaluations, polish_kick_moves, placement_rounds, max_moves, history_decay, anytime)")
    assert plan_error(lengths, counts, budgets={"anytime": True}) == (
        "planner: budgets['anytime'] must be used with a time limit > 0 (got time limit 0)")
    assert plan_error(lengths, counts, seed=-1) == "seed must be an integer in 0..2**64-1 (got -1)"
    assert plan_error(lengths, counts, seed=2**64) == (
        "seed must be an integer in 0..2**64-1 (got 18446744073709551616)")
    assert plan_error(lengths, counts, seed=1.5) == "seed must be an integer in 0..2**64-1 (got 1.5)"
    assert plan_error(lengths, counts, budgets={"polish_evaluations": 2**63}) == (
        "budgets['polish_evaluations'] = 9223372036854775808 is too large (at most 1000000000)")
    assert plan_error(lengths, counts, budgets={"steps_per_level": 2**31}) == (
        "budgets['steps_per_level'] = 2147483648 is too large (at most 100000000)")
    assert plan_error(lengths, counts, budgets={"row_nodes": -2**70}) == (
        f"budgets['row_nodes'] = {-2**70} is too small (at least 0)")
    assert plan_error(lengths, counts, budgets={"seeds_M": 0}) == "budgets['seeds_M'] = 0 is too small (at least 1)"
    assert plan_error(lengths, counts, seed=10**5000) == (
        "seed must be an integer in 0..2**64-1 (got an integer of more than 4300 digits)")
    assert plan_error(lengths, counts, budgets={"steps_per_level": 10**5000}) == (
        "budgets['steps_per_level'] = an integer of more than 4300 digits is too large (at most 100000000)")
    # numpy integers (and 0-d integer arrays) are integers, as RL frameworks pass them.
    a = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=np.uint64(7),
                       budgets={"steps_per_level": np.int32(50), "polish_evaluations": np.array(300)})
    b = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=7,
                       budgets={"steps_per_level": 50, "polish_evaluations": 300})
    ja, jb = json.loads(a.to_json()), json.loads(b.to_json())
    assert a.seed == 7
    assert (ja["rows"], ja["score"], ja["planner"]["budgets"]) == (jb["rows"], jb["score"], jb["planner"]["budgets"])
    assert ja["planner"]["budgets"]["polish_evaluations"] == 300
    assert plan_error(lengths, counts, budgets={"levels": 2.0}) == "budgets['levels'] must be an integer (got 2.0)"
    assert plan_error(lengths, counts, budgets={"levels": True}) == "budgets['levels'] must be an integer (got True)"
    assert plan_error(lengths, counts, budgets={"polish_kick_moves": -1}) == (
        "budgets['polish_kick_moves'] = -1 is too small (at least 0)")
    p = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3],
                       budgets={"polish_kick_moves": 0, "polish_evaluations": 500, "p_straggler": 0.25})
    b = json.loads(p.to_json())["planner"]["budgets"]
    assert (b["polish_kick_moves"], b["polish_evaluations"], b["p_straggler"], b["anytime"]) == (0, 500, 0.25, False)
    assert b["placement_rounds"] == 2
    assert plan_error(lengths, counts, budgets={"placement_rounds": 1001}) == (
        "budgets['placement_rounds'] = 1001 is too large (at most 1000)")
    assert plan_error(lengths, counts, budgets={"placement_rounds": -1}) == (
        "budgets['placement_rounds'] = -1 is too small (at least 0)")
    p0 = json.loads(routepack.plan(lengths, counts, topo(), moe_layers=[1, 3],
                                   budgets={"placement_rounds": 0}).to_json())
    assert p0["planner"]["budgets"]["placement_rounds"] == 0
    assert p0["planner"]["placement_refinement"] == {"refined": False, "rounds_kept": 0, "swaps": 0, "skipped": False}
    assert plan_error(lengths, counts, sample_ids=["a"]) == "sample_ids holds 1 ids for 24 samples"
    dup = [f"s{i}" for i in range(24)]
    dup[7] = "s2"
    assert plan_error(lengths, counts, sample_ids=dup) == \
        "sample_ids[7]: duplicate sample id 's2' (also sample_ids[2])"
    assert plan_error(lengths, counts, top_k=9) == "model: top_k must be in 1..8 (got 9)"
    assert plan_error([[1, 2], [3]], counts) == "lengths must be a numpy array or a nested list of numbers"
    assert plan_error(lengths, counts.astype(object)) == "counts must hold integers (got dtype object)"
    assert plan_error(lengths, "counts") == "counts must be 3-dimensional [N, L, E] (got shape ())"


def big_window():
    return make_window(n=400, layers=4, experts=16, k=2, seed=9, max_len=3000)


BIG_BUDGETS = {"levels": 300, "steps_per_level": 20000, "cooling": 0.98}


def test_progress_and_cancel_by_callback():
    lengths, counts = big_window()
    stages = []

    def progress(stage, fraction):
        stages.append((stage, fraction))
        return stage != "annealing"  # cancel as soon as the annealing starts

    t = routepack.Topology(4, 4, 2, 8192)
    p = routepack.plan(lengths, counts, t, moe_layers=[0, 1, 2, 3], budgets=BIG_BUDGETS, progress=progress)
    assert p.cancelled
    assert stages[0][0] == "placement" and any(s == "annealing" for s, _ in stages)
    check_layout(p, lengths, 8192, 4)  # the best valid plan so far


def test_keyboard_interrupt_stops_the_planner():
    lengths, counts = big_window()
    t = routepack.Topology(4, 4, 2, 8192)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        routepack.plan(lengths, counts, t, moe_layers=[0, 1, 2, 3], budgets=BIG_BUDGETS)
    timer.join()
    # The full budget runs for minutes; the interrupt ended it within seconds.
    assert time.monotonic() - start < 30


def test_exception_in_progress_propagates():
    lengths, counts = make_window()

    def progress(stage, fraction):
        raise RuntimeError("from the callback")

    with pytest.raises(RuntimeError, match="from the callback"):
        routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], progress=progress)


def test_gil_released_while_planning():
    lengths, counts = big_window()
    t = routepack.Topology(4, 4, 2, 8192)
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1

    th = threading.Thread(target=spin)
    th.start()
    try:
        before = ticks[0]
        routepack.plan(lengths, counts, t, moe_layers=[0, 1, 2, 3], budgets={"levels": 4, "steps_per_level": 2000})
        during = ticks[0] - before
    finally:
        stop.set()
        th.join()
    assert during > 10000  # the other thread ran (pure-Python increments) while the planner worked


def test_docs_trainer_example(tmp_path, monkeypatch):
    """docs/python.md's trainer example runs as written, and gives what its comments say."""
    import os

    page = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")
    text = open(page, encoding="utf-8").read()
    start = text.index("```python\nimport numpy as np, routepack\n") + len("```python\n")
    code = text[start:text.index("```", start)]
    monkeypatch.chdir(tmp_path)
    env = {}
    exec(compile(code, "docs/python.md", "exec"), env)
    assert len(env["mine"]) == env["plan"].row_count
    assert routepack.load_plan("plan.json").rows == env["plan"].rows
    assert len(env["copies"]) == 3


def test_plan_same_in_another_process(window):
    """Ranks planning independently agree bit for bit: a fresh interpreter gives the same plan file."""
    import os
    import subprocess
    import sys

    lengths, counts = window
    here = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=11, workers=2)
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import routepack; from conftest import make_window; "
            "l, c = make_window(); "
            "t = routepack.Topology(4, 4, 2, 2048, stages=[('kda', 10.0, 0.0), ('mla', 27.0, 27.0)]); "
            "print(routepack.plan(l, c, t, moe_layers=[1, 3], seed=11, workers=1).to_json())")
    out = subprocess.run([sys.executable, "-c", code, os.path.dirname(__file__)], capture_output=True, text=True,
                         check=True, env=dict(os.environ)).stdout
    a, b = json.loads(out), json.loads(here.to_json())
    for j in (a, b):
        j.pop("timings")
        j["planner"].pop("workers")
    assert a == b


def test_budget_upper_bounds():
    # Every budget has an upper bound (memory and time stay bounded): the value, the key and the limit.
    lengths, counts = np.full(8, 10), np.ones((8, 1, 4), dtype=np.int64)
    topology = routepack.Topology(ep_ranks=2, dp_slots=2, edp_shards=2, token_cap=100)

    def error(budgets):
        with pytest.raises(ValueError) as e:
            routepack.plan(lengths, counts, topology, moe_layers=[0], budgets=budgets)
        return str(e.value)

    assert error({"seeds_M": 10**7}) == "budgets['seeds_M'] = 10000000 is too large (at most 4096)"
    assert error({"population": 257}) == "budgets['population'] = 257 is too large (at most 256)"
    assert error({"row_nodes": 2**63 - 1}) == (
        "budgets['row_nodes'] = 9223372036854775807 is too large (at most 1000000000)")
    assert error({"levels": 1001}) == "budgets['levels'] = 1001 is too large (at most 1000)"
    assert error({"polish_kick_moves": 10**6 + 1}) == (
        "budgets['polish_kick_moves'] = 1000001 is too large (at most 1000000)")


def test_budgets_take_the_json_keys_and_the_old_names_with_a_warning(window):
    # budgets={...} takes the plan file's planner.budgets keys; every one comes back as given.
    lengths, counts = window
    given = {"seeds_M": 3, "population": 2, "choice_width": 5, "eta": 0.25, "projections": 4,
             "pair_candidates": 16, "levels": 2, "t0": 0.5, "cooling": 0.9, "steps_per_level": 40,
             "p_guide": 0.5, "rho": 0.25, "p_straggler": 0.75, "row_nodes": 5000, "polish_evaluations": 100,
             "polish_kick_moves": 2, "placement_rounds": 1, "max_moves": 7, "history_decay": 0.5,
             "anytime": False}
    p = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=5, budgets=given)
    stored = json.loads(p.to_json())["planner"]["budgets"]
    assert {k: stored[k] for k in given} == given and stored["time_limit_s"] == 0
    # The JSON keys are the whole list of a misspelt key (workers and time_limit_s are plan()'s own).
    message = plan_error_of(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={"x": 1}))
    assert message == "budgets: unknown budget 'x' (known: " + ", ".join(given) + ")"
    for key in ("workers", "time_limit_s"):
        assert plan_error_of(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={key: 1})) == (
            f"budgets: '{key}' is an argument of plan(), not a budgets key")
    # The old names still work, with a DeprecationWarning naming the key to use, and give the same plan.
    new = {"seeds_M": 3, "steps_per_level": 40, "levels": 2}
    for old, key in (("seeds", "seeds_M"), ("steps", "steps_per_level")):
        budgets = dict(new)
        budgets[old] = budgets.pop(key)
        with pytest.warns(DeprecationWarning, match=re.escape(f"use budgets['{key}']")):
            a = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=5, budgets=budgets)
        b = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=5, budgets=new)
        ja, jb = json.loads(a.to_json()), json.loads(b.to_json())
        ja.pop("timings"), jb.pop("timings")
        assert ja == jb
        both = dict(new)
        both[old] = 1
        assert plan_error_of(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets=both)) == (
            f"budgets: give either '{key}' or its old name '{old}', not both")
    with pytest.warns(DeprecationWarning):
        assert plan_error_of(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3],
                                                    budgets={"seeds": 0})) == (
            "budgets['seeds'] = 0 is too small (at least 1)")


def plan_error_of(call):
    with pytest.raises(ValueError) as e:
        call()
    return str(e.value)


def test_moe_layers_largest_id():
    # The last MoE layer id + 1 is the default num_hidden_layers: 2^31 - 1 is refused, not wrapped.
    lengths, counts = np.full(8, 10), np.ones((8, 1, 4), dtype=np.int64)
    topology = routepack.Topology(ep_ranks=2, dp_slots=2, edp_shards=2, token_cap=100)
    with pytest.raises(ValueError) as e:
        routepack.plan(lengths, counts, topology, moe_layers=[2**31 - 1])
    assert str(e.value) == (
        "moe_layers: MoE layer 2147483647 is outside 0..99999 (num_hidden_layers is at most 100000)")
    assert routepack.plan(lengths, counts, topology, moe_layers=[99999]).num_hidden_layers == 100000


def test_progress_false_stops_a_long_stage():
    # One annealing level of 10^8 proposals sends no event until it ends; progress is called again
    # with the last stage while it runs, and returning False there stops the level (the plan comes
    # back cancelled instead of after the whole level).
    lengths = np.arange(40, 72)
    counts = np.ones((32, 1, 4), dtype=np.int64)
    topology = routepack.Topology(ep_ranks=2, dp_slots=2, edp_shards=2, token_cap=400)
    calls = []

    def progress(stage, fraction):
        calls.append((stage, fraction))
        # A repeated (stage, fraction) only comes from the repeat while no event arrives.
        return not (stage == "annealing" and calls.count((stage, fraction)) >= 2)

    plan = routepack.plan(lengths, counts, topology, moe_layers=[0], progress=progress,
                          budgets={"levels": 1, "steps_per_level": 10**8, "population": 1, "seeds_M": 2})
    assert plan.cancelled
    assert calls.count(("annealing", 0.4)) == 2


def test_keyboard_interrupt_stops_the_row_count():
    # A window whose R* is hard to certify (41 lengths in 251..499, cap 1000, 2 DP slots): the row
    # count's exact search runs linearly in row_nodes; Ctrl-C stops it (and the time limit does too)
    # instead of leaving the planner thread to be joined after the whole budget.
    rng = np.random.default_rng(12)
    lengths = rng.integers(251, 500, size=41)
    counts = np.zeros((41, 1, 4), dtype=np.int64)
    counts[np.arange(41), 0, np.arange(41) % 4] = lengths
    t = routepack.Topology(2, 2, 2, 1000)
    budgets = {"row_nodes": 10**9, "levels": 1, "steps_per_level": 10, "seeds_M": 2, "population": 1}
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        routepack.plan(lengths, counts, t, moe_layers=[0], budgets=budgets)
    timer.join()
    limited = routepack.plan(lengths, counts, t, moe_layers=[0], budgets=budgets, time_limit_s=0.2)
    assert limited.time_limit_hit
    assert not limited.certified

def plan_doc(p):
    d = json.loads(p.to_json())
    d.pop("timings")
    return d


def test_big_endian_arrays_give_the_native_values(window):
    lengths, counts = window
    native = plan_doc(routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], seed=5))
    swapped = plan_doc(routepack.plan(lengths.astype(">i8"), counts.astype(">u4"), topo(), moe_layers=[1, 3], seed=5))
    assert swapped == native
    assert plan_doc(routepack.plan(lengths.astype(">i4"), counts.astype(">i2"), topo(), moe_layers=[1, 3],
                                   seed=5)) == native
    loads = np.array([[8, 5, 5, 6, 10, 1]])
    pl = routepack.place(loads, 2)
    for dtype in (">i8", ">u4", ">i2", ">f8", ">f4"):
        assert routepack.place(loads.astype(dtype), 2) == pl
        assert pl.rank_loads(loads.astype(dtype)).tolist() == [[16, 19]]
    assert routepack.rank_max_over_mean(np.array([[16, 19]], dtype=">u8")) == [19 / 17.5]
    neg = loads.astype(">i4")
    neg[0, 2] = -300
    with pytest.raises(ValueError) as e:
        routepack.place(neg, 2)
    assert str(e.value) == "loads[0, 2] = -300 is negative"


def call_error(f):
    with pytest.raises(ValueError) as e:
        f()
    return str(e.value)


L0, C0 = make_window(n=8)
BOOL_CASES = [
    (lambda b: routepack.Topology(b, 4, None, 2048), "topology: ep_ranks must be an integer (got True)"),
    (lambda b: routepack.Topology(4, b, None, 2048), "topology: dp_slots must be an integer (got True)"),
    (lambda b: routepack.Topology(4, 4, b, 2048), "topology: edp_shards must be an integer (got True)"),
    (lambda b: routepack.Topology(4, 4, [[0, b], [2, 3]], 2048), "topology: edp_shards[0][1] must be an integer (got True)"),
    (lambda b: routepack.Topology(4, 4, None, b), "topology: token_cap must be an integer (got True)"),
    (lambda b: routepack.Topology(4, 4, None, 2048, min_rows=b), "topology: min_rows must be an integer (got True)"),
    (lambda b: routepack.Topology(4, 4, None, 2048, row_multiple=b), "topology: row_multiple must be an integer (got True)"),
    (lambda b: routepack.Topology(4, 4, None, 2048, experts_per_layer=b),
     "topology: experts_per_layer must be an integer (got True)"),
    (lambda b: routepack.Topology(4, 4, None, 2048, stages=[("a", b, 0.0)]),
     "topology: stages[0][1] must be a number (got True)"),
    (lambda b: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], workers=b), "workers must be an integer (got True)"),
    (lambda b: routepack.plan(L0, C0, topo(), moe_layers=[1, b]), "moe_layers[1] must be an integer (got True)"),
    (lambda b: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], top_k=b), "top_k must be an integer (got True)"),
    (lambda b: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], num_hidden_layers=b),
     "num_hidden_layers must be an integer (got True)"),
    (lambda b: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], seed=b), "seed must be an integer in 0..2**64-1 (got True)"),
    (lambda b: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], time_limit_s=b), "time_limit_s must be a number (got True)"),
    (lambda b: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], budgets={"steps_per_level": b}),
     "budgets['steps_per_level'] must be an integer (got True)"),
    (lambda b: routepack.place([[1, 2]], b), "ep_ranks must be an integer (got True)"),
    (lambda b: routepack.place([[1, 2]], 1, moe_layers=[b]), "moe_layers[0] must be an integer (got True)"),
    (lambda b: routepack.place([[1, 2]], 1, num_hidden_layers=b), "num_hidden_layers must be an integer (got True)"),
    (lambda b: routepack.identity(b, 2, 1), "layers must be an integer (got True)"),
    (lambda b: routepack.identity(1, b, 1), "num_experts must be an integer (got True)"),
    (lambda b: routepack.identity(1, 2, b), "ep_ranks must be an integer (got True)"),
    (lambda b: routepack.counts_from_routes(np.zeros((1, 1, 1, 1), np.int16), b, moe_layers=[0]),
     "num_experts must be an integer (got True)"),
]


@pytest.mark.parametrize("case", range(len(BOOL_CASES)))
@pytest.mark.parametrize("b", [True, np.bool_(True), np.array(True)])
def test_bools_are_never_integers(case, b):
    f, message = BOOL_CASES[case]
    got = call_error(lambda: f(b))
    assert got == message.replace("(got True)", f"(got {ascii(b)})")


def test_bool_arrays_are_not_integer_arrays(window):
    lengths, counts = window
    assert call_error(lambda: routepack.plan(lengths, counts.astype(bool), topo(), moe_layers=[1, 3])) == (
        "counts must hold integers (got dtype bool)")
    assert call_error(lambda: routepack.plan(lengths > 0, counts, topo(), moe_layers=[1, 3])) == (
        "lengths must hold integers (got dtype bool)")
    assert call_error(lambda: routepack.place([[True, False]], 1)) == "loads must hold integers (got dtype bool)"


def test_numpy_and_large_integers(window):
    lengths, counts = window
    t = routepack.Topology(np.int64(4), np.int32(4), [[np.int64(0), np.uint8(1)], np.array([2, 3])], np.int64(2048),
                           stages=[("kda", np.float32(10.0), 0), ("mla", 27, np.float64(27.0))],
                           min_rows=np.int16(0), row_multiple=np.uint64(1))
    assert t == topo()
    assert routepack.Topology(4, 4, np.int64(2), 2048, stages=TOPO["stages"]) == topo()
    a = plan_doc(routepack.plan(lengths, counts, t, moe_layers=np.array([1, 3]), workers=np.int64(1),
                                top_k=np.int8(2), num_hidden_layers=np.int32(4), time_limit_s=np.float64(0)))
    b = plan_doc(routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], top_k=2, num_hidden_layers=4))
    assert a == b
    assert routepack.place([[1, 2]], np.int64(2), moe_layers=[np.int64(5)]).moe_layers == [5]
    assert routepack.identity(np.int64(1), np.int32(4), np.uint16(2)).num_experts == 4
    assert call_error(lambda: routepack.Topology(4, 4, [[0, 1], [2, 2**40]], 2048)) == (
        "topology: edp_shards[1][1] = 1099511627776 is too large (at most 2147483647)")
    assert call_error(lambda: routepack.Topology(4, 4, [[np.int64(-2**40)], [1, 2, 3]], 2048)) == (
        "topology: edp_shards[0][0] = -1099511627776 is too small (at least -2147483648)")
    assert call_error(lambda: routepack.Topology(4, 4, [[0, 1.0], [2, 3]], 2048)) == (
        "topology: edp_shards[0][1] must be an integer (got 1.0)")
    assert call_error(lambda: routepack.Topology(4, 4, [0, 1], 2048)) == (
        "topology: edp_shards[0] must be a list of integers (got int)")
    assert call_error(lambda: routepack.Topology(2**40, 4, None, 2048)) == (
        "topology: ep_ranks = 1099511627776 is too large (at most 2147483647)")
    assert call_error(lambda: routepack.Topology(4, 4, None, 2**70)) == (
        "topology: token_cap = 1180591620717411303424 is too large (at most 9223372036854775807)")
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], workers=2**40)) == (
        "workers = 1099511627776 is too large (at most 2147483647)")
    assert call_error(lambda: routepack.place([[1, 2]], np.uint64(2**63))) == (
        "ep_ranks = 9223372036854775808 is too large (at most 2147483647)")
    assert call_error(lambda: routepack.identity(1, 4, 2, moe_layers=[np.int64(2**40)])) == (
        "moe_layers[0] = 1099511627776 is too large (at most 2147483647)")


class RaisingIndex:
    """An integer-like whose __index__ (and __float__) raises `exc`: a Ctrl-C during the conversion."""

    def __init__(self, exc):
        self.exc = exc

    def __index__(self):
        raise self.exc

    def __float__(self):
        raise self.exc


class RaisingArray:
    def __init__(self, exc):
        self.exc = exc

    def __array__(self, *args, **kwargs):
        raise self.exc


RAISING_CASES = [
    lambda x: routepack.Topology(x, 4, None, 2048),
    lambda x: routepack.Topology(4, 4, x, 2048),
    lambda x: routepack.Topology(4, 4, [[0, x], [2, 3]], 2048),
    lambda x: routepack.Topology(4, 4, None, x),
    lambda x: routepack.Topology(4, 4, None, 2048, stages=[("a", x, 0.0)]),
    lambda x: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], workers=x),
    lambda x: routepack.plan(L0, C0, topo(), moe_layers=[1, x]),
    lambda x: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], seed=x),
    lambda x: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], top_k=x),
    lambda x: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], time_limit_s=x),
    lambda x: routepack.plan(L0, C0, topo(), moe_layers=[1, 3], budgets={"levels": x}),
    lambda x: routepack.place([[1, 2]], x),
    lambda x: routepack.identity(1, x, 1),
]


@pytest.mark.parametrize("case", range(len(RAISING_CASES)))
@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, MemoryError, RuntimeError])
def test_exceptions_of_a_conversion_propagate(case, exc):
    with pytest.raises(exc):
        RAISING_CASES[case](RaisingIndex(exc))


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit, MemoryError])
def test_exceptions_of_an_array_conversion_propagate(window, exc):
    lengths, counts = window
    with pytest.raises(exc):
        routepack.plan(RaisingArray(exc), counts, topo(), moe_layers=[1, 3])
    with pytest.raises(exc):
        routepack.plan(lengths, RaisingArray(exc), topo(), moe_layers=[1, 3])
    with pytest.raises(exc):
        routepack.place(RaisingArray(exc), 2)
    with pytest.raises(exc):
        routepack.identity(1, 2, 1).rank_loads(RaisingArray(exc))
    # TypeError / ValueError from __array__ are plain conversion failures: the argument's ValueError.
    assert call_error(lambda: routepack.plan(lengths, RaisingArray(TypeError("x")), topo(), moe_layers=[1, 3])) == (
        "counts must be a numpy array or a nested list of numbers")


def test_sample_ids_must_be_unicode_text(window):
    lengths, counts = window
    ids = [f"s{i}" for i in range(24)]
    ids[5] = "name-\udcff.npy"  # os.fsdecode of a file name with byte 0xff
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], sample_ids=ids)) == (
        "sample_ids[5] = 'name-\\udcff.npy' is not valid Unicode text: lone surrogate U+DCFF at character 5 "
        "(it cannot be written as UTF-8)")
    ids[5] = b"a\xff"  # bytes are not text: never stored as their repr
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], sample_ids=ids)) == (
        "sample_ids[5] must be a str (got bytes)")
    ids[5] = np.str_("s5-\u00e9")  # numpy strings and non-ASCII text are fine
    p = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], sample_ids=ids)
    assert p.sample_ids[5] == "s5-\u00e9" and p.sample_ids[23] == "s23"
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], trace_name="t\ud800")) == (
        "trace_name = 't\\ud800' is not valid Unicode text: lone surrogate U+D800 at character 1 "
        "(it cannot be written as UTF-8)")


def test_rank_loads_never_wrap():
    pl = routepack.identity(1, 4, 2)  # ranks own slots {0, 1} and {2, 3}
    two = np.array([[2**63, 2**63, 0, 0]], dtype=np.uint64)
    assert call_error(lambda: pl.rank_loads(two)) == (
        "rank_loads: the loads on EP rank 0 at layer index 0 sum to 18446744073709551616, more than a uint64 "
        "holds (at most 18446744073709551615)")
    # The largest sum that fits, and two 2**63 loads on different ranks, come back exactly.
    assert pl.rank_loads(np.array([[2**63, 2**63 - 1, 0, 0]], dtype=np.uint64)).tolist() == [[2**64 - 1, 0]]
    assert pl.rank_loads(np.array([[2**63, 0, 2**63, 0]], dtype=np.uint64)).tolist() == [[2**63, 2**63]]
    assert call_error(lambda: routepack.place(two, 2)) == (
        "loads: layer 0 sums to 18446744073709551616, more than a uint64 holds (at most 18446744073709551615)")


def test_load_plan_refuses_what_the_cli_refuses(tmp_path, window):
    import os
    import subprocess
    from conftest import cli

    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.json"
    folder.mkdir()
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate((256 << 20) + 1)  # sparse: nothing is written or read
    cases = {
        str(fifo): f"{fifo}: is a pipe (FIFO), not a plan file",
        "/dev/zero": "/dev/zero: is a device, not a plan file",
        str(folder): f"{folder}: is a folder, not a plan file",
        str(big): f"{big}: too large for a plan file: 268435457 bytes, the limit is 268435456 bytes",
        str(tmp_path / "none.json"): f"{tmp_path / 'none.json'}: no such plan file",
    }
    for path, message in cases.items():
        assert call_error(lambda: routepack.load_plan(path)) == message
        assert call_error(lambda: routepack.load_plan(pathlib.Path(path))) == message
        exe = cli()
        if exe and os.path.exists(exe):  # the very text of `routepack validate`
            env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
            r = subprocess.run([exe, "validate", path], capture_output=True, text=True, env=env)
            assert r.returncode != 0 and r.stderr.strip().endswith(message), r.stderr
    # A valid plan under a file name that is not UTF-8 (bytes, or the str os.fsdecode gives).
    lengths, counts = window
    p = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3])
    raw = os.fsencode(str(tmp_path)) + b"/plan-\xff.json"
    with open(raw, "w") as f:
        f.write(p.to_json())
    assert routepack.load_plan(raw).to_json() == p.to_json()
    assert routepack.load_plan(os.fsdecode(raw)).to_json() == p.to_json()
    assert call_error(lambda: routepack.load_plan(raw + b".missing")).endswith("/plan-\\xff.json.missing: no such plan file")
    assert call_error(lambda: routepack.load_plan(3)) == "path must be a path (str, bytes or os.PathLike; got int)"


def test_library_strings_that_are_not_utf8(tmp_path):
    """Names stored by older imports from file names that are not UTF-8 come back decoded with
    'surrogateescape' (every string the module returns from a library), can be passed back, and a
    plan file that would have to hold one is refused naming it; a sample id that is not UTF-8 is
    refused by the library on load, naming the file, trace and sample."""
    import os
    import sqlite3
    import subprocess
    from conftest import cli

    exe = cli()
    if not exe or not os.path.exists(exe):
        pytest.skip("ROUTEPACK_CLI is not set (run through ctest)")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}

    def run(*args):
        r = subprocess.run([exe, *args], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr

    run("synth", "--out", str(tmp_path / "synth"), "--groups", "2", "--group-size", "4", "--layers", "3",
        "--dense-layers", "1", "--experts", "8", "--top-k", "2", "--seed", "3")
    db = str(tmp_path / "lib.routepack")
    run("import", "--db", db, "--name", "syn", "--quiet", "--experts", "8", "--top-k", "2", "--layers", "3",
        "--moe-layers", "1-2", str(tmp_path / "synth"))
    run("window", "--db", db, "--trace", "syn", "--name", "w", "--first", "8")
    topology = routepack.Topology(4, 4, None, 8192)
    clean = routepack.plan_window(routepack.Library(db).load("syn", "w"), topology, seed=2)

    # What an older import stored: a sample id with byte 0xff. The library refuses it on load,
    # naming the file, trace and sample (no Window ever holds a sample id that is not UTF-8).
    with sqlite3.connect(db) as c:
        first = c.execute("SELECT sample_id FROM samples ORDER BY position LIMIT 1").fetchone()[0]
        c.execute("UPDATE samples SET sample_id = CAST(X'6261642dff2d6964' AS TEXT) WHERE position = 0")
    lib = routepack.Library(db)
    message = call_error(lambda: lib.load("syn", "w"))
    assert message.startswith(f"{db}: trace 'syn' sample 'bad-\\xff-id': id is not valid UTF-8"), message
    assert [t["name"] for t in lib.traces()] == ["syn"]
    with sqlite3.connect(db) as c:
        c.execute("UPDATE samples SET sample_id = ? WHERE position = 0", (first,))

    # A trace name with byte 0xfe: decoded with 'surrogateescape', and accepted back.
    with sqlite3.connect(db) as c:
        c.execute("UPDATE traces SET name = CAST(X'73796efe' AS TEXT)")
    lib = routepack.Library(db)
    name = lib.traces()[0]["name"]
    assert name == "syn\udcfe" and name.encode("utf-8", "surrogateescape") == b"syn\xfe"
    assert [x["trace"] for x in lib.windows(name)] == [name]
    w = lib.load(name, "w")
    assert (w.trace_name, w.window_name, len(w)) == (name, "w", 8)
    assert w.sample_ids == clean.sample_ids
    assert lib.layer_totals(name).shape == (2, 8)
    # Planned like any window; only a plan file cannot hold the name, and says so.
    p = routepack.plan_window(w, topology, seed=2)
    assert p.rows == clean.rows and p.sample_ids == clean.sample_ids
    assert call_error(p.to_json) == (
        "plan: the name of trace 'syn\\xfe' is not valid UTF-8, so no plan file can hold it (re-import the trace)")
    assert call_error(lambda: lib.load("syn\udcfd")) == f"no trace named 'syn\\xfd' in {db}"
    assert call_error(lambda: lib.load("syn\ud800")) == (
        "trace = 'syn\\ud800' is not valid Unicode text: lone surrogate U+D800 at character 3 "
        "(it cannot be written as UTF-8)")


def test_place_per_sample_counts_never_wrap():
    # [N, L, E] counts are summed over N: two samples of 2**63 on one expert pass 2**64-1.
    counts = np.zeros((2, 1, 2), dtype=np.uint64)
    counts[:, 0, 1] = 2**63
    assert call_error(lambda: routepack.place(counts, 1)) == (
        "loads[:, 0, 1] sums to 18446744073709551616, more than a uint64 holds (at most 18446744073709551615)")
    counts[1, 0, 1] = 2**63 - 1  # the largest total that fits is summed exactly
    pl = routepack.place(counts, 2)
    assert pl.rank_loads(counts.sum(axis=0, dtype=np.uint64)).tolist() in ([[0, 2**64 - 1]], [[2**64 - 1, 0]])
    assert call_error(lambda: routepack.place(np.ones((2, 1, 2), dtype=bool), 1)) == (
        "loads must hold integers (got dtype bool)")
    big_endian = np.array([[[8, 5, 5, 6, 10, 1]], [[1, 1, 1, 1, 1, 1]]], dtype=">i4")
    assert routepack.place(big_endian, 2) == routepack.place([[9, 6, 6, 7, 11, 2]], 2)


def test_text_arguments_are_named(window):
    assert call_error(lambda: routepack.Topology.from_json(b"{}")) == "text must be a str (got bytes)"
    assert call_error(lambda: routepack.Topology.load(3)) == "spec must be a path (str, bytes or os.PathLike; got int)"
    assert routepack.Topology.load(b"synthetic-demo-ep8-dp4") == routepack.Topology.load("synthetic-demo-ep8-dp4")
    assert call_error(lambda: routepack.plan_from_json(None)) == "text must be a str (got NoneType)"
    pl = routepack.place([[1, 2]], 1)
    assert call_error(lambda: pl.export_map(b"vllm")) == "format must be a str (got bytes)"
    assert call_error(lambda: routepack.Topology(4, 4, None, 2048, stages=[("a\ud800", 1.0, 0.0)])) == (
        "topology: stages[0][0] = 'a\\ud800' is not valid Unicode text: lone surrogate U+D800 at character 1 "
        "(it cannot be written as UTF-8)")
    assert call_error(lambda: routepack.Topology(4, 4, None, 2048, stages=[("a", 1.0)])) == (
        "topology: stages[0] must be (name, alpha, beta) (got 2 values)")


def test_budget_numbers(window):
    lengths, counts = window
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={"eta": True})) == (
        "budgets['eta'] must be a number (got True)")
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={"t0": "hot"})) == (
        "budgets['t0'] must be a number (got 'hot')")
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3],
                                             budgets={"cooling": 10**400})) == (
        f"budgets['cooling'] must be a number (got {10**400})")
    # Out of range: the budget table's rule, in the same words as the integers' errors.
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={"cooling": 1.5})) == (
        "budgets['cooling'] = 1.5 must be in (0, 1]")
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={"t0": 0})) == (
        "budgets['t0'] = 0 must be a finite number > 0")
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={"rho": -0.5})) == (
        "budgets['rho'] = -0.5 must be in [0, 1]")
    for exc in (KeyboardInterrupt, SystemExit):
        with pytest.raises(exc):
            routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={"rho": RaisingIndex(exc)})
    p = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={"p_guide": np.float32(0.5), "rho": 0})
    b = json.loads(p.to_json())["planner"]["budgets"]
    assert (b["p_guide"], b["rho"]) == (0.5, 0.0)
    # moe_layers may be any sequence of integers, a numpy array included; a non-sequence is named.
    assert call_error(lambda: routepack.plan(lengths, counts, topo(), moe_layers=3)) == (
        "moe_layers must be a list of integers (got int)")


def test_bools_inside_nested_lists(window):
    lengths, counts = window
    ls = [int(x) for x in lengths]
    ls[3] = True
    assert call_error(lambda: routepack.plan(ls, counts, topo(), moe_layers=[1, 3])) == (
        "lengths[3] = True is a bool, not an integer")
    cs = counts.tolist()
    cs[2][1][4] = np.bool_(False)
    assert call_error(lambda: routepack.plan(lengths, cs, topo(), moe_layers=[1, 3])) == (
        "counts[2, 1, 4] = False is a bool, not an integer")
    assert call_error(lambda: routepack.place([[1, 2], (3, True)], 1)) == "loads[1, 1] = True is a bool, not an integer"
    assert call_error(lambda: routepack.place([[[1, True]]], 1)) == (
        "loads must hold integers (got a bool inside the nested lists)")
    assert call_error(lambda: routepack.identity(1, 2, 1).rank_loads([[True, 1]])) == (
        "loads[0, 0] = True is a bool, not an integer")
    # Lists of plain integers are as good as arrays.
    assert plan_doc(routepack.plan(lengths.tolist(), counts.tolist(), topo(), moe_layers=[1, 3])) == \
        plan_doc(routepack.plan(lengths, counts, topo(), moe_layers=[1, 3]))


def test_import_routepack_needs_no_torch():
    # routepack.torch is the only part that imports torch: without it the rest imports and plans.
    import subprocess
    import sys

    code = ("import sys; sys.modules['torch'] = None\n"
            "import routepack, routepack.adapters.slime, routepack.adapters.verl, routepack.adapters.megatron\n"
            "print(routepack.identity(1, 4, 2).physical_to_logical.tolist())\n"
            "try:\n    import routepack.torch\nexcept ImportError as e:\n    print('ImportError', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["[[0, 1, 2, 3]]", "ImportError import of torch halted; None in sys.modules"]
