"""The module against the CLI: Library windows planned in Python give the CLI's plan, the maps
match `routepack export-map`, and `routepack place` (placement-only planning)."""

import json
import os
import subprocess

import numpy as np
import pytest

import routepack
from conftest import cli


@pytest.fixture(scope="module")
def exe():
    path = cli()
    if not path or not os.path.exists(path):
        if os.environ.get("CI"):
            pytest.fail("ROUTEPACK_CLI does not name the built routepack binary")
        pytest.skip("ROUTEPACK_CLI is not set (run through ctest)")
    return path


def topology_file(path, ep_ranks):
    """A one-node topology file: ep_ranks EP ranks, 4 DP slots, cap 8192, one attention stage."""
    path.write_text(json.dumps({"ep_ranks": ep_ranks, "dp_slots": 4, "token_cap": 8192,
                                "attention_stages": [{"name": "mla", "alpha": 1, "beta": 1}]}))
    return path


def run(exe, *args, ok=True):
    # In the sanitizer build the interpreter runs with the ASan runtime preloaded for the module;
    # the CLI carries its own (clang links it statically), and two runtimes in one process abort.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([exe, *args], capture_output=True, text=True, env=env)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def library(exe, tmp_path_factory):
    d = tmp_path_factory.mktemp("lib")
    run(exe, "synth", "--out", str(d / "synth"), "--groups", "4", "--group-size", "8", "--layers", "6",
        "--dense-layers", "1", "--experts", "16", "--top-k", "2", "--seed", "3")
    db = str(d / "lib.routepack")
    run(exe, "import", "--db", db, "--name", "syn", "--quiet", "--experts", "16", "--top-k", "2", "--layers", "6",
        "--moe-layers", "1-5", str(d / "synth"))
    run(exe, "window", "--db", db, "--trace", "syn", "--name", "w", "--first", "24")
    topo = d / "topo.json"
    topo.write_text(json.dumps({"ep_ranks": 4, "dp_slots": 4, "edp_shards": [[0, 1], [2, 3]], "token_cap": 8192,
                                "attention_stages": [{"name": "attn", "alpha": 1.0, "beta": 2.0}]}))
    return db, str(topo), d


def test_library_reads_traces_and_windows(library):
    db, _, _ = library
    lib = routepack.Library(db)
    traces = lib.traces()
    assert [t["name"] for t in traces] == ["syn"]
    assert traces[0]["samples"] == 32 and traces[0]["num_experts"] == 16 and traces[0]["moe_layers"] == [1, 2, 3, 4, 5]
    assert [w["name"] for w in lib.windows("syn")] == ["w"]
    w = lib.load("syn", "w")
    assert len(w) == 24 and w.counts.shape == (24, 5, 16) and w.counts.dtype == np.uint32
    assert not w.counts.flags.writeable
    assert w.lengths.dtype == np.int64 and (w.lengths >= 1).all()
    whole = lib.load("syn")
    assert len(whole) == 32
    assert (lib.layer_totals("syn") == whole.counts.sum(axis=0)).all()
    with pytest.raises(ValueError, match="no trace named 'nope'"):
        lib.load("nope")
    with pytest.raises(ValueError, match="no such library file"):
        routepack.Library(db + ".missing")


def test_python_plan_is_the_cli_plan(exe, library):
    db, topo, d = library
    out = str(d / "cli-plan.json")
    run(exe, "plan", "--db", db, "--trace", "syn", "--window", "w", "--topology", topo, "--seed", "4",
        "--threads", "1", "--quiet", "--out", out)
    w = routepack.Library(db).load("syn", "w")
    p = routepack.plan_window(w, routepack.Topology.load(topo), seed=4, workers=1)
    a, b = json.loads(p.to_json()), json.load(open(out))
    a.pop("timings"), b.pop("timings")
    assert a == b
    # On two nodes too: the window's per-token routes come along, so the plan has the communication
    # section and the grouter / routepack+comm methods, as the CLI's.
    two = json.load(open(topo))
    two["gpus_per_node"] = two["ep_ranks"] // 2
    two_path = d / "two-nodes.json"
    two_path.write_text(json.dumps(two))
    out2 = str(d / "cli-plan-2n.json")
    run(exe, "plan", "--db", db, "--trace", "syn", "--window", "w", "--topology", str(two_path), "--seed", "4",
        "--threads", "1", "--quiet", "--out", out2)
    p2 = routepack.plan_window(w, routepack.Topology.load(str(two_path)), seed=4, workers=1)
    a2, b2 = json.loads(p2.to_json()), json.load(open(out2))
    a2.pop("timings"), b2.pop("timings")
    assert a2["communication"] is not None and "grouter" in a2["metrics"] and "routepack+comm" in a2["metrics"]
    assert a2 == b2
    # The CLI validates the Python plan file against the library window.
    mine = str(d / "py-plan.json")
    p.save(mine)
    r = run(exe, "validate", mine, "--db", db)
    assert "identical score" in r.stdout
    # Maps: the same bytes as `routepack export-map`.
    for fmt, got in (("sglang", p.sglang_map()), ("vllm", p.vllm_map()), ("routepack", p.routepack_map())):
        m = str(d / f"{fmt}.json")
        run(exe, "export-map", "--plan", out, "--format", fmt, "--out", m)
        assert json.load(open(m)) == got


