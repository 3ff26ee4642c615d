"""routepack.torch.measure: a planned step executed with real PyTorch kernels, timed piece by piece,
composed by the step's synchronization, written and read back; bad measured files refused naming
the file and the field. (torch runs in the default pass only: Debian's torch is not built for the
sanitizer runtimes.)"""

import copy
import json
import os
import sqlite3
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

if os.environ.get("ROUTEPACK_TORCH_TESTS") == "off":
    pytest.skip("torch tests run in the default pass only (Debian's torch under a preloaded sanitizer runtime is "
                "not expected to work)", allow_module_level=True)
torch = pytest.importorskip("torch")

import routepack  # noqa: E402
import routepack.torch.measure as measure  # noqa: E402
from conftest import cli, cli_env  # noqa: E402

MOE = [1, 2]
C = 400


def piece(kind, row, seconds, **kw):
    return {"kind": kind, "row": row, "seconds": seconds, **kw}


def test_compose_hand_computed():
    # Two rows, DP slots 0 and 1 in EDP shards 0 and 1, one MoE layer (5) on two EP ranks:
    # J[0] = (1 + max(0.5, 0.25), 2 + max(0.125, 1)) = (1.5, 3); J[1] = (3 + 2, 0.5 + 0.25) = (5, 0.75);
    # U = (6.5, 3.75); the step waits for shard 0.
    pieces = [piece("attention", 0, 1.0, dp_slot=0), piece("attention", 0, 2.0, dp_slot=1),
              piece("attention", 1, 3.0, dp_slot=0), piece("attention", 1, 0.5, dp_slot=1)]
    for r, g, times in ((0, 0, (0.5, 0.25)), (0, 1, (0.125, 1.0)), (1, 0, (0.75, 2.0)), (1, 1, (0.25, 0.25))):
        pieces += [piece("experts", r, t, edp_shard=g, moe_layer=5, ep_rank=p) for p, t in enumerate(times)]
    got = measure.compose(pieces, 2, [[0], [1]], [5])
    assert got == {"step_seconds": 6.5, "shard_seconds": [6.5, 3.75], "row_shard_seconds": [[1.5, 3.0], [5.0, 0.75]]}
    # One shard of both slots: a row waits for its slower cell and, per layer, its busiest rank of the
    # shard's two expert pieces (here recorded per shard, so the shard's own ones).
    one = [pc for pc in pieces if pc["kind"] == "attention"] + [
        piece("experts", r, t, edp_shard=0, moe_layer=5, ep_rank=p) for r, times in ((0, (0.5, 1.0)), (1, (2.0, 0.25)))
        for p, t in enumerate(times)]
    assert measure.compose(one, 2, [[0, 1]], [5]) == {"step_seconds": 8.0, "shard_seconds": [8.0],
                                                      "row_shard_seconds": [[3.0], [5.0]]}


@pytest.fixture(scope="module")
def small():
    """A window of 14 samples (20-140 tokens), MoE layers 1-2 of 8 experts, its topology (2 EP ranks,
    2 DP slots in 2 EDP shards, cap 400, one attention stage) and a plan made here."""
    rng = np.random.default_rng(5)
    lengths = rng.integers(20, 140, size=14)
    counts = np.zeros((14, 2, 8), dtype=np.int64)
    for i, t in enumerate(lengths):
        for l in range(2):
            counts[i, l] = rng.multinomial(2 * t, rng.dirichlet(np.full(8, 0.5)))
    window = routepack.Window(lengths, counts, moe_layers=MOE, top_k=2)
    topology = routepack.Topology(2, 2, 2, C, stages=[("attention", 1.5, 4.0)])
    return window, topology, routepack.plan_window(window, topology, seed=3)


@pytest.fixture(scope="module")
def measured(small):
    window, topology, plan = small
    return measure.measure(window, topology, measure.method_layouts(plan), measure.Shapes(32, 16, 2), repeats=2)


