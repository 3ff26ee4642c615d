"""routepack.calibrate and `routepack calibrate`: a topology's attention alpha/beta and expert
invocation cost fitted to a measured step. Synthetic measurements with known coefficients and
2% noise are recovered within a stated error (the worst over seeds 1-40 of this generator: 1.6% for
seconds per token of attention, 4.0% per squared token, 1.8% per expert invocation, 0.25% per expert
token; the tests allow about 1.5x that); the CLI writes the same topology as Python; bad measured files are
refused naming the file and the field; plans of the calibrated topology are scored with its
invocation cost."""

import json
import os
import subprocess

import numpy as np
import pytest

import routepack
from conftest import cli, cli_env

C = 4096
# Seconds per token and per squared token of attention; per invocation and per token of experts.
X1, X2, A, B = 2.0e-7, 3.0e-11, 4.0e-5, 1.0e-6


P, D, SHARDS, LAYERS, ROWS = 8, 4, [[0, 1], [2, 3]], [1, 2, 3], 25


def compose(pieces, rows):
    """The step's seconds from its pieces, as routepack.torch.measure.compose forms them (the reader
    checks measured.step_seconds against it bit for bit)."""
    att = [[0.0] * len(SHARDS) for _ in range(rows)]
    exp = [[[0.0] * len(LAYERS) for _ in SHARDS] for _ in range(rows)]
    for pc in pieces:
        if pc["kind"] == "attention":
            g = 0 if pc["dp_slot"] in SHARDS[0] else 1
            att[pc["row"]][g] = max(att[pc["row"]][g], pc["seconds"])
        else:
            k = LAYERS.index(pc["moe_layer"])
            exp[pc["row"]][pc["edp_shard"]][k] = max(exp[pc["row"]][pc["edp_shard"]][k], pc["seconds"])
    U = []
    for g in range(len(SHARDS)):
        total = 0.0
        for r in range(rows):
            j = att[r][g]
            for x in exp[r][g]:
                j += x
            total += j
        U.append(total)
    return max(U)


def finish(doc):
    """Sets every plan's measured.step_seconds to what its pieces compose to."""
    for p in doc["plans"]:
        p["measured"] = {"step_seconds": compose(p["pieces"], p["rows"])}
    return doc


def synthetic(seed, noise=0.02, plans=2):
    """A measured step (EP8/DP4 in two EDP shards, MoE layers 1-3, 25 rows) whose pieces follow the
    coefficients above, each time times 1 + U(-noise, noise); 1 in 20 experts pieces holds no tokens
    (0 seconds, out of the fit)."""
    rng = np.random.default_rng(seed)
    out = []
    for p in range(plans):
        pieces = []
        for r in range(ROWS):
            for d in range(D):
                lengths = rng.integers(20, 4000, size=int(rng.integers(1, 6)))
                t, q = int(lengths.sum()), int((lengths.astype(np.int64) ** 2).sum())
                pieces.append({"kind": "attention", "row": r, "dp_slot": d, "edp_shard": d // 2,
                               "samples": len(lengths), "tokens": t, "sq_tokens": q, "modelled": 0.0,
                               "seconds": (X1 * t + X2 * q) * (1 + rng.uniform(-noise, noise))})
        for r in range(ROWS):
            for g in range(len(SHARDS)):
                for layer in LAYERS:
                    for rank in range(P):
                        n = int(rng.integers(1, 9)) if rng.integers(20) else 0
                        t = int(rng.integers(n, 3000)) if n else 0
                        pieces.append({"kind": "experts", "row": r, "edp_shard": g, "moe_layer": layer,
                                       "ep_rank": rank, "experts": n, "tokens": t, "modelled": 0.0,
                                       "seconds": (A * n + B * t) * (1 + rng.uniform(-noise, noise))})
        out.append({"name": f"p{p}", "layout_digest": "0" * 16, "rows": ROWS, "modelled_max_u": None,
                    "pieces": pieces})
    return finish({"format": "routepack-measured", "version": 1,
                   "window": {"trace": "t", "window": "w", "fingerprint": "0123456789abcdef", "samples": 500,
                              "moe_layers": LAYERS, "experts": 64},
                   "topology": {"ep_ranks": P, "dp_slots": D, "edp_shards": SHARDS, "token_cap": C,
                                "attention_stages": [{"name": "mla", "alpha": 27.0, "beta": 27.0}]},
                   "shapes": {"hidden": 2048, "ffn": 1408, "heads": 16, "head_dim": 128, "width": 1.0,
                              "run_hidden": 2048, "run_ffn": 1408, "run_head_dim": 128, "dtype": "float32"},
                   "timing": {"clock": "thread_time", "torch_threads": 1, "warmup": 1, "repeats": 3,
                              "statistic": "median", "torch": "1.13"},
                   "plans": out})


