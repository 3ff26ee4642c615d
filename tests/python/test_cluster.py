"""Whole-run sweeps on Dask (routepack.run) and read_trace: a real LocalCluster of 2 worker processes
(one thread each) against `routepack sweep` on the same steps imported into a library, plan for plan;
resuming; a bad step; a killed worker; the command line's usage errors, OUT on a full and on a
read-only file system, Ctrl-C, a replaced step, the files' mode and the local cluster's sockets. The
steps are small verl batches (.npz) written here."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest

import routepack
from conftest import cli

# The sanitizer pass preloads the ASan runtime into the interpreter; Dask's worker processes and the
# dask-scheduler / dask-worker commands would inherit it and abort, so the pass skips these tests.
if "asan" in os.environ.get("LD_PRELOAD", ""):
    pytest.skip("Dask worker processes under the sanitizer pass's preloaded ASan runtime", allow_module_level=True)
import dask
import distributed  # python3-distributed (resources/setup/debian-packages.txt): missing is a failure, not a skip
import routepack.run as run_mod

MODEL = {"experts": 16, "top_k": 2, "num_hidden_layers": 4, "moe_layers": [1, 2, 3]}
MODEL_FLAGS = ["--experts", "16", "--top-k", "2", "--layers", "4", "--moe-layers", "1-3"]
TOPOLOGIES = {
    "two-shards": {"ep_ranks": 4, "dp_slots": 4, "edp_shards": [[0, 1], [2, 3]], "token_cap": 256,
                   "attention_stages": [{"name": "attn", "alpha": 1.0, "beta": 2.0}]},
    "wide": {"ep_ranks": 8, "dp_slots": 2, "token_cap": 512,
             "attention_stages": [{"name": "mla", "alpha": 1.0, "beta": 1.0}]},
}


def write_steps(folder, steps=5, batch=24, seq=96, seed=0, first=1):
    """`steps` verl batches step-<k>.npz (routed_experts int16 [B, S, 4 layers, top-2] over 16 experts,
    left-padded attention_mask [B, S]), skewed towards a few experts that drift from step to step."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    w = 1.0 / np.arange(1, 17)
    w /= w.sum()
    for s in range(steps):
        lengths = rng.integers(seq // 4, seq, size=batch)
        mask = np.zeros((batch, seq), dtype=np.int64)
        routes = np.zeros((batch, seq, 4, 2), dtype=np.int16)
        for b in range(batch):
            mask[b, seq - lengths[b]:] = 1
            for layer in range(4):
                p = np.roll(w, layer + s)
                for t in range(seq - lengths[b], seq):
                    routes[b, t, layer] = rng.choice(16, size=2, replace=False, p=p)
        np.savez(os.path.join(folder, f"step-{s + first}.npz"), routed_experts=routes, attention_mask=mask)
    return folder


@pytest.fixture(scope="module")
def exe():
    path = cli()
    if not path or not os.path.exists(path):
        pytest.skip("ROUTEPACK_CLI is not set (run through ctest)")
    return path


def run_cli(exe, *args, ok=True):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([exe, *args], capture_output=True, text=True, env=env)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def client():
    cluster = run_mod.local_cluster(2)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    d = tmp_path_factory.mktemp("cluster")
    write_steps(str(d / "run"))
    for name, t in TOPOLOGIES.items():
        (d / f"{name}.json").write_text(json.dumps(t))
    return d


def without_timings(text):
    """A plan file's text without its timings (everything else is identical for identical inputs)."""
    doc = json.loads(text)
    doc.pop("timings")
    return json.dumps(doc)


def library_sweep(exe, d, topology, out, *extra):
    """`routepack sweep` of the run's steps imported into one library trace named 'run', one window
    per step (the step's samples in file order), into `out`."""
    db = str(d / "lib.routepack")
    if not os.path.exists(db):
        run_cli(exe, "import", "--db", db, "--name", "run", "--quiet", *MODEL_FLAGS, str(d / "run"))
        for name, path in run_mod.run_steps(str(d / "run")):
            ids = d / f"{name}.ids"
            ids.write_text("\n".join(routepack.read_trace(path, model=MODEL).sample_ids) + "\n")
            run_cli(exe, "window", "--db", db, "--trace", "run", "--name", name, "--ids", str(ids))
    run_cli(exe, "sweep", "--db", db, "--trace", "run", "--topology", topology, "--out", out, "--threads", "1",
            "--quiet", *extra)
    return out


# --- read_trace ----------------------------------------------------------------------------------

def test_read_trace_is_the_import(exe, steps, tmp_path):
    """read_trace gives the samples, lengths and counts `routepack import` stores, and the routes the
    file holds; it writes nothing."""
    path = str(steps / "run" / "step-2.npz")
    before = sorted(os.listdir(steps / "run"))
    w = routepack.read_trace(path, model=MODEL)
    assert sorted(os.listdir(steps / "run")) == before
    db = str(tmp_path / "one.routepack")
    run_cli(exe, "import", "--db", db, "--name", "one", "--quiet", *MODEL_FLAGS, path)
    lib = routepack.Library(db).load("one")
    assert w.sample_ids == lib.sample_ids == [f"step-2#{b}" for b in range(24)]
    assert (w.lengths == lib.lengths).all() and (w.counts == lib.counts).all()
    assert w.format == "npz" and w.moe_layers == [1, 2, 3] and w.num_experts == 16 and w.top_k == 2
    # Sample 0's routes: rows = t_0 - 1 (the last masked position is never forwarded), MoE layers 1-3.
    r0 = w.routes[0]
    assert r0.shape == (w.lengths[0] - 1, 3, 2) and r0.dtype == np.int32
    raw = np.load(path)
    mask = raw["attention_mask"][0].astype(bool)
    np.testing.assert_array_equal(r0, raw["routed_experts"][0][mask][:-1, 1:4])
    assert routepack.read_trace(path, model=MODEL, routes=False).routes is None


def test_read_trace_errors_are_the_importers(exe, tmp_path):
    bad = tmp_path / "step-9.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ValueError) as e:
        routepack.read_trace(str(bad), model=MODEL)
    assert str(e.value) == f"{bad}: not a valid .npz (zip) archive: Not a zip archive"
    r = run_cli(exe, "import", "--db", str(tmp_path / "x.routepack"), "--name", "x", *MODEL_FLAGS, str(bad), ok=False)
    assert r.stderr.strip() == f"routepack: error: {e.value}"
    with pytest.raises(ValueError, match=r"^model: unknown key\(s\) \['layers'\]"):
        routepack.read_trace(str(bad), model={"layers": 4})


def test_window_pickles(steps):
    import pickle

    w = routepack.read_trace(str(steps / "run" / "step-1.npz"), model=MODEL)._named("run", "step-1")
    v = pickle.loads(pickle.dumps(w))
    assert v.sample_ids == w.sample_ids and (v.counts == w.counts).all() and (v.lengths == w.lengths).all()
    assert v.trace_name == "run" and v.window_name == "step-1"
    assert all((a == b).all() for a, b in zip(v.routes, w.routes))


def test_run_steps_natural_order(tmp_path):
    for n in ("step-10.npz", "step-2.npz", "step-1", ".hidden", "config.json"):
        (tmp_path / n).write_text("")
    assert [w for w, _ in run_mod.run_steps(str(tmp_path))] == ["step-1", "step-2", "step-10"]
    (tmp_path / "step-2.jsonl").write_text("")
    with pytest.raises(ValueError, match="step name 'step-2' is also the name of"):
        run_mod.run_steps(str(tmp_path))


# --- the cluster sweep ---------------------------------------------------------------------------

def test_cluster_sweep_equals_routepack_sweep(exe, client, steps, tmp_path):
    """Two chains (two topologies) on 2 worker processes: every plan file is the one `routepack sweep`
    writes for that step (timings aside), and the summary lists every step once per chain."""
    topologies = [str(steps / "two-shards.json"), str(steps / "wide.json")]
    out = str(tmp_path / "out")
    summary = run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=topologies, out=out, seed=5)
    assert summary["failed"] == [] and summary["topologies"] == ["two-shards", "wide"]
    assert [(x["topology"], x["window"]) for x in summary["lines"]] == [
        (t, f"step-{k}") for t in ("two-shards", "wide") for k in range(1, 6)]
    for name, topo in zip(("two-shards", "wide"), topologies):
        ref = library_sweep(exe, steps, topo, str(tmp_path / f"ref-{name}"), "--seed", "5")
        table = json.loads(open(os.path.join(ref, "sweep.json")).read())
        for k in range(1, 6):
            mine = open(os.path.join(out, name, f"step-{k}.plan.json")).read()
            theirs = open(os.path.join(ref, f"step-{k}.plan.json")).read()
            assert without_timings(mine) == without_timings(theirs)
            # Byte for byte up to the timings object, the plan file's last member.
            assert mine[:mine.index('"timings"')] == theirs[:theirs.index('"timings"')]
        lines = [x for x in summary["lines"] if x["topology"] == name]
        for line, row in zip(lines, table):
            for key in ("samples", "rows", "baseline", "reorder", "karmarkar_karp", "routepack", "experts_moved",
                        "routepack_vs_baseline_pct", "lower_bound"):
                assert line[key] == pytest.approx(row[key], rel=1e-12), key
        assert [x["previous_from"] for x in lines] == ["identity", "step-1", "step-2", "step-3", "step-4"]
    workers = set(client.scheduler_info()["workers"])
    assert {x["worker"] for x in summary["lines"]} <= workers
    # Each step is read once for both chains: the read's seconds are on both lines, and on its record.
    reads = {x["window"]: x["read_seconds"] for x in summary["lines"] if x["topology"] == "two-shards"}
    assert all(isinstance(v, float) and v > 0 for v in reads.values()) and len(reads) == 5
    assert all(x["read_seconds"] == reads[x["window"]] for x in summary["lines"])
    assert json.loads(open(os.path.join(out, "wide", "step-3.step.json")).read())["read_seconds"] == reads["step-3"]
    csv_lines = open(os.path.join(out, "summary.csv"), newline="").read().split("\r\n")
    assert csv_lines[0].startswith("topology,window,status,samples,rows,certified,baseline,reorder,")
    header = csv_lines[0].split(",")
    assert header[header.index("task_seconds") + 1] == "read_seconds"
    assert float(csv_lines[1].split(",")[header.index("read_seconds")]) == reads["step-1"]
    assert csv_lines[1].startswith("two-shards,step-1,planned,24,") and len(csv_lines) == 12 and csv_lines[-1] == ""


