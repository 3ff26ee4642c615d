"""The public calls of the module, as the tests and the docs make them, with the types the stubs
give them. test_conventions.py runs mypy on this file (every assert_type is checked statically: the
types are the stubs', not Any) and runs it (every call made, every value compared): the stubs and
the module cannot drift apart unseen.

run(folder, library) writes into `folder`; `library` is a library file with a trace "syn" holding
a window "w" of 5 MoE layers x 16 experts (None: the library calls are left out).
"""

from __future__ import annotations

import os
import pickle
from typing import Any, Optional, assert_type

import numpy as np
import numpy.typing as npt

import routepack

E, MOE = 16, [1, 2, 3]


def arrays(samples: int = 24) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
    """A window of `samples` samples: lengths, and counts from random per-token routes."""
    rng = np.random.default_rng(0)
    S = 96
    routes = rng.integers(0, E, size=(samples, S, 4, 2), dtype=np.int16)
    lengths = rng.integers(20, S, size=samples).astype(np.int64)
    mask = np.arange(S)[None, :] < lengths[:, None]
    counts = routepack.counts_from_routes(routes, E, moe_layers=MOE, valid=mask)
    assert_type(counts, npt.NDArray[np.int32])
    assert counts.shape == (samples, 3, E) and counts.dtype == np.int32
    assert (counts.sum(axis=2) == 2 * lengths[:, None]).all()
    per_sample = routepack.counts_from_routes([routes[i, : lengths[i]] for i in range(samples)], np.int64(E),
                                              moe_layers=MOE)
    assert (per_sample == counts).all()
    return lengths, counts


def topologies() -> routepack.Topology:
    topo = routepack.Topology(4, 4, 2, 2048, stages=[("kda", 10.0, 0.0), ("mla", 27.0, 27.0)], row_multiple=2)
    assert_type(topo, routepack.Topology)
    assert_type(topo.ep_ranks, int)
    assert_type(topo.edp_shards, list[list[int]])
    assert_type(topo.stages, list[tuple[str, float, float]])
    assert (topo.ep_ranks, topo.dp_slots, topo.token_cap, topo.row_multiple, topo.nodes) == (4, 4, 2048, 2, 1)
    assert topo.edp_shards == [[0, 1], [2, 3]]
    assert routepack.Topology.from_json(topo.to_json()) == topo
    ruled = topo.with_batch_rules(samples_per_dp_slot=6)
    assert_type(ruled, routepack.Topology)
    assert (ruled.samples_per_dp_slot, ruled.oversize) == (6, "refuse")
    shipped = routepack.Topology.load("synthetic-demo-ep8-dp4")
    assert "synthetic-demo-ep8-dp4" in routepack.Topology.known_names()
    assert (shipped.ep_ranks, shipped.dp_slots) == (8, 4)
    return topo


def plans(folder: str, lengths: npt.NDArray[np.int64], counts: npt.NDArray[np.int32],
          topo: routepack.Topology) -> routepack.Plan:
    seen: list[str] = []

    def progress(stage: str, fraction: float) -> Optional[bool]:
        seen.append(stage)
        return None

    plan = routepack.plan(lengths, counts, topo, moe_layers=MOE, seed=np.uint64(1), workers=1, progress=progress,
                          budgets={"levels": 4, "steps_per_level": 200})
    assert_type(plan, routepack.Plan)
    assert seen
    assert_type(plan.row_count, int)
    assert_type(plan.certified, bool)
    assert_type(plan.score, tuple[float, float, float])
    assert_type(plan.rows, list[list[list[int]]])
    assert_type(plan.cell_of, npt.NDArray[np.int64])
    assert_type(plan.lengths, npt.NDArray[np.int64])
    assert_type(plan.physical_to_logical, npt.NDArray[np.int64])
    assert_type(plan.metrics, dict[str, dict[str, Any]])
    assert_type(plan.migration, Optional[dict[str, Any]])
    assert_type(plan.micro_batches(), list[list[list[int]]])
    assert_type(plan.dp_partitions(), list[list[int]])
    assert plan.row_count % 2 == 0 and len(plan.micro_batches()[0]) == plan.row_count
    assert sorted(i for part in plan.dp_partitions() for i in part) == list(range(len(lengths)))
    assert (plan.lengths == lengths).all() and plan.migration is None
    path = os.path.join(folder, "plan.json")
    plan.save(path)
    again = routepack.load_plan(path)
    assert again.to_json() == plan.to_json() == routepack.plan_from_json(plan.to_json()).to_json()
    assert routepack.Plan(plan.to_json()).rows == plan.rows
    window = routepack.Window(lengths, counts, moe_layers=MOE)
    assert_type(window, routepack.Window)
    assert_type(window.counts, npt.NDArray[np.uint32])
    assert len(window) == len(lengths) and (window.counts == counts).all()
    same = routepack.plan_window(pickle.loads(pickle.dumps(window)), topo, budgets={"levels": 4,
                                                                                   "steps_per_level": 200})
    assert same.rows == plan.rows
    nxt = routepack.plan(lengths, counts, topo, moe_layers=MOE, previous=plan, budgets={"max_moves": 4})
    assert_type(nxt.migration, Optional[dict[str, Any]])
    assert nxt.migration is not None and nxt.migration["moves"] <= 4
    moves = nxt.moves(plan)
    assert_type(moves, list[list[tuple[int, int, int, int, int]]])
    assert sum(len(layer) for layer in moves) == nxt.migration["moves"]
    assert_type(nxt.slot_changes(plan), list[list[tuple[int, int, int, int]]])
    assert_type(plan.export_map("vllm"), str)
    assert_type(plan.vllm_map(), dict[str, Any])
    assert plan.vllm_map()["physical_to_logical_map"] == plan.physical_to_logical.tolist()
    return plan