def write(tmp_path, doc, name="m.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_synthetic_coefficients_recovered(tmp_path):
    topo = routepack.Topology(8, 4, 2, C, stages=[("mla", 27.0, 27.0)])
    for seed in (1, 2, 3):
        doc = synthetic(seed)
        cal, fit = routepack.calibrate(write(tmp_path, doc), topo)
        experts = sum(1 for p in doc["plans"] for pc in p["pieces"] if pc["kind"] == "experts" and pc["tokens"])
        assert fit["plans"] == 2 and fit["attention"]["pieces"] == 200 and fit["experts"]["pieces"] == experts
        assert 0.9 * 2 * 1200 < experts < 2 * 1200
        for got, want, rel in ((fit["attention"]["x1"], X1, 0.025), (fit["attention"]["x2"], X2, 0.06),
                               (fit["experts"]["x1"], A, 0.03), (fit["experts"]["x2"], B, 0.004)):
            assert got == pytest.approx(want, rel=rel)
        assert fit["attention"]["r2"] > 0.99 and fit["experts"]["r2"] > 0.99
        # Cost units: the expert term keeps 1 per token / C, so seconds per U = b C.
        assert fit["seconds_per_U"] == pytest.approx(B * C, rel=0.004)
        assert fit["alpha"] == pytest.approx(X1 / B, rel=0.03) and fit["beta"] == pytest.approx(X2 * C / B, rel=0.065)
        assert cal.expert_invocation_tokens == round(fit["experts"]["x1"] / fit["experts"]["x2"])
        assert abs(cal.expert_invocation_tokens - A / B) <= 0.035 * A / B + 1
        assert cal.stages == [("mla", pytest.approx(fit["alpha"], rel=1e-15), pytest.approx(fit["beta"], rel=1e-15))]
        assert (fit["old_alpha"], fit["old_beta"]) == (27.0, 27.0)
        # Everything else is the input's.
        assert (cal.ep_ranks, cal.dp_slots, cal.edp_shards, cal.token_cap) == (8, 4, [[0, 1], [2, 3]], C)
    # Without noise the fit is exact.
    cal, fit = routepack.calibrate(write(tmp_path, synthetic(4, noise=0.0)), topo)
    assert fit["experts"]["x1"] == pytest.approx(A, rel=1e-9) and fit["attention"]["x2"] == pytest.approx(X2, rel=1e-9)
    assert cal.expert_invocation_tokens == 40


def test_several_stages_keep_their_shares(tmp_path):
    topo = routepack.Topology(8, 4, 2, C, stages=[("mla", 3.0, 1.0), ("kda", 1.0, 0.0)])
    cal, fit = routepack.calibrate(write(tmp_path, synthetic(1)), topo)
    (n0, a0, b0), (n1, a1, b1) = cal.stages
    assert (n0, n1) == ("mla", "kda")
    assert a0 == pytest.approx(0.75 * fit["alpha"]) and a1 == pytest.approx(0.25 * fit["alpha"])
    assert b0 == pytest.approx(fit["beta"]) and b1 == 0.0
    # A stage set without beta gets the whole fitted beta on its first stage.
    cal, fit = routepack.calibrate(write(tmp_path, synthetic(1)),
                                   routepack.Topology(8, 4, 2, C, stages=[("a", 1.0, 0.0), ("b", 1.0, 0.0)]))
    assert [s[2] for s in cal.stages] == [pytest.approx(fit["beta"]), 0.0]


def test_command_line_writes_what_python_returns(tmp_path):
    exe = cli()
    if not exe:
        pytest.skip("no routepack CLI (ROUTEPACK_CLI)")
    doc = synthetic(2)
    experts = sum(1 for p in doc["plans"] for pc in p["pieces"] if pc["kind"] == "experts" and pc["tokens"])
    m = write(tmp_path, doc)
    out = tmp_path / "cal.json"
    r = subprocess.run([exe, "calibrate", str(m), "--topology", "deepseek-v2-lite-ep8-dp4", "--out", str(out)],
                       capture_output=True, text=True, env=cli_env())
    assert (r.returncode, r.stderr) == (0, "")
    cal, fit = routepack.calibrate(m, routepack.Topology.load("deepseek-v2-lite-ep8-dp4"))
    assert out.read_text() == cal.to_json() + "\n"
    lines = r.stdout.splitlines()
    assert lines[0] == f"calibrated deepseek-v2-lite-ep8-dp4 from {m} (2 plans)"
    assert lines[1].startswith("  attention  alpha 27 -> ") and "(200 pieces, R^2 " in lines[1]
    assert lines[2].startswith("  experts    ") and f"expert_invocation_tokens 0 -> {cal.expert_invocation_tokens} " \
        in lines[2] and f"({experts} pieces, R^2 " in lines[2]
    assert lines[3].startswith("  seconds per U ") and lines[3].endswith(" on the measured machine and widths "
                                                                         "(not written)")
    assert lines[4] == f"written to {out}"
    # Plans of the calibrated topology carry the invocation cost and are scored with it.
    rng = np.random.default_rng(3)
    lengths = rng.integers(100, 900, size=12)
    counts = np.array([[rng.multinomial(6 * t, np.full(64, 1 / 64)) for _ in range(2)] for t in lengths])
    w = routepack.Window(lengths, counts, moe_layers=[1, 2], top_k=6)
    plan = routepack.plan_window(w, cal, seed=1)
    linear = routepack.plan_window(w, routepack.Topology.from_json(
        json.dumps({k: v for k, v in json.loads(cal.to_json()).items() if k != "expert_invocation_tokens"})), seed=1)
    assert json.loads(plan.to_json())["topology"]["expert_invocation_tokens"] == cal.expert_invocation_tokens
    assert json.loads(plan.to_json())["version"] == 10
    assert plan.metrics["routepack"]["score"][0] > linear.metrics["routepack"]["score"][0]


def bad_cases():
    good = synthetic(1, plans=1)

    def edit(f):
        d = json.loads(json.dumps(good))
        f(d)
        return json.dumps(d)

    def set_piece(k, key, value):
        return lambda d: d["plans"][0]["pieces"][k].__setitem__(key, value)

    def flat_experts(d):
        # Seconds that grow with the experts invoked and not with their tokens.
        for pc in d["plans"][0]["pieces"]:
            if pc["kind"] == "experts":
                pc["seconds"] = 0.001 * pc["experts"]
        finish(d)

    step = good["plans"][0]["measured"]["step_seconds"]

    def only_two_with_tokens(d):
        # Tokens on the first attention piece and the first experts piece that has any; none elsewhere.
        kept = {"attention": False, "experts": False}
        for pc in d["plans"][0]["pieces"]:
            if pc["tokens"] and not kept[pc["kind"]]:
                kept[pc["kind"]] = True
            else:
                pc["tokens"] = 0

    return [
        ("truncated", json.dumps(good)[:200], "malformed JSON"),
        ("format", edit(lambda d: d.__setitem__("format", "routepack-plan")),
         'm.json: format is "routepack-plan", not "routepack-measured"'),
        ("version", edit(lambda d: d.__setitem__("version", 2)), "m.json: version is 2, not an integer in 1..1"),
        ("negative", edit(set_piece(3, "seconds", -1)), "m.json: plans[0].pieces[3].seconds is -1, not a finite "
                                                       "number >= 0"),
        ("nan", json.dumps(good).replace('"seconds": 0.0', '"seconds": NaN', 1), "m.json: malformed JSON"),
        ("missing", edit(lambda d: d["plans"][0]["pieces"][150].pop("tokens")),
         "m.json: plans[0].pieces[150].tokens is missing"),
        ("kind", edit(set_piece(7, "kind", "router")),
         'm.json: plans[0].pieces[7].kind is "router", not "attention" or "experts"'),
        ("incomplete", edit(lambda d: d["plans"][0]["pieces"].pop()),
         "m.json: plans[0] has no experts piece for row 24, EDP shard 1, MoE layer 3, EP rank 7"),
        ("step", edit(lambda d: d["plans"][0]["measured"].__setitem__("step_seconds", 1.5)),
         f"m.json: plans[0].measured.step_seconds is 1.5; its pieces compose to {step!r}"),
        ("too few", edit(only_two_with_tokens),
         "m.json: 1 attention and 1 experts pieces with tokens; a fit needs at least 2 of each"),
        ("flat experts", edit(flat_experts),
         "m.json: the experts pieces fit no cost per token (their seconds do not grow with tokens), so the model "
         "has nothing to scale by"),
    ]


@pytest.mark.parametrize("name,text,message", bad_cases(), ids=[c[0] for c in bad_cases()])
def test_bad_measured_files_are_refused(tmp_path, monkeypatch, name, text, message):
    path = tmp_path / "m.json"
    path.write_text(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(routepack.InputError) as e:
        routepack.calibrate("m.json", routepack.Topology(8, 4, 2, C))
    assert message in str(e.value)
    exe = cli()
    if exe:
        r = subprocess.run([exe, "calibrate", "m.json", "--topology", "deepseek-v2-lite-ep8-dp4", "--out", "o.json"],
                           capture_output=True, text=True, env=cli_env())
        assert r.returncode == 1 and message in r.stderr and not os.path.exists("o.json")


def test_missing_file_and_no_cap(tmp_path):
    with pytest.raises(routepack.MissingFileError):
        routepack.calibrate(tmp_path / "nowhere.json", routepack.Topology(8, 4, 2, C))
    no_cap = routepack.Topology(8, 4, 2, None, samples_per_cell=2)
    with pytest.raises(routepack.InputError) as e:
        routepack.calibrate(write(tmp_path, synthetic(1)), no_cap)
    assert str(e.value).endswith("m.json: the topology has no token cap C, which the cost units are taken in")