def test_cluster_sweep_previous_and_move_budget(exe, client, steps, tmp_path):
    """--previous and --max-moves as `routepack sweep` takes them."""
    topo = str(steps / "two-shards.json")
    base = run_mod.sweep(client, [str(steps / "run" / "step-5.npz")], model=MODEL, topologies=[topo],
                         out=str(tmp_path / "prev"), seed=9)
    assert base["failed"] == []
    previous = str(tmp_path / "prev" / "two-shards" / "step-5.plan.json")
    out = str(tmp_path / "out")
    run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=out, seed=5, previous=previous,
                  max_moves=3)
    ref = library_sweep(exe, steps, topo, str(tmp_path / "ref"), "--seed", "5", "--previous", previous,
                        "--max-moves", "3")
    for k in range(1, 6):
        mine = json.loads(open(os.path.join(out, "two-shards", f"step-{k}.plan.json")).read())
        assert mine["migration"]["moves"] <= 3
        assert without_timings(json.dumps(mine)) == without_timings(open(os.path.join(ref, f"step-{k}.plan.json")).read())


def test_cluster_sweep_history_as_routepack_sweep(exe, client, steps, tmp_path):
    """A run-level base placement (budget history_decay): each step starts from the plan before it with
    its history, as `routepack sweep --history-decay` chains them, also when a rerun resumes the chain."""
    topo = str(steps / "two-shards.json")
    out = str(tmp_path / "out")
    run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=out, seed=5, max_moves=3,
                  budgets={"history_decay": 0.5})
    ref = library_sweep(exe, steps, topo, str(tmp_path / "ref"), "--seed", "5", "--max-moves", "3",
                        "--history-decay", "0.5")
    weight = 0.0
    for k in range(1, 6):
        mine = open(os.path.join(out, "two-shards", f"step-{k}.plan.json")).read()
        assert without_timings(mine) == without_timings(open(os.path.join(ref, f"step-{k}.plan.json")).read())
        weight = 0.5 * weight + 1
        assert json.loads(mine)["history"]["steps"] == k and json.loads(mine)["history"]["weight"] == weight
    for k in (4, 5):
        os.unlink(os.path.join(out, "two-shards", f"step-{k}.plan.json"))
    planned = []
    run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=out, seed=5, max_moves=3,
                  budgets={"history_decay": 0.5}, progress=lambda c, w, st: planned.append(w))
    assert planned == ["step-4", "step-5"]
    for k in (4, 5):
        again = open(os.path.join(out, "two-shards", f"step-{k}.plan.json")).read()
        assert without_timings(again) == without_timings(open(os.path.join(ref, f"step-{k}.plan.json")).read())


def test_resume_plans_only_missing_steps(client, steps, tmp_path):
    """A rerun plans only the steps OUT lacks, from the placement of the last finished step; a rerun
    with other settings is refused."""
    topo = str(steps / "two-shards.json")
    out = str(tmp_path / "out")
    run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=out, seed=5)
    first = {k: open(os.path.join(out, "two-shards", f"step-{k}.plan.json")).read() for k in range(1, 6)}
    for k in (4, 5):
        os.unlink(os.path.join(out, "two-shards", f"step-{k}.plan.json"))
    planned = []
    run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=out, seed=5,
                  progress=lambda c, w, st: planned.append((w, st)))
    assert planned == [("step-4", "planned"), ("step-5", "planned")]
    for k in range(1, 6):
        again = open(os.path.join(out, "two-shards", f"step-{k}.plan.json")).read()
        assert (again == first[k]) if k < 4 else (without_timings(again) == without_timings(first[k]))
    with pytest.raises(ValueError) as e:
        run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=out, seed=6)
    assert str(e.value) == f"{out}: holds a run with another seed (5 != 6); give another --out or the same settings"