def test_cli_place_from_loads(exe, tmp_path):
    loads = tmp_path / "loads.json"
    loads.write_text(json.dumps({"loads": [[8, 5, 5, 6, 10, 1], [1, 1, 1, 1, 1, 1]], "moe_layers": [2, 4],
                                 "num_hidden_layers": 5}))
    out = tmp_path / "map.json"
    r = run(exe, "place", "--loads", str(loads), "--ep-ranks", "2", "--format", "vllm", "--out", str(out))
    # Identity (8+5+5, 6+10+1) = (18, 17): max/mean 18/17.5; LPT (16, 19): 19/17.5. Layer 4 is flat.
    lines = r.stdout.splitlines()
    assert lines[0] == "placement of " + str(loads) + ": 2 MoE layers x 6 experts on 2 EP ranks (LPT, Algorithm 1)"
    assert lines[2].split() == ["2", f"{18 / 17.5:.4f}", f"{19 / 17.5:.4f}"]
    assert lines[3].split() == ["4", "1.0000", "1.0000"]
    want = routepack.place([[8, 5, 5, 6, 10, 1], [1, 1, 1, 1, 1, 1]], 2, moe_layers=[2, 4], num_hidden_layers=5)
    assert json.load(open(out)) == want.vllm_map()
    run(exe, "place", "--loads", str(loads), "--ep-ranks", "2", "--format", "sglang", "--out", str(out))
    assert json.load(open(out)) == want.sglang_map()


