"""Running a test's ranks as real processes (spawned, so each starts a fresh interpreter) and
collecting what each wrote; no torch import at module level, the ranks do their own."""

import multiprocessing
import os
import pickle
import socket
import traceback


def require_gloo(module: bool = False) -> None:
    """Skips the calling test (``module``: the calling test module, called at its top level) unless
    torch runs here (the default pass only: Debian's torch under a preloaded sanitizer runtime is not
    expected to work) with torch.distributed's gloo backend."""
    import pytest

    if os.environ.get("ROUTEPACK_TORCH_TESTS") == "off":
        pytest.skip("torch tests run in the default pass only (as tests/python/test_torch_distributed.py)",
                    allow_module_level=module)
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available", allow_module_level=module)


def free_port() -> int:
    """A free TCP port on the loopback interface, for a gloo rendezvous (``tcp://127.0.0.1:PORT``)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_rank(target, rank, port, out):
    try:
        status = ("ok", *target(rank, port))
    except BaseException as e:
        status = ("error", f"{type(e).__name__}: {e}", traceback.format_exc())
    with open(os.path.join(out, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(status, f)
    os._exit(0)


def run_ranks(target, world_size, tmp_path, timeout=120):
    """Calls ``target(rank, port)`` (a module-level function returning a tuple) in ``world_size``
    spawned processes sharing one free port; returns, per rank, ``("ok", *result)`` or ``("error",
    text, traceback)``. A rank still alive after ``timeout`` seconds is killed (its entry then fails to
    load)."""
    ctx = multiprocessing.get_context("spawn")
    port = free_port()
    procs = [ctx.Process(target=_run_rank, args=(target, r, port, str(tmp_path))) for r in range(world_size)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout)
        if p.is_alive():
            p.kill()
            p.join()
    return [pickle.loads((tmp_path / f"rank{r}.pkl").read_bytes()) for r in range(world_size)]