def test_sweep_waits_on_its_own_client(client, steps, tmp_path):
    """Dask's default client is another one, on another event loop (here one still connecting to a
    scheduler that never answers; a client that failed to connect can stay registered the same way):
    the sweep waits on its own client's futures and plans every step, the plans those of the same
    sweep without it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def connect():
        with contextlib.suppress(OSError):  # once the listener closes
            distributed.Client(f"tcp://127.0.0.1:{listener.getsockname()[1]}", timeout=600)

    connecting = threading.Thread(target=connect, daemon=True)
    connecting.start()
    # Registered as the default on its start, then "connecting" once its loop runs the handshake.
    deadline = time.monotonic() + 60
    while (distributed.default_client() is client or distributed.default_client().status != "connecting") and \
            time.monotonic() < deadline:
        time.sleep(0.01)
    other = distributed.default_client()
    assert other is not client and other.status == "connecting" and other.loop is not client.loop
    del other
    topo = str(steps / "two-shards.json")
    done = {}

    def sweep():
        done["summary"] = run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo],
                                        out=str(tmp_path / "out"), seed=5)

    try:
        t = threading.Thread(target=sweep, daemon=True)
        t.start()
        t.join(timeout=120)
        assert "summary" in done, "the sweep waited on the default client's event loop"
    finally:
        listener.close()  # the connecting client fails and leaves the registry
        connecting.join(timeout=60)
    assert distributed.default_client() is client
    assert [x["status"] for x in done["summary"]["lines"]] == ["planned"] * 5
    ref = run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=str(tmp_path / "ref"),
                        seed=5)
    assert ref["failed"] == []
    for k in range(1, 6):
        name = os.path.join("two-shards", f"step-{k}.plan.json")
        assert without_timings(open(tmp_path / "out" / name).read()) == without_timings(
            open(tmp_path / "ref" / name).read())


def test_bad_step_fails_alone(client, steps, tmp_path):
    """A step that does not read fails with the importer's message, the chain goes on from the last
    good placement and the summary lists the failure; once the file is fixed, a rerun plans it and
    the steps after it again, and the run equals a clean one."""
    run = tmp_path / "run"
    os.makedirs(run)
    for k in range(1, 6):
        src = steps / "run" / f"step-{k}.npz"
        (run / src.name).write_bytes(src.read_bytes() if k != 3 else b"not a zip")
    topo = str(steps / "two-shards.json")
    out = str(tmp_path / "out")
    summary = run_mod.sweep(client, str(run), model=MODEL, topologies=[topo], out=out, seed=5)
    msg = f"{run / 'step-3.npz'}: not a valid .npz (zip) archive: Not a zip archive"
    assert summary["failed"] == [{"topology": "two-shards", "window": "step-3", "path": str(run / "step-3.npz"),
                                  "error": msg}]
    lines = summary["lines"]
    assert [x["status"] for x in lines] == ["planned", "planned", "failed", "planned", "planned"]
    assert lines[2]["error"] == msg and lines[2]["stage"] == "read"
    assert [x.get("previous_from") for x in lines] == ["identity", "step-1", None, "step-2", "step-4"]
    csv_text = open(os.path.join(out, "summary.csv"), newline="").read()
    assert f'two-shards,step-3,failed,{"," * 23}{msg}\r\n' in csv_text
    (run / "step-3.npz").write_bytes((steps / "run" / "step-3.npz").read_bytes())
    planned = []
    summary = run_mod.sweep(client, str(run), model=MODEL, topologies=[topo], out=out, seed=5,
                            progress=lambda c, w, st: planned.append(w))
    assert planned == ["step-3", "step-4", "step-5"] and summary["failed"] == []
    assert not os.path.exists(os.path.join(out, "two-shards", "step-3.failed.json"))
    clean = str(tmp_path / "clean")
    run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=clean, seed=5)
    for k in range(1, 6):
        a = open(os.path.join(out, "two-shards", f"step-{k}.plan.json")).read()
        b = open(os.path.join(clean, "two-shards", f"step-{k}.plan.json")).read()
        assert without_timings(a) == without_timings(b)


def test_killed_worker_loses_no_finished_step(steps, tmp_path):
    """One of 2 worker processes killed (SIGKILL) after the first finished step: every finished step
    stays as written, and the run completes, equal to a run without the kill."""
    cluster = run_mod.local_cluster(2)
    c = distributed.Client(cluster)
    try:
        run = write_steps(str(tmp_path / "run"), steps=6, batch=32, seed=4)
        topo = str(steps / "two-shards.json")
        budgets = {"levels": 12, "steps_per_level": 400}
        out = str(tmp_path / "out")
        pids = c.run(os.getpid)
        killed, written = [], {}

        def on_step(chain, window, status):
            path = os.path.join(out, "two-shards", f"{window}.plan.json")
            written[window] = open(path).read()
            if not killed:
                victim = next(a for a in pids)
                os.kill(pids[victim], signal.SIGKILL)
                killed.append(victim)

        summary = run_mod.sweep(c, run, model=MODEL, topologies=[topo], out=out, seed=3, budgets=budgets,
                                progress=on_step)
        assert killed and summary["failed"] == []
        assert sorted(written) == [f"step-{k}" for k in range(1, 7)]
        for w, text in written.items():
            assert open(os.path.join(out, "two-shards", f"{w}.plan.json")).read() == text
        ref = str(tmp_path / "ref")
        run_mod.sweep(c, run, model=MODEL, topologies=[topo], out=ref, seed=3, budgets=budgets)
        for k in range(1, 7):
            a = open(os.path.join(out, "two-shards", f"step-{k}.plan.json")).read()
            b = open(os.path.join(ref, "two-shards", f"step-{k}.plan.json")).read()
            assert without_timings(a) == without_timings(b)
    finally:
        c.close()
        cluster.close()


# --- back to the studio: routepack import-run ------------------------------------------------------

STEP_COLUMNS = ("window_name", "step_path", "status", "samples", "rows", "certified", "max_u_baseline",
                "max_u_reorder", "max_u_karmarkar_karp", "max_u_routepack", "max_u_grouter", "max_u_routepack_comm",
                "gain_vs_baseline_pct", "gain_vs_reorder_pct", "lower_bound", "experts_moved", "migration_bytes",
                "materialization_seconds", "compute_seconds", "modelled_seconds", "planner_seconds", "task_seconds",
                "time_limit_hit", "worker", "previous_from", "plan_file", "error", "stage")
# The summary line's key of each column (the same name where not listed).
LINE_KEYS = {"window_name": "window", "step_path": "path", "max_u_baseline": "baseline", "max_u_reorder": "reorder",
             "max_u_karmarkar_karp": "karmarkar_karp", "max_u_routepack": "routepack", "max_u_grouter": "grouter",
             "max_u_routepack_comm": "routepack+comm", "gain_vs_baseline_pct": "routepack_vs_baseline_pct",
             "gain_vs_reorder_pct": "routepack_vs_reorder_pct", "planner_seconds": "planner_s"}


def stored_steps(db):
    """Every cluster_run_steps row of the library as (run id, chain name, position, {column: value})."""
    import sqlite3

    con = sqlite3.connect(db)
    try:
        rows = con.execute(f"SELECT s.run_id, c.name, s.position, {', '.join('s.' + c for c in STEP_COLUMNS)} "
                           "FROM cluster_run_steps s JOIN cluster_run_chains c ON c.run_id = s.run_id AND "
                           "c.position = s.chain ORDER BY s.run_id, s.chain, s.position").fetchall()
        runs = con.execute("SELECT id, out_path, trace, seed, step_count, planned, failed FROM cluster_runs").fetchall()
    finally:
        con.close()
    return [(r[0], r[1], r[2], dict(zip(STEP_COLUMNS, r[3:]))) for r in rows], runs


def expected_row(line):
    """The cluster_run_steps columns a summary line becomes (booleans as 0/1, absent as None)."""
    row = {}
    for col in STEP_COLUMNS:
        v = line.get(LINE_KEYS.get(col, col))
        row[col] = int(v) if isinstance(v, bool) else v
    if line["status"] == "failed":
        row["time_limit_hit"] = None
    return row


def test_import_run_stores_the_summary(exe, client, steps, tmp_path):
    """A cluster sweep of two chains with a bad step, imported with `routepack import-run`: the stored rows
    equal summary.json's lines, field for field; importing again says so and changes nothing; once the step
    is fixed and the run resumed, importing again replaces the rows; a bad summary is refused with its
    field."""
    run = tmp_path / "run"
    os.makedirs(run)
    for k in range(1, 5):
        src = steps / "run" / f"step-{k}.npz"
        (run / src.name).write_bytes(src.read_bytes() if k != 2 else b"not a zip")
    topologies = [str(steps / "wide.json"), str(steps / "two-shards.json")]
    out = str(tmp_path / "out")
    summary = run_mod.sweep(client, str(run), model=MODEL, topologies=topologies, out=out, seed=5)
    assert len(summary["failed"]) == 2
    db = str(tmp_path / "lib.routepack")
    r = run_cli(exe, "import-run", out, "--db", db)
    msg = f"{run / 'step-2.npz'}: not a valid .npz (zip) archive: Not a zip archive"
    assert r.stdout == (f"imported cluster run 1 'run' from {out} into {db}: 4 steps x 2 chains, 6 planned, "
                        f"2 failed\n  failed: wide step-2: {msg}\n  failed: two-shards step-2: {msg}\n")
    rows, runs = stored_steps(db)
    assert runs == [(1, out, "run", 5, 4, 6, 2)]
    assert [(chain, pos) for _, chain, pos, _ in rows] == [(c, k) for c in ("wide", "two-shards") for k in range(4)]
    for (_, chain, pos, row), line in zip(rows, summary["lines"]):
        assert (chain, line["topology"]) == (chain, chain)
        assert row == expected_row(line), (chain, pos)
        if line["status"] == "planned":
            assert os.path.isfile(os.path.join(out, chain, row["plan_file"]))
    assert rows[1][3]["status"] == "failed" and rows[1][3]["stage"] == "read" and rows[1][3]["error"] == msg
    assert rows[0][3]["max_u_grouter"] is None and rows[0][3]["previous_from"] == "identity"
    # Again: nothing changes.
    with open(db, "rb") as f:
        before = f.read()
    r = run_cli(exe, "import-run", out, "--db", db)
    assert r.stdout.startswith(f"cluster run 1 'run' from {out} is already in {db} as it is (nothing changed): ")
    assert stored_steps(db) == (rows, runs)
    # Fixed and resumed: the rows are replaced, same id.
    (run / "step-2.npz").write_bytes((steps / "run" / "step-2.npz").read_bytes())
    summary = run_mod.sweep(client, str(run), model=MODEL, topologies=topologies, out=out, seed=5)
    assert summary["failed"] == []
    r = run_cli(exe, "import-run", out, "--db", db)
    assert r.stdout == (f"replaced cluster run 1 'run' (imported before from {out}) in {db}: 4 steps x 2 chains, "
                        "8 planned, 0 failed\n")
    rows, runs = stored_steps(db)
    assert runs == [(1, out, "run", 5, 4, 8, 0)]
    assert [row for _, _, _, row in rows] == [expected_row(line) for line in summary["lines"]]
    # `routepack info` lists the imported run, one line, and in its JSON.
    shapes = [json.loads(open(t).read()) for t in topologies]
    chains = ", ".join(f"{n} (EP{t['ep_ranks']}/DP{t['dp_slots']})" for n, t in zip(("wide", "two-shards"), shapes))
    r = run_cli(exe, "info", "--db", db)
    lines = r.stdout.splitlines()
    assert lines[-3] == f"cluster run 1 'run': 4 steps x 2 chains: {chains}; 8 planned, 0 failed; from {out}"
    # Each chain is a whole run of the library.
    for k, name in enumerate(("wide", "two-shards")):
        line = lines[-2 + k]
        assert line.startswith(f"whole run {k + 1}: cluster of trace 'run' on {name} (EP"), line
        assert line.endswith(f", chained from identity; cluster run 1, chain {k}"), line
    info = json.loads(run_cli(exe, "info", "--db", db, "--json").stdout)
    assert [(w["id"], w["source"], w["topology"], w["cluster_run"], w["cluster_chain"], w["steps"], w["runs"])
            for w in info["whole_runs"]] == [(1, "cluster", "wide", 1, 0, 4, []), (2, "cluster", "two-shards", 1, 1, 4, [])]
    listed = info["cluster_runs"]
    assert [(c["id"], c["steps"], [ch["name"] for ch in c["chains"]], c["planned"]) for c in listed] == \
        [(1, 4, ["wide", "two-shards"], 8)]
    # A bad field: refused with the file and the field, the library unchanged.
    doc = json.loads(open(os.path.join(out, "summary.json")).read())
    doc["lines"][5]["samples"] = 0
    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (bad / "summary.json").write_text(json.dumps(doc))
    r = run_cli(exe, "import-run", str(bad), "--db", db, ok=False)
    assert r.returncode == 1
    assert r.stderr == (f"routepack: error: {bad / 'summary.json'}: lines[5].samples is 0, not an integer in "
                        "1..2147483647\n")
    assert stored_steps(db) == (rows, runs)
    # Into a new library that the failure would leave empty: no file is left behind.
    r = run_cli(exe, "import-run", str(bad), "--db", str(tmp_path / "new.routepack"), ok=False)
    assert r.returncode == 1 and not os.path.exists(tmp_path / "new.routepack")


# --- the real DeepSeek-V2-Lite run ------------------------------------------------------------------

def deepseek_run(run):
    """The real DeepSeek-V2-Lite trace (../shared/traces/deepseek-v2-lite, 599 prompt-csv files) as a run
    folder `run` of 10 steps ds-000 .. ds-009, each a folder of symbolic links to 64 of its files (the
    last 23) in natural order. Returns (the trace's folder, run). Skips without ../shared (fails in CI)."""
    from conftest import shared_dir

    shared = shared_dir()
    if shared is None:
        if os.environ.get("CI"):
            pytest.fail("ROUTEPACK_SHARED_DIR is absent")
        pytest.skip("../shared is absent")
    src = os.path.join(shared, "traces", "deepseek-v2-lite")
    names = [n for n in os.listdir(src) if n.endswith(".csv")]
    names = run_mod._core._natural_sorted(names)
    assert len(names) == 599
    for k in range(0, len(names), 64):
        step = run / f"ds-{k // 64:03d}"
        os.makedirs(step)
        for n in names[k:k + 64]:
            os.symlink(os.path.join(src, n), step / n)
    return src, run


def test_deepseek_run_through_the_cluster(exe, client, tmp_path):
    """The real DeepSeek-V2-Lite trace (599 prompts, one prompt-csv file each) as a run of 10 steps, each a
    folder of 64 of its files (the last 23) in the order `routepack window --split 64` takes them: the
    cluster sweep on 2 worker processes equals `routepack sweep` of the split windows, plan for plan, and
    `import-run` stores its summary."""
    src, run = deepseek_run(tmp_path / "ds")
    db = str(tmp_path / "ds.routepack")
    run_cli(exe, "import", "--db", db, "--name", "ds", "--model", "deepseek-v2-lite", "--quiet", src)
    r = run_cli(exe, "window", "--db", db, "--trace", "ds", "--name", "ds", "--split", "64")
    assert r.stdout.count("\n") == 10
    lib = routepack.Library(db)
    for name, path in run_mod.run_steps(str(run)):
        assert lib.load("ds", name).sample_ids == routepack.read_trace(path, model="deepseek-v2-lite").sample_ids
    topology = "deepseek-v2-lite-ep8-dp4"
    ref = str(tmp_path / "ref")
    run_cli(exe, "sweep", "--db", db, "--trace", "ds", "--topology", topology, "--out", ref, "--threads", "1",
            "--seed", "7", "--quiet")
    out = str(tmp_path / "out")
    summary = run_mod.sweep(client, str(run), model="deepseek-v2-lite", topologies=[topology], out=out, seed=7,
                            trace_name="ds")
    assert summary["failed"] == [] and [x["window"] for x in summary["lines"]] == [f"ds-{k:03d}" for k in range(10)]
    assert [x["samples"] for x in summary["lines"]] == [64] * 9 + [23]
    table = json.loads(open(os.path.join(ref, "sweep.json")).read())
    for k, (line, row) in enumerate(zip(summary["lines"], table)):
        mine = open(os.path.join(out, topology, f"ds-{k:03d}.plan.json")).read()
        theirs = open(os.path.join(ref, f"ds-{k:03d}.plan.json")).read()
        assert mine[:mine.index('"timings"')] == theirs[:theirs.index('"timings"')], k
        for key in ("baseline", "reorder", "karmarkar_karp", "routepack", "experts_moved"):
            assert line[key] == pytest.approx(row[key], rel=1e-12), key
    r = run_cli(exe, "import-run", out, "--db", db)
    assert r.stdout == f"imported cluster run 1 'ds' from {out} into {db}: 10 steps x 1 chains, 10 planned, 0 failed\n"
    rows, _ = stored_steps(db)
    assert [row for _, _, _, row in rows] == [expected_row(line) for line in summary["lines"]]


def test_lookahead_changes_no_plan(client, steps, tmp_path, capsys):
    """The read-ahead only changes when steps are read: the plans with none ahead (1) and with every
    step ahead (5) are the same files; below 1 is refused by the function and by the command line."""
    topo = str(steps / "wide.json")
    plans = {}
    for ahead in (1, 5):
        out = str(tmp_path / f"ahead-{ahead}")
        summary = run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=out, seed=3,
                                lookahead=ahead)
        assert summary["failed"] == []
        plans[ahead] = [without_timings(open(os.path.join(out, "wide", f"step-{k}.plan.json")).read())
                        for k in range(1, 6)]
    assert plans[1] == plans[5]
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError) as e:
            run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=str(tmp_path / "bad"),
                          lookahead=bad)
        assert str(e.value) == f"lookahead: must be an integer of at least 1, got {bad!r}"
    assert not os.path.exists(tmp_path / "bad")
    with pytest.raises(SystemExit) as e:
        run_mod.main(["sweep", str(steps / "run"), "--model", "x", "--topology", topo, "--out", str(tmp_path / "bad"),
                      "--lookahead", "0"])
    assert e.value.code == 2
    assert capsys.readouterr().err == "routepack.run: error: sweep: --lookahead must be an integer >= 1 (got '0')\n"