def cv_global_of_map(loads, map_file):
    """CV_global (eq. 22) of the placement a routepack-format expert map holds, over `loads` ([L][E]):
    per MoE layer the population std / mean of the EP ranks' loads (0 for a layer without load),
    averaged over the layers. Computed here from the map file alone, apart from the library."""
    m = json.load(open(map_file))
    cvs = []
    for layer, row in zip(loads, m["placement"]):
        ranks = np.zeros(m["ep_ranks"])
        for expert, slot in enumerate(row):
            ranks[slot // m["slots_per_rank"]] += layer[expert]
        cvs.append(ranks.std() / ranks.mean() if ranks.sum() > 0 else 0.0)
    return sum(cvs) / len(cvs)


def test_cli_place_previous_prints_the_written_placement(exe, tmp_path):
    # With --previous the map written is the placement that starts from the previous one; its
    # CV_global is printed, LPT's beside it. Identity: ranks 18/17 on layer 2 (CV 0.0143 over both
    # layers); LPT: 16/19 (0.0429); the previous map below: 23/12 (0.1571), kept whole at budget 0.
    loads = [[8, 5, 5, 6, 10, 1], [1, 1, 1, 1, 1, 1]]
    f = tmp_path / "loads.json"
    f.write_text(json.dumps({"loads": loads, "moe_layers": [2, 4], "num_hidden_layers": 5}))
    previous = tmp_path / "previous.json"
    previous.write_text(json.dumps({"moe_layers": [2, 4], "placement": [[0, 3, 1, 4, 2, 5], [0, 1, 2, 3, 4, 5]]}))
    for budget, written in (("0", "0.1571"), ("1", None), ("6", None)):
        out = tmp_path / f"map-{budget}.json"
        r = run(exe, "place", "--loads", str(f), "--ep-ranks", "2", "--previous", str(previous), "--max-moves",
                budget, "--format", "routepack", "--out", str(out))
        cv = [line for line in r.stdout.splitlines() if line.startswith("CV_global: ")]
        expected = f"{cv_global_of_map(loads, out):.4f}"
        assert written is None or expected == written
        assert cv == [f"CV_global: identity 0.0143 -> placed {expected} (LPT alone 0.0429)"]
    # Budget 0 keeps the previous placement slot for slot.
    assert json.load(open(tmp_path / "map-0.json"))["placement"] == json.load(open(previous))["placement"]
    # Without --previous the written map is LPT's, and so is the printed figure.
    out = tmp_path / "lpt.json"
    r = run(exe, "place", "--loads", str(f), "--ep-ranks", "2", "--format", "routepack", "--out", str(out))
    assert f"{cv_global_of_map(loads, out):.4f}" == "0.0429"
    assert "CV_global: identity 0.0143 -> LPT 0.0429" in r.stdout.splitlines()


def test_cli_place_from_library(exe, library):
    db, _, d = library
    out = str(d / "place.json")
    # The shipped demo topology pins 32 experts per layer: refused for this 16-expert trace, as plan does.
    r = run(exe, "place", "--db", db, "--trace", "syn", "--window", "w", "--topology", "synthetic-demo-ep8-dp4",
            "--out", out, ok=False)
    assert r.returncode == 1
    assert r.stderr == ("routepack: error: synthetic-demo-ep8-dp4: experts_per_layer 32 differs from the trace's "
                        "16 experts\n")
    topo = topology_file(d / "ep8.json", 8)
    r = run(exe, "place", "--db", db, "--trace", "syn", "--window", "w", "--topology", str(topo), "--out", out)
    assert "placement of window 'w' of 'syn' (24 samples): 5 MoE layers x 16 experts on 8 EP ranks" in r.stdout
    w = routepack.Library(db).load("syn", "w")
    want = routepack.place(w.counts.sum(axis=0, dtype=np.uint64), 8, moe_layers=w.moe_layers,
                           num_hidden_layers=w.num_hidden_layers)
    assert json.load(open(out)) == want.routepack_map()
    r = run(exe, "place", "--db", db, "--trace", "syn", "--ep-ranks", "8", "--out", out)
    assert "placement of trace 'syn'" in r.stdout


@pytest.mark.parametrize("content, args, status, message", [
    ("[[1, -2]]", ["--ep-ranks", "1"], 1, "{f}: [0][1] is -2, not an integer in 0..18446744073709551615"),
    ('{"loads": [[1, 2], [3]]}', ["--ep-ranks", "1"], 1, "{f}: loads[1] must be a list of 2 loads (as row 0)"),
    ("[[1, 2, 3]]", ["--ep-ranks", "2"], 1, "topology: 3 experts are not divisible by 2 EP ranks"),
    ("[[1, 2]]", [], 2, "place: give --ep-ranks P (or --topology)"),
    ("[[1, 2", ["--ep-ranks", "1"], 1, "{f}: malformed JSON at byte 7"),
])
def test_cli_place_errors(exe, tmp_path, content, args, status, message):
    # A bad loads file is a failure of the work (1); a command line missing --ep-ranks is a usage error (2).
    f = tmp_path / "loads.json"
    f.write_text(content)
    r = run(exe, "place", "--loads", str(f), *args, "--out", str(tmp_path / "m.json"), ok=False)
    assert r.returncode == status
    assert r.stderr.strip() == "routepack: error: " + message.format(f=f)


def test_cli_place_aggregate_trace(exe, tmp_path):
    """An aggregate (load-only) trace cannot be packed but can be placed."""
    from conftest import shared_dir

    shared = shared_dir()
    if shared is None:
        if os.environ.get("CI"):
            pytest.fail("ROUTEPACK_SHARED_DIR is absent")
        pytest.skip("../shared is absent")
    db = str(tmp_path / "agg.routepack")
    src = os.path.join(shared, "traces", "aggregate", "qwen3-30b-a3b-counts.json")
    run(exe, "import", "--db", db, "--name", "agg", "--model", "qwen3-30b-a3b", "--quiet", src)
    out = str(tmp_path / "map.json")
    r = run(exe, "place", "--db", db, "--trace", "agg", "--ep-ranks", "8", "--format", "vllm", "--out", out)
    lib = routepack.Library(db)
    totals = lib.layer_totals("agg")
    t = lib.traces()[0]
    assert t["load_only"]
    want = routepack.place(totals, 8, moe_layers=t["moe_layers"], num_hidden_layers=t["num_hidden_layers"])
    assert json.load(open(out)) == want.vllm_map()
    # LPT never has a larger peak than identity here, layer by layer (the printed table).
    rows = [line.split() for line in r.stdout.splitlines()[2:2 + len(t["moe_layers"])]]
    assert all(float(lpt) <= float(ident) for _, ident, lpt in rows)


def test_cli_sweep_checks_the_topology_first(exe, library, tmp_path):
    # The model check runs once, before --out is created, and names the topology file.
    db, _, _ = library
    topo = topology_file(tmp_path / "ep3.json", 3)
    out = tmp_path / "sweep"
    r = run(exe, "sweep", "--db", db, "--trace", "syn", "--topology", str(topo), "--out", str(out), ok=False)
    assert r.returncode == 1
    assert r.stderr == f"routepack: error: {topo}: 16 experts are not divisible by 3 EP ranks\n"
    assert not out.exists()


def test_cli_sweep_reports_the_time_limit(exe, library, tmp_path):
    # A sweep under a time limit says which windows' searches stopped early, in the text, the JSON
    # and the CSV (column time_limit_hit).
    db, _, _ = library
    topo = topology_file(tmp_path / "ep8.json", 8)
    out = tmp_path / "sweep"
    r = run(exe, "sweep", "--db", db, "--trace", "syn", "--topology", str(topo), "--time-limit", "1e-9",
            "--out", str(out))
    assert "time limit hit in 1 of 1 windows (their searches stopped early): w" in r.stdout
    assert [w["time_limit_hit"] for w in json.load(open(out / "sweep.json"))] == [True]
    header, line = open(out / "sweep.csv", newline="").read().split("\r\n")[:2]
    assert line.split(",")[header.split(",").index("time_limit_hit")] == "1"
    r = run(exe, "sweep", "--db", db, "--trace", "syn", "--topology", str(topo), "--json")
    assert [w["time_limit_hit"] for w in json.loads(r.stdout)] == [False]


def test_cli_topology_file_named_whole_and_escaped(exe, library, tmp_path):
    # A topology path is shown whole (not cut at 80 characters like echoed values) with control
    # characters escaped, in the parser's errors and in the model check's.
    db, _, _ = library
    name = "t\x1b" + "x" * 100 + ".json"
    shown = str(tmp_path) + "/t\\x1b" + "x" * 100 + ".json"
    topo = topology_file(tmp_path / name, 3)
    r = run(exe, "plan", "--db", db, "--trace", "syn", "--window", "w", "--topology", str(topo), "--out",
            str(tmp_path / "p.json"), ok=False)
    assert r.returncode == 1
    assert r.stderr == f"routepack: error: {shown}: 16 experts are not divisible by 3 EP ranks\n"
    topo.write_text('{"ep_ranks": 8, "dp_slots": 4, "token_cap": 8192, "attention_stages": [], "x": 1}')
    r = run(exe, "plan", "--db", db, "--trace", "syn", "--window", "w", "--topology", str(topo), "--out",
            str(tmp_path / "p.json"), ok=False)
    assert r.stderr.startswith(f"routepack: error: {shown}: unknown field 'x' (known: ep_ranks,")


def test_cli_plan_reports_the_refined_placement(exe, library, tmp_path):
    # The plan's placement is routepack's: LPT refined for its layout when a refinement lowered the
    # score. The summary names it after LPT, `compare` lists routepack on it, and export-map writes
    # it; --placement-rounds 0 keeps LPT (the `place` command's placement of the same window).
    db, _, _ = library
    # Cap 2048: 3 rows x 2 shards (at the fixture's 8192 one row holds the window, 0.01% above its bound).
    topo = str(tmp_path / "cap2048.json")
    open(topo, "w").write(json.dumps({"ep_ranks": 4, "dp_slots": 4, "edp_shards": [[0, 1], [2, 3]], "token_cap": 2048,
                                      "attention_stages": [{"name": "attn", "alpha": 1.0, "beta": 2.0}]}))
    out = str(tmp_path / "plan.json")
    r = run(exe, "plan", "--db", db, "--trace", "syn", "--window", "w", "--topology", topo, "--seed", "1",
            "--out", out)
    j = json.load(open(out))
    refined = j["planner"]["placement_refinement"]["refined"]
    swaps = j["planner"]["placement_refinement"]["swaps"]
    assert refined and swaps > 0 and j["row_count"] == 3
    cv_line = [line for line in r.stdout.splitlines() if line.startswith("CV_global: identity ")]
    assert len(cv_line) == 1 and cv_line[0].endswith(f"({swaps} expert swaps)")
    assert " -> refined for routepack's layout " in cv_line[0]
    routepack_row = [line.split() for line in r.stdout.splitlines() if line.startswith("routepack ")]
    assert routepack_row[0][1] == "refined"
    m = str(tmp_path / "map.json")
    run(exe, "export-map", "--plan", out, "--format", "routepack", "--out", m)
    assert json.load(open(m))["placement"] == j["placement"]
    plain = str(tmp_path / "plain.json")
    r0 = run(exe, "plan", "--db", db, "--trace", "syn", "--window", "w", "--topology", topo, "--seed", "1",
             "--placement-rounds", "0", "--out", plain)
    j0 = json.load(open(plain))
    assert j0["planner"]["placement_refinement"] == {"refined": False, "rounds_kept": 0, "swaps": 0, "skipped": False}
    assert j0["placement"] != j["placement"]
    assert "refined" not in r0.stdout
    lpt = str(tmp_path / "lpt.json")
    run(exe, "place", "--db", db, "--trace", "syn", "--window", "w", "--ep-ranks", "4", "--format", "routepack",
        "--out", lpt)
    assert json.load(open(lpt))["placement"] == j0["placement"]