def placements(plan: routepack.Plan, counts: npt.NDArray[np.int32]) -> None:
    lpt = routepack.place(counts.sum(axis=0), 4, moe_layers=MOE)
    assert_type(lpt, routepack.Placement)
    assert_type(lpt.logical_to_physical, npt.NDArray[np.int64])
    per_sample = routepack.place(counts, np.int64(4), moe_layers=MOE)
    assert per_sample == lpt
    before = routepack.identity(3, E, 4, moe_layers=MOE)
    assert_type(before.moves(lpt), list[list[tuple[int, int, int, int, int]]])
    G = lpt.rank_loads(counts.sum(axis=0))
    assert_type(G, npt.NDArray[np.uint64])
    balance = routepack.rank_max_over_mean(G)
    assert_type(balance, list[float])
    assert len(balance) == 3 and min(balance) >= 1.0
    made = routepack.Placement(plan.logical_to_physical, 4, moe_layers=MOE)
    assert made == plan.placement
    kept = routepack.place(counts, 4, moe_layers=MOE, previous=plan, max_moves=0)
    assert kept.moves(plan) == [[], [], []]
    assert_type(lpt.sglang_map(), dict[str, Any])


def files(folder: str) -> None:
    """read_trace and expert_loads on a verl batch (routed_experts, attention_mask)."""
    rng = np.random.default_rng(1)
    B, S = 12, 64
    first = rng.integers(0, E, size=(B, S, 4, 1))
    routed = np.concatenate([first, (first + rng.integers(1, E, size=first.shape)) % E], axis=3).astype(np.int16)
    mask = (np.arange(S)[None, :] >= S - rng.integers(8, S, size=(B, 1))).astype(np.int64)
    step = os.path.join(folder, "step-1.npz")
    np.savez(step, routed_experts=routed, attention_mask=mask)
    model = {"experts": E, "top_k": 2, "num_hidden_layers": 4, "moe_layers": MOE}
    window = routepack.read_trace(step, model=model)
    assert_type(window, routepack.Window)
    assert_type(window.routes, Optional[list[Optional[npt.NDArray[np.int32]]]])
    assert len(window) == B and window.format == "npz"
    loads = routepack.expert_loads(step, num_experts=E, top_k=2, num_hidden_layers=4, moe_layers=MOE)
    assert_type(loads, dict[str, Any])
    assert (loads["loads"] == window.counts.sum(axis=0)).all()


def library_calls(library: str) -> None:
    lib = routepack.Library(library)
    assert_type(lib.traces(), list[dict[str, Any]])
    assert [t["name"] for t in lib.traces()] == ["syn"]
    assert [w["name"] for w in lib.windows("syn")] == ["w"]
    window = lib.load("syn", "w")
    assert_type(window, routepack.Window)
    assert window.trace_name == "syn" and window.window_name == "w"
    totals = lib.layer_totals("syn")
    assert_type(totals, npt.NDArray[np.uint64])
    assert totals.shape == (5, 16)


def errors(folder: str) -> None:
    missing = os.path.join(folder, "missing.json")
    try:
        routepack.load_plan(missing)
    except FileNotFoundError as e:
        assert isinstance(e, routepack.MissingFileError) and str(e) == f"{missing}: no such plan file"
    else:
        raise AssertionError("load_plan read a missing file")
    try:
        routepack.Topology(4, 3, 2, 2048)
    except routepack.Error as e:
        assert_type(e, routepack.Error)
        assert isinstance(e, ValueError) and str(e) == "topology: edp_shards = 2 must be >= 1 and divide dp_slots = 3"
    else:
        raise AssertionError("a topology against its rules was made")


def run(folder: str, library: Optional[str]) -> None:
    lengths, counts = arrays()
    topo = topologies()
    plan = plans(folder, lengths, counts, topo)
    placements(plan, counts)
    files(folder)
    if library is not None:
        library_calls(library)
    errors(folder)
    assert_type(routepack.__version__, str)