# --- the command line: usage errors, OUT that cannot be written, Ctrl-C, resume ---------------------

def run_command(*args, timeout=300):
    """`python3 -m routepack.run ARGS` in a child process (this interpreter, this PYTHONPATH)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([sys.executable, "-m", "routepack.run", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def files_of(folder):
    """Every file under `folder` as {relative path: bytes}."""
    out = {}
    for root, _, names in os.walk(folder):
        for n in names:
            path = os.path.join(root, n)
            out[os.path.relpath(path, folder)] = open(path, "rb").read()
    return out


def resume_line(out):
    return f"{out} keeps the finished steps: rerun the same command to resume"


@contextlib.contextmanager
def tmpfs(size):
    """A tmpfs of `size` mounted on a new folder, unmounted (and the folder removed) on the way out.
    Skips the test when this process may not mount (not root, or a container without the right)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the test runs a sweep on a full and a read-only file system)")
    folder = tempfile.mkdtemp(prefix="routepack-tmpfs-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", folder],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(folder)
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield folder
    finally:
        if subprocess.run(["umount", folder], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", folder], capture_output=True)
        os.rmdir(folder)


def remount(folder, mode):
    subprocess.run(["mount", "-o", f"remount,{mode}", folder], check=True, capture_output=True)


def test_usage_errors_start_nothing(steps, tmp_path, capsys):
    """Every setting is checked before a cluster starts or OUT is touched: each bad one is one line
    and exit status 2, and OUT does not appear."""
    run = str(steps / "run")
    topo = str(steps / "two-shards.json")
    out = str(tmp_path / "out")
    (tmp_path / "file").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    base = ["sweep", run, *MODEL_FLAGS, "--topology", topo, "--out", out, "--quiet"]
    missing = "no such run folder or step (a run is a folder whose entries are the steps, or the steps' paths in order)"
    known = ", ".join(routepack.Topology.known_names())
    cases = [
        (["sweep", str(steps / "rnu"), *MODEL_FLAGS, "--topology", topo, "--out", out],
         f"{steps / 'rnu'}: {missing}"),
        (["sweep", str(steps / "run" / "step-1.npz"), str(steps / "run" / "step-9.npz"), *MODEL_FLAGS,
          "--topology", topo, "--out", out], f"{steps / 'run' / 'step-9.npz'}: {missing}"),
        (["sweep", run, "--model", "deepseek-v2-lit", "--topology", topo, "--out", out],
         "unknown model 'deepseek-v2-lit' (known: deepseek-v2-lite, "),
        (["sweep", run, "--model-config", str(tmp_path / "config.json"), "--topology", topo, "--out", out],
         f"{tmp_path / 'config.json'}: no such model config (config.json)"),
        (base + ["--format", "npzz"], "unknown format 'npzz' (valid: auto, sglang, vllm, npy, npz, "),
        (["sweep", run, *MODEL_FLAGS, "--topology", str(steps / "two-shard.json"), "--out", out],
         f"{steps / 'two-shard.json'}: no such topology file or shipped topology (known: {known})"),
        (base + ["--previous", str(tmp_path / "nope.plan.json")],
         f"{tmp_path / 'nope.plan.json'}: no such placement file (plan or expert map)"),
        (base + ["--previous", str(tmp_path / "fifo")],
         f"{tmp_path / 'fifo'}: is a pipe (FIFO), not a placement file (plan or expert map)"),
        (base + ["--previous", str(tmp_path)],
         f"{tmp_path}: is a folder, not a placement file (plan or expert map)"),
        (["sweep", run, *MODEL_FLAGS, "--topology", topo, "--out", str(tmp_path / "file")],
         f"{tmp_path / 'file'}: is not a folder; give another --out"),
    ]
    for argv, message in cases:
        assert run_mod.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith(f"routepack.run: error: {message}") and err.count("\n") == 1, (argv, err)
        assert not os.path.exists(out), argv
    # The command line's own errors, in the words of the routepack CLI: one line, exit status 2.
    for flag, value, message in (
            ("--workers", "0", "sweep: --workers must be an integer >= 1 (got '0')"),
            ("--seed", "-1", "sweep: --seed must be an integer in 0..18446744073709551615 (got '-1')"),
            ("--max-moves", "-7",
             "sweep: --max-moves must be an integer in 0..1000000000, or -1 (unlimited) (got '-7')"),
            ("--threads", "-1", "sweep: --threads must be an integer in 0..4096 (got '-1')"),
            ("--moe-layers", "1-x",
             "sweep: --moe-layers must be a list of layer ids and ranges such as 1-26 (got '1-x')"),
            ("--experts", "8x", "sweep: --experts must be an integer (got '8x')"),
            ("--seed", None, "--seed needs a value (see python3 -m routepack.run sweep --help)"),
            ("--bogus", None, "the following argument was not expected: --bogus (see python3 -m routepack.run sweep "
                              "--help)"),
            ("--scheduler", "tcp://127.0.0.1:9",
             "give either --dashboard or --scheduler, not both (see python3 -m routepack.run sweep --help)")):
        argv = base + [flag] + ([value] if value is not None else [])
        argv += ["--dashboard"] if flag == "--scheduler" else []
        with pytest.raises(SystemExit) as e:
            run_mod.main(argv)
        assert e.value.code == 2
        assert capsys.readouterr().err == f"routepack.run: error: {message}\n"
        assert not os.path.exists(out)
    for argv, message in ((["sweep", run, *MODEL_FLAGS], "--topology and --out are required"),
                          (["frob"], "unknown command 'frob'"), ([], "a command is required")):
        with pytest.raises(SystemExit) as e:
            run_mod.main(argv)
        assert e.value.code == 2
        hint = "python3 -m routepack.run sweep --help" if argv[:1] == ["sweep"] else "python3 -m routepack.run --help"
        assert capsys.readouterr().err == f"routepack.run: error: {message} (see {hint})\n"
    # A scheduler address that is none (2), or where no scheduler answers (3): OUT is not touched either.
    assert run_mod.main(base + ["--scheduler", "nonsense"]) == 2
    assert capsys.readouterr().err == (
        "routepack.run: error: --scheduler nonsense: missing port number in address 'nonsense'\n")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{closed.getsockname()[1]}"
        with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
            assert run_mod.main(base + ["--scheduler", address]) == 3
    assert capsys.readouterr().err == (f"routepack.run: error: {address}: cannot reach the scheduler (Timed out "
                                       f"trying to connect to {address} after 1 s); {resume_line(out)}\n")
    assert not os.path.exists(out)
    # The same checks from Python, before OUT is touched.
    with pytest.raises(ValueError) as e:
        run_mod.sweep(None, run, model=MODEL, topologies=[topo], out=out, budgets={"levels": 1, "nope": 1})
    assert str(e.value).startswith("budgets: unknown budget 'nope' (known: seeds_M, ")
    assert not os.path.exists(out)


def pages(n, page=4096):
    return (n + page - 1) // page


def test_out_on_a_full_file_system(steps):
    """OUT on a tmpfs that fills up at the third step's plan: one line naming that file, exit status
    3, the two finished steps kept whole, no temporary file, no summary; once there is room the same
    command plans the rest and keeps the first two."""
    run, topo = str(steps / "run"), str(steps / "two-shards.json")
    with tmpfs("4m") as mnt:
        # Room for run.json, two steps and half of the third step's plan file (tmpfs counts pages).
        ref = os.path.join(mnt, "ref")
        args = ["sweep", run, *MODEL_FLAGS, "--topology", topo, "--seed", "5", "--workers", "1", "--quiet"]
        r = run_command(*args, "--out", ref)
        assert r.returncode == 0, r.stderr
        size = lambda *p: os.path.getsize(os.path.join(ref, *p))  # noqa: E731
        room = pages(size("run.json")) + sum(pages(size("two-shards", f"step-{k}.plan.json")) +
                                             pages(size("two-shards", f"step-{k}.step.json")) for k in (1, 2))
        room += pages(size("two-shards", "step-3.plan.json")) // 2
        reference = files_of(ref)
        shutil.rmtree(ref)
        st = os.statvfs(mnt)
        assert st.f_bsize == 4096
        with open(os.path.join(mnt, "ballast"), "wb") as f:
            f.write(b"\0" * ((st.f_bavail - room) * 4096))
        out = os.path.join(mnt, "out")
        r = run_command(*args, "--out", out)
        plan3 = os.path.join(out, "two-shards", "step-3.plan.json")
        assert (r.returncode, r.stdout, r.stderr) == (
            3, "", f"routepack.run: error: {plan3}: No space left on device; {resume_line(out)}\n")
        kept = files_of(out)
        assert sorted(kept) == ["run.json"] + [f"two-shards/step-{k}.{x}.json" for k in (1, 2)
                                               for x in ("plan", "step")]
        assert kept["run.json"] == reference["run.json"]
        for k in (1, 2):
            name = f"two-shards/step-{k}.plan.json"
            assert without_timings(kept[name].decode()) == without_timings(reference[name].decode())
        os.unlink(os.path.join(mnt, "ballast"))
        r = run_command(*args, "--out", out)
        assert (r.returncode, r.stderr) == (0, "")
        assert r.stdout == f"sweep: 5 of 5 steps planned (5 steps x 1 chains); written to {out}\n"
        done = files_of(out)
        assert sorted(done) == sorted(reference)
        for k in (1, 2):
            for x in ("plan", "step"):
                assert done[f"two-shards/step-{k}.{x}.json"] == kept[f"two-shards/step-{k}.{x}.json"]
        for k in range(3, 6):
            name = f"two-shards/step-{k}.plan.json"
            assert without_timings(done[name].decode()) == without_timings(reference[name].decode())


def test_out_on_a_read_only_file_system(steps):
    """OUT on a read-only tmpfs: not there yet, or a run missing two steps: one line naming what could
    not be written, exit status 3, OUT unchanged; once writable, the same command plans the missing
    steps; a finished run on a read-only file system needs no write (exit status 0)."""
    run, topo = str(steps / "run"), str(steps / "two-shards.json")
    with tmpfs("4m") as mnt:
        out = os.path.join(mnt, "out")
        args = ["sweep", run, *MODEL_FLAGS, "--topology", topo, "--seed", "5", "--workers", "1", "--quiet", "--out",
                out]
        remount(mnt, "ro")
        r = run_command(*args)
        assert (r.returncode, r.stdout, r.stderr) == (
            3, "", f"routepack.run: error: {out}: Read-only file system; {resume_line(out)}\n")
        assert os.listdir(mnt) == []
        remount(mnt, "rw")
        r = run_command(*args)
        assert r.returncode == 0, r.stderr
        whole = files_of(out)
        for k in (4, 5):
            for x in ("plan", "step"):
                os.unlink(os.path.join(out, "two-shards", f"step-{k}.{x}.json"))
        before = files_of(out)
        remount(mnt, "ro")
        r = run_command(*args)
        plan4 = os.path.join(out, "two-shards", "step-4.plan.json")
        assert (r.returncode, r.stdout, r.stderr) == (
            3, "", f"routepack.run: error: {plan4}: Read-only file system; {resume_line(out)}\n")
        assert files_of(out) == before
        remount(mnt, "rw")
        r = run_command(*args)
        assert (r.returncode, r.stderr) == (0, "")
        after = files_of(out)
        assert sorted(after) == sorted(whole)
        for name, data in before.items():
            if name.startswith("two-shards/"):
                assert after[name] == data, name
        for k in (4, 5):
            name = f"two-shards/step-{k}.plan.json"
            assert without_timings(after[name].decode()) == without_timings(whole[name].decode())
        remount(mnt, "ro")
        r = run_command(*args)
        assert (r.returncode, r.stderr) == (0, "")
        assert r.stdout == f"sweep: 5 of 5 steps planned (5 steps x 1 chains); written to {out}\n"
        assert files_of(out) == after
        remount(mnt, "rw")


def test_ctrl_c_leaves_a_resumable_run(client, tmp_path):
    """Ctrl-C (SIGINT to the command's process group, as a terminal sends it) while a sweep of the real
    DeepSeek-V2-Lite run goes on, once a plan is written: one line saying so, exit status 130, every
    step it finished kept; the same command then plans the rest."""
    _, run = deepseek_run(tmp_path / "ds")
    out = str(tmp_path / "out")
    topology = "deepseek-v2-lite-ep8-dp4"
    args = [sys.executable, "-m", "routepack.run", "sweep", str(run), "--model", "deepseek-v2-lite", "--topology",
            topology, "--out", out, "--seed", "7", "--workers", "1", "--lookahead", "1", "--quiet"]
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        first = os.path.join(out, topology, "ds-000.step.json")
        while not os.path.exists(first) and p.poll() is None:
            time.sleep(0.02)
        os.killpg(p.pid, signal.SIGINT)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert (p.returncode, stdout, stderr) == (130, "", f"routepack.run: interrupted; {resume_line(out)}\n")
    kept = files_of(out)
    finished = sorted(n[len(topology) + 1:-len(".step.json")] for n in kept if n.endswith(".step.json"))
    assert "ds-000" in finished and len(finished) < 10 and "summary.json" not in kept
    assert all(not n.split("/")[-1].startswith(".tmp-") for n in kept)
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == f"sweep: 10 of 10 steps planned (10 steps x 1 chains); written to {out}\n"
    done = files_of(out)
    for w in finished:
        for x in ("plan", "step"):
            assert done[f"{topology}/{w}.{x}.json"] == kept[f"{topology}/{w}.{x}.json"]
    summary = json.loads(done["summary.json"])
    assert summary["failed"] == [] and [x["window"] for x in summary["lines"]] == [f"ds-{k:03d}" for k in range(10)]
    clean = str(tmp_path / "clean")
    run_mod.sweep(client, str(run), model="deepseek-v2-lite", topologies=[topology], out=clean, seed=7)
    for k in range(10):
        name = f"{topology}/ds-{k:03d}.plan.json"
        assert without_timings(done[name].decode()) == without_timings(open(os.path.join(clean, name)).read()), k


def test_replaced_step_is_planned_again(client, steps, tmp_path):
    """A step file replaced after a finished sweep (step-3 given step-2's batch): the rerun plans it again
    from its new content, and the steps after it, whose starting placement changed; the others stay as
    written; the new plan's fingerprint is the new content's; the run equals a clean sweep of it."""
    run = tmp_path / "run"
    shutil.copytree(steps / "run", run)
    topo = str(steps / "two-shards.json")
    out = str(tmp_path / "out")
    run_mod.sweep(client, str(run), model=MODEL, topologies=[topo], out=out, seed=5)
    before = files_of(out)
    fingerprint = lambda text: json.loads(text)["inputs"]["fingerprint"]  # noqa: E731
    old = fingerprint(before["two-shards/step-3.plan.json"])
    (run / "step-3.npz").write_bytes((run / "step-2.npz").read_bytes())
    r = run_command("sweep", str(run), *MODEL_FLAGS, "--topology", topo, "--out", out, "--seed", "5", "--workers", "1")
    assert r.returncode == 0, r.stderr
    assert r.stderr == "two-shards step-3 planned\ntwo-shards step-4 planned\ntwo-shards step-5 planned\n"
    after = files_of(out)
    for k in (1, 2):
        for x in ("plan", "step"):
            assert after[f"two-shards/step-{k}.{x}.json"] == before[f"two-shards/step-{k}.{x}.json"]
    new = fingerprint(after["two-shards/step-3.plan.json"])
    assert new != old and new == fingerprint(after["two-shards/step-2.plan.json"])
    assert json.loads(after["two-shards/step-3.plan.json"])["inputs"]["window"] == "step-3"
    clean = str(tmp_path / "clean")
    run_mod.sweep(client, str(run), model=MODEL, topologies=[topo], out=clean, seed=5)
    for k in range(1, 6):
        name = f"two-shards/step-{k}.plan.json"
        assert without_timings(after[name].decode()) == without_timings(open(os.path.join(clean, name)).read()), k
    # A rerun with nothing changed plans nothing.
    planned = []
    run_mod.sweep(client, str(run), model=MODEL, topologies=[topo], out=out, seed=5,
                  progress=lambda c, w, st: planned.append(w))
    assert planned == [] and files_of(out) == after


def test_help_and_usage_errors_as_the_cli(tmp_path):
    """`python3 -m routepack.run [sweep] --help` in the layout of `routepack CMD --help`: the
    description, the usage line, then Positionals, Options and Subcommands, one entry a line (names,
    the value's type, `...` for a list, REQUIRED), the description from column 30 (on a line of its
    own when the names reach it); usage errors as the CLI's, one line, exit status 2."""
    r = run_command("--help")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout == ("whole-run sweeps on a Dask cluster (docs/cluster-runs.md)\n"
                        "Usage: python3 -m routepack.run [OPTIONS] SUBCOMMAND\n\n"
                        "Options:\n"
                        "  -h,--help                   print this help message and exit\n\n"
                        "Subcommands:\n"
                        "  sweep                       plan every step of a run folder on every topology (one chain "
                        "each)\n\n")
    r = run_command("sweep", "--help")
    assert (r.returncode, r.stderr) == (0, "")
    lines = r.stdout.splitlines()
    assert lines[0].startswith("plans every step of a run on every topology (one chain each) into the resumable")
    assert lines[1:6] == ["Usage: python3 -m routepack.run sweep [OPTIONS] run...", "", "Positionals:",
                          "  run TEXT ... REQUIRED       the run folder (its entries are the steps), or the step "
                          "paths in order", ""]
    options = lines[lines.index("Options:") + 1:lines.index("", lines.index("Options:"))]
    assert options[0] == "  -h,--help                   print this help message and exit"
    for want in ("  --seed UINT                 random seed; default 1, in 0..2^64-1",
                 "  --max-moves INT             experts moved per step at most (all MoE layers)",
                 "  --threads UINT              planner threads per step (default 1; 0: all cores)",
                 "  --experts INT               routed experts per MoE layer (E)",
                 "  --topology TEXT ... REQUIRED",
                 "                              topology file or shipped name; repeat for independent chains",
                 "  --out TEXT REQUIRED         output folder (resumable: a rerun plans only what is missing)",
                 "  --dashboard                 the local cluster's scheduler serves its dashboard on 127.0.0.1 "
                 "(the link on stderr)"):
        assert want in options, want
    # Every entry: its names and type in the first 30 columns, the description from column 30; names
    # that reach column 30 have a line of their own, the description on the next.
    for i, line in enumerate(options):
        if line.startswith(" " * 30):
            assert len(options[i - 1]) >= 30 and not options[i - 1].startswith(" " * 30), line
        else:
            assert line.startswith("  -") and (line[29] == " " or options[i + 1].startswith(" " * 30)), line
    # The help flag's line is the CLI's own (when the CLI is built).
    exe = cli()
    if exe and os.path.exists(exe):
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        own = subprocess.run([exe, "import-run", "--help"], capture_output=True, text=True, env=env).stdout
        assert options[0] in own.splitlines()
    # A usage error from the command line (a real process): one line, status 2, nothing on stdout.
    r = run_command("sweep", str(tmp_path), "--topology", "t", "--out", str(tmp_path / "out"), "--seeed", "3")
    assert (r.returncode, r.stdout, r.stderr) == (
        2, "", "routepack.run: error: the following arguments were not expected: --seeed 3 (see python3 -m "
               "routepack.run sweep --help)\n")
    assert not os.path.exists(tmp_path / "out")


def test_stale_failure_goes_with_the_plan(client, steps, tmp_path):
    """A mistyped run folder is refused before OUT exists, so the right one then runs into the same OUT;
    a failed step's message left beside a finished plan (a client stopped between the two) goes on
    resume, and the summary lists no failure."""
    topo = str(steps / "two-shards.json")
    out = str(tmp_path / "out")
    args = [*MODEL_FLAGS, "--topology", topo, "--out", out, "--seed", "5", "--workers", "1", "--quiet"]
    r = run_command("sweep", str(steps / "rnu"), *args)
    assert (r.returncode, r.stdout) == (2, "") and not os.path.exists(out)
    assert r.stderr == (f"routepack.run: error: {steps / 'rnu'}: no such run folder or step (a run is a folder "
                        "whose entries are the steps, or the steps' paths in order)\n")
    r = run_command("sweep", str(steps / "run"), *args)
    assert (r.returncode, r.stderr) == (0, "")
    assert sorted(os.listdir(os.path.join(out, "two-shards"))) == sorted(
        f"step-{k}.{x}.json" for k in range(1, 6) for x in ("plan", "step"))
    stale = os.path.join(out, "two-shards", "step-2.failed.json")
    with open(stale, "w") as f:
        json.dump({"window": "step-2", "stage": "read", "error": "gone", "previous_from": "step-1"}, f)
    planned = []
    summary = run_mod.sweep(client, str(steps / "run"), model=MODEL, topologies=[topo], out=out, seed=5,
                            progress=lambda c, w, st: planned.append(w))
    assert planned == [] and summary["failed"] == [] and not os.path.exists(stale)


def test_out_files_mode(client, exe, steps, tmp_path):
    """OUT's files get the mode a plain open gives (0666 less the umask), as `routepack sweep --out`
    writes its plan files."""
    topo = str(steps / "two-shards.json")
    old = os.umask(0o022)
    try:
        out = str(tmp_path / "out")
        run_mod.sweep(client, [str(steps / "run" / "step-1.npz"), str(steps / "run" / "step-2.npz")], model=MODEL,
                      topologies=[topo], out=out, seed=5)
        modes = {n: os.stat(os.path.join(out, n)).st_mode & 0o777 for n in files_of(out)}
        assert len(modes) == 7 and set(modes.values()) == {0o644}, modes
        ref = library_sweep(exe, steps, topo, str(tmp_path / "ref"), "--seed", "5")
        assert os.stat(os.path.join(ref, "step-1.plan.json")).st_mode & 0o777 == 0o644
        os.umask(0o027)
        out = str(tmp_path / "out-027")
        run_mod.sweep(client, [str(steps / "run" / "step-1.npz")], model=MODEL, topologies=[topo], out=out, seed=5)
        modes = {n: os.stat(os.path.join(out, n)).st_mode & 0o777 for n in files_of(out)}
        assert len(modes) == 5 and set(modes.values()) == {0o640}, modes
    finally:
        os.umask(old)


def listening(pid):
    """The TCP sockets process `pid` listens on, as (address, port) pairs (/proc/net/tcp and tcp6)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = set()
    for table, v6 in (("tcp", False), ("tcp6", True)):
        try:
            lines = open(f"/proc/{pid}/net/{table}").read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] != "0A" or f[9] not in inodes:  # 0A: LISTEN
                continue
            host, port = f[1].split(":")
            raw = bytes.fromhex(host)
            if v6:
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                address = socket.inet_ntop(socket.AF_INET6, raw)
            else:
                address = socket.inet_ntop(socket.AF_INET, raw[::-1])
            out.add((address, int(port, 16)))
    return out


def http_status(port, path):
    import http.client

    con = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        con.request("GET", path)
        return con.getresponse().status
    finally:
        con.close()


def test_local_cluster_on_loopback_without_dashboard(steps, tmp_path):
    """The local cluster of --workers: the scheduler, the nannies and the workers listen on 127.0.0.1
    only, and the HTTP servers Dask starts serve no page (no dashboard) unless asked; --dashboard
    serves the scheduler's on 127.0.0.1 and prints its link."""
    mine = listening(os.getpid())
    cluster = run_mod.local_cluster(2)
    try:
        c = distributed.Client(cluster)
        info = c.scheduler_info()
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        assert len(info["workers"]) == 2 and all(a.startswith("tcp://127.0.0.1:") for a in info["workers"])
        pids = c.run(os.getpid)
        sockets = (listening(os.getpid()) - mine) | set().union(*(listening(p) for p in pids.values()))
        assert sockets and {a for a, _ in sockets} == {"127.0.0.1"}, sockets
        http = cluster.scheduler.http_server.port
        assert (http_status(http, "/status"), http_status(http, "/health")) == (404, 404)
        for port in c.run(lambda dask_worker: dask_worker.http_server.port).values():
            assert http_status(port, "/health") == 404
        assert list(c.run(lambda dask_worker: dask_worker._dashboard).values()) == [False, False]
        c.close()
    finally:
        cluster.close()
    cluster = run_mod.local_cluster(1, dashboard=True)
    try:
        assert cluster.dashboard_link.startswith("http://127.0.0.1:")
        http = cluster.scheduler.http_server.port
        assert (http_status(http, "/status"), http_status(http, "/health")) == (200, 200)
    finally:
        cluster.close()
    out = str(tmp_path / "out")
    r = run_command("sweep", str(steps / "run" / "step-1.npz"), *MODEL_FLAGS, "--topology",
                    str(steps / "two-shards.json"), "--out", out, "--workers", "1", "--dashboard", "--quiet")
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(r"dashboard: http://127\.0\.0\.1:\d+/status\n", r.stderr), r.stderr
