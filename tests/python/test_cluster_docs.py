"""docs/cluster-runs.md as written: its shell commands (a dask-scheduler and a dask-worker on
127.0.0.1, the sweep against them, the local --workers sweep, routepack import-run) and its Python blocks (the Client
sweep, and the Ray block with a stand-in `ray` module), with the page's paths in a temporary folder.
The plans equal `routepack sweep`'s, timings aside."""

import json
import os
import re
import socket
import subprocess
import sys
import time
import types

import numpy as np
import pytest

from conftest import cli

# The sanitizer pass preloads the ASan runtime into the interpreter; Dask's worker processes and the
# dask-scheduler / dask-worker commands would inherit it and abort, so the pass skips these tests.
if "asan" in os.environ.get("LD_PRELOAD", ""):
    pytest.skip("Dask worker processes under the sanitizer pass's preloaded ASan runtime", allow_module_level=True)
import distributed  # python3-distributed: missing is a failure, not a skip

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "cluster-runs.md")


def blocks(kind):
    text = open(DOC, encoding="utf-8").read()
    return re.findall(r"```" + kind + r"\n(.*?)```", text, re.S)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_deepseek_steps(folder, steps=3, batch=16, seq=48, seed=1):
    """verl batches of DeepSeek-V2-Lite's shape: routed_experts [B, S, 27 layers, top-6] over 64 experts."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder)
    for s in range(steps):
        lengths = rng.integers(seq // 3, seq, size=batch)
        mask = np.zeros((batch, seq), dtype=np.int64)
        routes = np.zeros((batch, seq, 27, 6), dtype=np.int16)
        for b in range(batch):
            mask[b, seq - lengths[b]:] = 1
            hot = rng.permutation(64)
            for t in range(seq - lengths[b], seq):
                routes[b, t] = np.stack([hot[rng.choice(24, size=6, replace=False)] for _ in range(27)])
        np.savez(os.path.join(folder, f"step-{s + 1}.npz"), routed_experts=routes, attention_mask=mask)


@pytest.fixture
def page(tmp_path):
    """The page's substitutions: scheduler-node:8786 -> 127.0.0.1:<free port>, /shared -> tmp_path,
    /opt/routepack/python -> the built module's PYTHONPATH, python3 -> this interpreter."""
    write_deepseek_steps(str(tmp_path / "run"))
    port = free_port()
    subs = [("scheduler-node:8786", f"127.0.0.1:{port}"), ("--port 8786", f"--port {port}"),
            ("/shared", str(tmp_path)), ("/opt/routepack/python", os.environ.get("PYTHONPATH", "")),
            (" python3 -m", f" {sys.executable} -m")]

    def sub(text):
        for a, b in subs:
            text = text.replace(a, b)
        return text

    return tmp_path, sub


def plans_equal_library_sweep(tmp_path, out_folder, topology):
    exe = cli()
    if not exe or not os.path.exists(exe):
        pytest.skip("ROUTEPACK_CLI is not set (run through ctest)")
    import routepack
    import routepack.run as run_mod

    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    db = str(tmp_path / "lib.routepack")
    if not os.path.exists(db):
        subprocess.run([exe, "import", "--db", db, "--name", "run", "--quiet", "--model", "deepseek-v2-lite",
                        str(tmp_path / "run")], check=True, env=env, capture_output=True)
        for name, path in run_mod.run_steps(str(tmp_path / "run")):
            ids = tmp_path / f"{name}.ids"
            ids.write_text("\n".join(routepack.read_trace(path, model="deepseek-v2-lite").sample_ids) + "\n")
            subprocess.run([exe, "window", "--db", db, "--trace", "run", "--name", name, "--ids", str(ids)],
                           check=True, env=env, capture_output=True)
    ref = str(tmp_path / f"ref-{topology}")
    if not os.path.exists(ref):
        subprocess.run([exe, "sweep", "--db", db, "--trace", "run", "--topology", topology, "--out", ref, "--seed",
                        "7", "--threads", "1", "--quiet"], check=True, env=env, capture_output=True)
    for k in range(1, 4):
        a = json.loads(open(os.path.join(out_folder(k))).read())
        b = json.loads(open(os.path.join(ref, f"step-{k}.plan.json")).read())
        a.pop("timings")
        b.pop("timings")
        assert a == b


