"""Calls the module's types must refuse. test_conventions.py runs mypy on this file and expects
exactly one error per line marked "refused": without routepack's stubs and py.typed, mypy would
see Any and accept them all. Never run."""

import numpy as np

import routepack

topology = routepack.Topology(4, 4, 2, 2048)
routepack.plan(np.ones(8), np.zeros((8, 1, 4)), moe_layers=[0])  # refused: no topology
routepack.Topology(4, 4, 2, 2048, [("attention", 1.0, 0.0)])  # refused: stages is keyword-only
topology.ep_ranks = 8  # refused: a read-only property
plan = routepack.load_plan("plan.json")
rows: str = plan.row_count  # refused: an int
plan.export_map("json")  # refused: not a map format
routepack.read_trace(3)  # refused: not a path
plan.score[3]  # refused: the score has three values
routepack.Window([1, 2], [[[0]], [[0]]])  # refused: moe_layers is required
version: int = routepack.__version__  # refused: a str