def test_pieces_are_the_plans_cells_and_rank_loads(small, measured):
    window, topology, plan = small
    lengths, counts = np.asarray(window.lengths), np.asarray(window.counts, dtype=np.int64)
    assert [p["name"] for p in measured["plans"]] == list(measure.METHODS)
    assert measured["window"] == {"trace": "python", "window": "", "fingerprint": plan.fingerprint, "samples": 14,
                                  "moe_layers": MOE, "experts": 8}
    assert measured["shapes"] == {"hidden": 32, "ffn": 16, "heads": 2, "head_dim": 16, "width": 1.0, "run_hidden": 32,
                                  "run_ffn": 16, "run_head_dim": 16, "dtype": "float32"}
    for p in measured["plans"]:
        rows, p2l = plan.method_layout(p["name"])
        assert p["rows"] == len(rows) and p["modelled_max_u"] == plan.metrics[p["name"]]["score"][0]
        attention = {(pc["row"], pc["dp_slot"]): pc for pc in p["pieces"] if pc["kind"] == "attention"}
        assert sorted(attention) == [(r, d) for r in range(len(rows)) for d in range(2)]
        for (r, d), pc in attention.items():
            ts = [int(lengths[i]) for i in rows[r][d]]
            assert (pc["samples"], pc["tokens"], pc["sq_tokens"], pc["edp_shard"]) == (
                len(ts), sum(ts), sum(t * t for t in ts), d)
            assert pc["modelled"] == pytest.approx(1.5 * sum(ts) / C + 4.0 * sum(t * t for t in ts) / C ** 2,
                                                   rel=1e-15)
            assert pc["seconds"] > 0
        # W[r][g][l][p]: the tokens of shard g's cells in row r routed to rank p's experts.
        rank = np.empty((2, 8), dtype=np.int64)
        for l in range(2):
            rank[l, p2l[l]] = np.arange(8) // 4
        experts = [pc for pc in p["pieces"] if pc["kind"] == "experts"]
        assert len(experts) == len(rows) * 2 * 2 * 2
        for pc in experts:
            members = rows[pc["row"]][pc["edp_shard"]]
            l = MOE.index(pc["moe_layer"])
            loads = counts[members, l].sum(axis=0) if members else np.zeros(8, dtype=np.int64)
            on_rank = loads[rank[l] == pc["ep_rank"]]
            assert (pc["tokens"], pc["experts"]) == (int(on_rank.sum()), int((on_rank > 0).sum()))
            assert pc["modelled"] == pc["tokens"] / C and (pc["seconds"] > 0) == (pc["tokens"] > 0)
        # The pieces' modelled costs compose to the plan's max_g U (one stage: max_d sum_s = sum_s max_d).
        modelled = [dict(pc, seconds=pc["modelled"]) for pc in p["pieces"]]
        assert measure.compose(modelled, len(rows), [[0], [1]], MOE)["step_seconds"] == pytest.approx(
            p["modelled_max_u"], rel=1e-12)
        assert p["measured"] == measure.compose(p["pieces"], len(rows), [[0], [1]], MOE)
        assert p["layout_digest"] == measure.StepLayout("x", rows, p2l).digest()


def test_invocation_cost_and_calibration(small, measured, tmp_path):
    window, topology, _ = small
    # With an expert invocation cost every experts piece is modelled (tokens + a x experts) / C, and the
    # pieces still compose to each plan's max_g U.
    inv = routepack.Topology(2, 2, 2, C, stages=[("attention", 1.5, 4.0)], expert_invocation_tokens=30)
    plan = routepack.plan_window(window, inv, seed=3)
    layouts = measure.method_layouts(plan)
    # A layout without a modelled max_g U (a saved plan of another topology) gets the one its pieces compose.
    known = layouts[3].modelled_max_u
    layouts[3].modelled_max_u = None
    doc = measure.measure(window, inv, layouts, measure.Shapes(32, 16, 2), repeats=1)
    assert doc["plans"][3]["modelled_max_u"] == pytest.approx(known, rel=1e-12)
    for p in doc["plans"]:
        experts = [pc for pc in p["pieces"] if pc["kind"] == "experts"]
        assert all(pc["modelled"] == (pc["tokens"] + 30 * pc["experts"]) / C for pc in experts)
        assert any(pc["experts"] > 0 for pc in experts)
        modelled = [dict(pc, seconds=pc["modelled"]) for pc in p["pieces"]]
        assert measure.compose(modelled, p["rows"], [[0], [1]], MOE)["step_seconds"] == pytest.approx(
            p["modelled_max_u"], rel=1e-12)
    # A real measurement calibrates: every piece with tokens enters the fit, and the topology's other
    # settings are kept.
    path = tmp_path / "m.json"
    measure.write_measured(measured, str(path))
    cal, fit = routepack.calibrate(path, topology)
    with_tokens = [pc for p in measured["plans"] for pc in p["pieces"] if pc["tokens"] > 0]
    assert fit["attention"]["pieces"] + fit["experts"]["pieces"] == len(with_tokens)
    assert fit["plans"] == 4 and fit["experts"]["x2"] > 0
    assert cal.stages[0][1] == pytest.approx(fit["alpha"]) and cal.expert_invocation_tokens >= 0
    assert (cal.ep_ranks, cal.dp_slots, cal.token_cap) == (2, 2, C)