def test_shell_commands_as_written(page):
    tmp_path, sub = page
    sh = [line for b in blocks("sh") for line in b.splitlines() if line.strip()]
    assert len(sh) == 5
    exe = cli()
    if not exe or not os.path.exists(exe):
        pytest.skip("ROUTEPACK_CLI is not set (run through ctest)")
    daemons = []
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    try:
        for line in sh[:2]:
            cmd = sub(line).split()
            assert cmd[0] in ("dask-scheduler", "env")
            daemons.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
            time.sleep(1.0)
        port = sub("scheduler-node:8786").split(":")[1]
        client = distributed.Client(f"tcp://127.0.0.1:{port}", timeout=30)
        client.wait_for_workers(2, timeout=60)
        client.close()
        for line in sh[2:4]:
            r = subprocess.run(sub(line).split(), capture_output=True, text=True, env=env, timeout=300)
            assert r.returncode == 0, r.stderr
            assert r.stdout.startswith("sweep: ")
    finally:
        for p in daemons:
            p.terminate()
        for p in daemons:
            p.wait(timeout=30)
    summary = json.load(open(tmp_path / "out" / "summary.json"))
    assert summary["topologies"] == ["deepseek-v2-lite-ep8-dp4", "deepseek-v2-lite-ep16-dp8"]
    assert summary["failed"] == [] and len(summary["lines"]) == 6
    # Back to the studio: the import-run line, with the built CLI.
    assert sh[4].startswith("routepack import-run ")
    r = subprocess.run([exe] + sub(sh[4]).split()[1:], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (f"imported cluster run 1 'run' from {tmp_path / 'out'} into {tmp_path / 'runs.routepack'}: "
                        "3 steps x 2 chains, 6 planned, 0 failed\n")
    assert sub(" python3 -m").strip().startswith(sys.executable)
    plans_equal_library_sweep(tmp_path, lambda k: tmp_path / "out" / "deepseek-v2-lite-ep16-dp8" /
                              f"step-{k}.plan.json", "deepseek-v2-lite-ep16-dp8")
    plans_equal_library_sweep(tmp_path, lambda k: tmp_path / "out-local" / "deepseek-v2-lite-ep8-dp4" /
                              f"step-{k}.plan.json", "deepseek-v2-lite-ep8-dp4")


def test_python_blocks_as_written(page, monkeypatch, capsys):
    tmp_path, sub = page
    client_block, ray_block = blocks("python")
    import routepack.run

    cluster = routepack.run.local_cluster(2)
    try:
        code = client_block.replace('Client("tcp://scheduler-node:8786")', "Client(cluster)")
        exec(compile(sub(code), "cluster-runs.md", "exec"), {"cluster": cluster})
    finally:
        cluster.close()
    assert capsys.readouterr().out == "3 []\n"
    # The Ray block with a stand-in: ray.remote(f).remote(...) runs f here, ray.get returns its value.
    ray = types.ModuleType("ray")
    ray.remote = lambda f: types.SimpleNamespace(remote=f)
    ray.get = lambda v: v
    monkeypatch.setitem(sys.modules, "ray", ray)
    exec(compile(sub(ray_block), "cluster-runs.md", "exec"), {})
    plans_equal_library_sweep(tmp_path, lambda k: tmp_path / f"out-ray-step-{k}.plan.json",
                              "deepseek-v2-lite-ep8-dp4")
    plans_equal_library_sweep(tmp_path, lambda k: tmp_path / "out-python" / "deepseek-v2-lite-ep8-dp4" /
                              f"step-{k}.plan.json", "deepseek-v2-lite-ep8-dp4")