def test_profiler_ranges_name_every_piece(small, tmp_path):
    """Under torch.profiler every timed run of a piece (each repeat, not the warm-up) is one range
    named for it (measure.attention_name / experts_name), inside one range of the whole step
    (measure.step_name); experts pieces without tokens run nothing."""
    window, topology, plan = small
    rows, p2l = plan.method_layout("routepack")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        doc = measure.measure(window, topology, [measure.StepLayout("routepack", rows, p2l)],
                              measure.Shapes(32, 16, 2), repeats=2)
    path = str(tmp_path / "trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace  # Debian's 1.13 writes the bare list
    got = Counter(e["name"] for e in events if str(e.get("name", "")).startswith("routepack:"))
    want = Counter({f"routepack:step:window={plan.fingerprint}:plan=routepack": 1})
    for pc in doc["plans"][0]["pieces"]:
        if pc["kind"] == "attention":
            want[measure.attention_name(pc["row"], pc["dp_slot"])] = 2
        elif pc["tokens"]:
            want[measure.experts_name(pc["row"], pc["edp_shard"], pc["moe_layer"], pc["ep_rank"])] = 2
    assert got == want and len(want) > len(rows) * 2
    assert measure.step_name("0123456789abcdef", "baseline") == "routepack:step:window=0123456789abcdef:plan=baseline"
    assert measure.experts_name(1, 0, 26, 7) == "routepack:experts:row=1:edp_shard=0:moe_layer=26:ep_rank=7"


def test_measured_file_round_trip_and_bad_files(small, measured, tmp_path):
    window = small[0]
    path = str(tmp_path / "m.json")
    measure.write_measured(measured, path)
    assert measure.read_measured(path, window.fingerprint) == measured
    assert sorted(os.listdir(tmp_path)) == ["m.json"]

    def refused(doc, fingerprint=None):
        bad = str(tmp_path / "bad.json")
        with open(bad, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        with pytest.raises(routepack.InputError) as e:
            measure.read_measured(bad, fingerprint)
        return str(e.value).replace(bad, "bad.json")

    def changed(edit):
        doc = copy.deepcopy(measured)
        edit(doc)
        return doc

    text = open(path).read()
    assert refused(text[:len(text) // 2]).startswith("bad.json: malformed JSON")
    assert refused(text, "0123456789abcdef") == (
        f"bad.json: window.fingerprint is {window.fingerprint}, the window's is 0123456789abcdef: a measurement of "
        "another window")
    assert refused(changed(lambda d: d["plans"][0]["pieces"][0].update(seconds=-1.0))) == (
        "bad.json: plans[0].pieces[0].seconds is -1.0, not a finite number >= 0")
    # NaN is not JSON (Python writes it, the reader refuses the text).
    assert refused(changed(lambda d: d["plans"][1]["pieces"][2].update(seconds=float("nan")))).startswith(
        "bad.json: malformed JSON")
    with pytest.raises(routepack.InputError) as e:
        measure.check_measured(changed(lambda d: d["plans"][1]["pieces"][2].update(seconds=float("inf"))), "doc")
    assert str(e.value).startswith("doc: malformed JSON")
    assert refused(changed(lambda d: d["plans"][0]["pieces"][3].pop("tokens"))) == (
        "bad.json: plans[0].pieces[3].tokens is missing")
    last = measured["plans"][3]["pieces"][-1]
    assert refused(changed(lambda d: d["plans"][3]["pieces"].pop())) == (
        f"bad.json: plans[3] has no experts piece for row {last['row']}, EDP shard 1, MoE layer 2, EP rank 1")
    assert refused(changed(lambda d: d["plans"][0]["pieces"].append(d["plans"][0]["pieces"][0]))) == (
        f"bad.json: plans[0].pieces[{len(measured['plans'][0]['pieces'])}] repeats the attention piece of row 0")
    assert refused(changed(lambda d: d["plans"][0]["pieces"][0].update(dp_slot=2))) == (
        "bad.json: plans[0].pieces[0].dp_slot is 2, not an integer in 0..1")
    assert refused(changed(lambda d: d["plans"][0]["pieces"][-1].update(moe_layer=7))) == (
        "bad.json: plans[0].pieces[-1].moe_layer is 7, not one of the window's MoE layers".replace(
            "[-1]", f"[{len(measured['plans'][0]['pieces']) - 1}]"))
    step = measured["plans"][0]["measured"]["step_seconds"]
    assert refused(changed(lambda d: d["plans"][0]["measured"].update(step_seconds=step * 2))) == (
        f"bad.json: plans[0].measured.step_seconds is {step * 2!r}; its pieces compose to {step!r}")
    assert refused(changed(lambda d: d.update(format="x"))) == 'bad.json: format is "x", not "routepack-measured"'
    assert refused(changed(lambda d: d["topology"].update(ep_ranks=0))).startswith(
        "bad.json: topology is not a valid topology (topology: ")
    assert refused("[1, 2]") == "bad.json: the file must be a JSON object"
    with pytest.raises(routepack.MissingFileError) as e:
        measure.read_measured(str(tmp_path / "none.json"))
    assert str(e.value) == f"{tmp_path / 'none.json'}: no such measured step file"


def test_shapes_and_layouts_are_checked(small):
    window, topology, plan = small
    assert measure.Shapes(2048, 1408, 16, width=1 / 32).run_widths() == (64, 44, 4)
    for kw, message in ((dict(hidden=0, ffn=1, heads=1), "shapes: hidden must be an integer >= 1 (got 0)"),
                        (dict(hidden=30, ffn=1, heads=4), "shapes: hidden 30 is not a multiple of heads 4: give "
                                                          "head_dim"),
                        (dict(hidden=32, ffn=1, heads=2, width=0), "shapes: width must be a number in (0, 1] (got 0)")):
        with pytest.raises(routepack.InputError) as e:
            measure.Shapes(**kw)
        assert str(e.value) == message
    rows, p2l = plan.method_layout("routepack")
    shapes = measure.Shapes(32, 16, 2)
    with pytest.raises(routepack.InputError) as e:
        measure.measure(window, topology, [measure.StepLayout("cut", rows[:-1], p2l)], shapes)
    assert str(e.value) == "layout 'cut': the cells must hold every sample of the window's 14 once"
    with pytest.raises(routepack.InputError) as e:
        measure.measure(window, topology, [measure.StepLayout("p", rows, p2l[:1])], shapes)
    assert str(e.value) == "layout 'p': physical_to_logical must be [2, 8] (got [1, 8])"
    with pytest.raises(routepack.InputError) as e:
        measure.measure(window, topology, [measure.StepLayout("p", rows, p2l)], shapes, repeats=0)
    assert str(e.value) == "repeats must be an integer >= 1 (got 0)"
    with pytest.raises(routepack.InputError) as e:
        measure.measure(window, routepack.Topology(2, 2, 2, None, samples_per_cell=1),
                        [measure.StepLayout("p", rows, p2l)], shapes)
    assert str(e.value) == ("the topology has no token cap C (a samples_per_cell topology derives it from the window; "
                            "the modelled costs are in units of C): give a topology with token_cap")
    threads = torch.get_num_threads()
    measure.measure(window, topology, [measure.StepLayout("p", rows, p2l)], shapes, repeats=1)
    assert torch.get_num_threads() == threads


def test_command_line(tmp_path):
    exe = cli()
    if not exe:
        pytest.skip("no routepack CLI (ROUTEPACK_CLI) to make the library")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}

    def run_cli(*args):
        subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env=env, check=True)

    run_cli("synth", "--out", tmp_path / "synth", "--groups", "2", "--group-size", "6", "--layers", "3",
            "--dense-layers", "1", "--experts", "8", "--top-k", "2", "--prompt-mean", "30", "--response-mean", "60",
            "--max-length", "200", "--seed", "2")
    db = str(tmp_path / "lib.routepack")
    run_cli("import", "--db", db, "--name", "syn", "--quiet", "--experts", "8", "--top-k", "2", "--layers", "3",
            "--moe-layers", "1-2", tmp_path / "synth")
    topo = tmp_path / "t.json"
    topo.write_text(routepack.Topology(2, 2, 2, 400).to_json())
    out = str(tmp_path / "m.json")
    args = [sys.executable, "-m", "routepack.torch.measure", "--db", db, "--trace", "syn", "--topology", str(topo),
            "--hidden", "32", "--ffn", "16", "--heads", "2", "--repeats", "1", "--out", out, "--quiet"]
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    assert (r.returncode, r.stderr) == (0, "")
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["plan", "rows", "modelled", "max_g", "U", "measured", "s", "vs", "baseline",
                                "modelled", "measured"]
    assert [x.split()[0] for x in lines[1:5]] == list(measure.METHODS) and lines[-1] == f"written to {out}"
    assert lines[5].startswith("attention pieces: ") and lines[6].startswith("experts pieces: ")
    window = routepack.Library(db).load("syn")
    doc = measure.read_measured(out, window.fingerprint)
    assert [p["name"] for p in doc["plans"]] == list(measure.METHODS) and doc["timing"]["repeats"] == 1
    # A saved plan of another window is refused; bad arguments are usage errors.
    other = routepack.plan(np.array([50, 60]), np.ones((2, 2, 8), dtype=np.int32), routepack.Topology(2, 2, 2, 400),
                           moe_layers=[1, 2])
    other.save(str(tmp_path / "other.json"))
    r = subprocess.run(args[:-3] + ["--methods", "none", "--plan", str(tmp_path / "other.json"), "--out",
                                    str(tmp_path / "x.json")], capture_output=True, text=True, env=env)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (f"measure: error: {tmp_path / 'other.json'}: a plan of another window (fingerprint "
                        f"{other.fingerprint}, the window's {window.fingerprint})\n")
    assert not os.path.exists(tmp_path / "x.json")
    r = subprocess.run(args[:3] + ["--topology", str(topo), "--hidden", "32", "--ffn", "16", "--heads", "2",
                                   "--out", out], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and r.stderr.endswith(
        "error: give the window: --db LIB --trace T [--window W], or --input PATH --model M\n")


PIECE_FIELDS = ("kind", "row", "dp_slot", "edp_shard", "moe_layer", "ep_rank", "samples", "tokens", "sq_tokens",
                "experts", "modelled")


def stored_documents(db):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        return [json.loads(d) for (d,) in con.execute("SELECT document FROM measured_steps ORDER BY id")]


def test_profiler_trace_and_measured_file_import_into_the_library(tmp_path):
    """A torch.profiler trace of a measured step, imported with the plan it ran
    (routepack import-measured TRACE --plan PLAN), is stored as a measured file whose pieces are
    the plan's cells and rank loads (the same as routepack.torch.measure records, field by field) and
    whose seconds are the median durations of the pieces' ranges; bad traces are refused naming the
    file and the event, and leave the library as it was."""
    exe = cli()
    if not exe:
        pytest.skip("no routepack CLI (ROUTEPACK_CLI) to make the library")
    env = cli_env()

    def run_cli(*args):
        return subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env=env)

    assert run_cli("synth", "--out", tmp_path / "synth", "--groups", "2", "--group-size", "6", "--layers", "3",
                   "--dense-layers", "1", "--experts", "8", "--top-k", "2", "--prompt-mean", "30", "--response-mean",
                   "60", "--max-length", "200", "--seed", "2").returncode == 0
    db = tmp_path / "lib.routepack"
    assert run_cli("import", "--db", db, "--name", "syn", "--quiet", "--experts", "8", "--top-k", "2", "--layers", "3",
                   "--moe-layers", "1-2", tmp_path / "synth").returncode == 0
    assert run_cli("window", "--db", db, "--trace", "syn", "--name", "w", "--first", "12").returncode == 0
    window = routepack.Library(str(db)).load("syn", "w")
    topology = routepack.Topology(2, 2, 2, 400, stages=[("attention", 1.5, 4.0)])
    plan = routepack.plan_window(window, topology, seed=3)
    plan_file = tmp_path / "plan.json"
    plan.save(str(plan_file))
    rows, p2l = plan.method_layout("routepack")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        doc = measure.measure(window, topology, [measure.StepLayout("routepack", rows, p2l)],
                              measure.Shapes(32, 16, 2), repeats=3)
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    r = run_cli("import-measured", trace, "--plan", plan_file, "--db", db)
    assert (r.returncode, r.stderr) == (0, "")
    [stored] = stored_documents(db)
    [got], [want] = stored["plans"], doc["plans"]
    assert r.stdout == (f"imported measured step 1 of syn/w (profiler) into {db}: 1 plan\n"
                        f"  routepack: {len(rows)} rows, step {got['measured']['step_seconds']:.4g} s, "
                        f"modelled max_g U {plan.score[0]:.4g}, no saved run has its layout\n")
    assert stored["window"] == doc["window"] and stored["shapes"] is None
    assert stored["timing"] == {"clock": "torch.profiler host ranges", "warmup": 0, "repeats": 3, "statistic": "median"}
    assert [[pc.get(k) for k in PIECE_FIELDS] for pc in got["pieces"]] == \
        [[pc.get(k) for k in PIECE_FIELDS] for pc in want["pieces"]]
    assert all((pc["seconds"] > 0) == (pc["tokens"] > 0) for pc in got["pieces"])
    assert got["modelled_max_u"] == plan.score[0] and got["rows"] == len(rows)
    assert got["measured"] == measure.compose(got["pieces"], len(rows), topology.edp_shards, window.moe_layers)

    # The measured file itself: stored as it is; the same file again changes nothing.
    m = tmp_path / "m.json"
    measure.write_measured(doc, str(m))
    r = run_cli("import-measured", m, "--db", db)
    assert (r.returncode, r.stdout.splitlines()[0]) == \
        (0, f"imported measured step 2 of syn/w (measured) into {db}: 1 plan")
    assert stored_documents(db)[1] == doc
    r = run_cli("import-measured", m, "--db", db)
    assert (r.returncode, r.stdout.splitlines()[0]) == \
        (0, f"measured step 2 of syn/w is already in {db} (nothing changed): 1 plan")

    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    step = next(i for i, e in enumerate(events) if e.get("name", "").startswith("routepack:step:"))
    first = next(i for i, e in enumerate(events) if e.get("name", "").startswith("routepack:attention:row=0:dp_slot=0"))
    fp = plan.fingerprint

    def bad(edit):
        evs = copy.deepcopy(events)
        edit(evs)
        path = tmp_path / f"{edit.__name__}.json"
        path.write_text(json.dumps(evs))
        return path

    def other_window(evs):
        evs[step]["name"] = "routepack:step:window=0000000000000000:plan=routepack"

    def no_attention(evs):
        evs[:] = [e for e in evs if e.get("name") != "routepack:attention:row=0:dp_slot=0"]

    def negative(evs):
        evs[first]["dur"] = -1

    def not_a_number(evs):
        evs[first]["dur"] = float("nan")  # json.dumps writes NaN, which JSON does not have

    def misnamed(evs):
        evs[first]["name"] = "routepack:attention:row=0"

    def row_out(evs):
        evs[first]["name"] = "routepack:attention:row=9:dp_slot=0"

    tokens = want["pieces"][0]["tokens"]
    cases = [
        (bad(other_window), "its routepack:step ranges are of window 0000000000000000, not the plan's "
                            f"{fp}: a trace of another window"),
        (bad(no_attention), f"no range routepack:attention:row=0:dp_slot=0 inside routepack:step:window={fp}:"
                            f"plan=routepack (the piece has {tokens} tokens)"),
        (bad(negative), f"[{first}].dur is -1, not a finite number >= 0"),
        (bad(not_a_number), "malformed JSON"),
        (bad(misnamed), f"[{first}].name \"routepack:attention:row=0\" is not a routepack range ("),
        (bad(row_out), f"[{first}].name names row 9; the plan has {len(rows)} rows"),
    ]
    for path, message in cases:
        text = path.read_text()
        r = run_cli("import-measured", path, "--plan", plan_file, "--db", db)
        assert (r.returncode, r.stdout) == (1, "") and f"{path}: {message}" in r.stderr, (message, r.stderr)
        path.write_text(text[: len(text) // 2])
        r = run_cli("import-measured", path, "--plan", plan_file, "--db", db)
        assert r.returncode == 1 and f"{path}: malformed JSON" in r.stderr
    r = run_cli("import-measured", trace, "--plan", plan_file, "--method", "reorder", "--db", db)
    assert r.returncode == 1 and r.stderr.endswith(f"no range routepack:step:window={fp}:plan=reorder (its steps of "
                                                   "this window are of plans routepack)\n")
    r = run_cli("import-measured", m, trace, "--db", db)
    assert (r.returncode, r.stderr) == (2, "routepack: error: import-measured: give one measured file, or "
                                           "torch.profiler traces with --plan\n")
    r = run_cli("import-measured", m, "--method", "reorder", "--db", db)
    assert (r.returncode, r.stderr) == \
        (2, "routepack: error: --method needs --plan (see routepack import-measured --help)\n")
    assert len(stored_documents(db)) == 2
    r = run_cli("info", "--db", db)
    assert r.stdout.splitlines()[-2:] == ["measured step 1 of syn/w (profiler): 1 plan, 0 linked to saved runs",
                                          "measured step 2 of syn/w (measured): 1 plan, 0 linked to saved runs"]
