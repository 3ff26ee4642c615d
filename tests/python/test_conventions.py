"""routepack against what numpy-ecosystem users expect of a package: a clean namespace and a
complete __all__, __version__ equal to the CLI's, an exception hierarchy under routepack.Error that
keeps the built-in classes, read-only arrays where the data is the object's, short reprs,
signatures that inspect reads, numpydoc docstrings that help() renders within 100 columns, and
types (py.typed, _core.pyi) that mypy and stubtest check against the docs and the module."""

import ast
import gc
import inspect
import json
import os
import pickle
import pydoc
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import routepack
from conftest import cli, make_window

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", ".."))
PACKAGE = os.path.dirname(os.path.abspath(routepack.__file__))
TOPO = dict(ep_ranks=4, dp_slots=4, edp_shards=2, token_cap=2048, stages=[("kda", 10.0, 0.0), ("mla", 27.0, 27.0)])
PUBLIC = ["Cancelled", "Error", "InputError", "Library", "MissingFileError", "Placement", "Plan", "Topology", "Window",
          "calibrate", "counts_from_routes", "expert_loads", "identity", "load_plan", "place", "plan",
          "plan_from_json", "plan_window", "rank_max_over_mean", "read_trace"]


def topo():
    return routepack.Topology(**TOPO)


@pytest.fixture(scope="module")
def made():
    """The test window (24 samples, MoE layers 1 and 3 of 8 experts) and its plan with seed 1."""
    lengths, counts = make_window()
    return lengths, counts, routepack.plan(lengths, counts, topo(), moe_layers=[1, 3])


def error_of(call):
    with pytest.raises(routepack.Error) as e:
        call()
    return e.value


# ---------------------------------------------------------------------------------------------
# Namespace and version


def test_namespace_is_all_and_nothing_else():
    # A fresh interpreter: the tests' own imports (routepack.torch, .run) add submodules here.
    code = "import routepack; print(sorted(n for n in dir(routepack) if not n.startswith('_')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == PUBLIC
    assert sorted(routepack.__all__) == PUBLIC
    for name in routepack.__all__:
        assert getattr(routepack, name).__module__ == "routepack", name


def test_version_is_the_clis():
    header = open(os.path.join(SOURCE, "core", "util", "version.h"), encoding="utf-8").read()
    assert re.findall(r'kVersion\[\] = "([^"]*)"', header) == [routepack.__version__]
    assert re.fullmatch(r"\d+\.\d+\.\d+", routepack.__version__)
    assert routepack._core.__version__ == routepack.__version__
    exe = cli()
    if exe and os.path.exists(exe):
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, env=env, check=True).stdout
        assert out == f"routepack {routepack.__version__}\n"


# ---------------------------------------------------------------------------------------------
# Exceptions


def test_exception_hierarchy():
    E = routepack
    assert E.Error.__mro__ == (E.Error, Exception, BaseException, object)
    assert E.InputError.__mro__ == (E.InputError, E.Error, ValueError, Exception, BaseException, object)
    assert E.MissingFileError.__mro__ == (E.MissingFileError, E.InputError, E.Error, ValueError, FileNotFoundError,
                                          OSError, Exception, BaseException, object)
    # Ctrl-C is not an error to handle with the others: `except Exception` must not swallow it.
    assert E.Cancelled.__mro__ == (E.Cancelled, KeyboardInterrupt, BaseException, object)
    for cls in (E.Error, E.InputError, E.MissingFileError, E.Cancelled):
        assert cls.__module__ == "routepack" and cls.__doc__


def test_missing_files_are_file_not_found(tmp_path, made):
    missing = tmp_path / "none"
    cases = [
        (lambda: routepack.load_plan(str(missing)), f"{missing}: no such plan file"),
        (lambda: routepack.Library(missing), f"{missing}: no such library file"),
        (lambda: routepack.read_trace(missing), f"{missing}: no such file or folder"),
        (lambda: routepack.expert_loads(missing, num_experts=8, top_k=1, num_hidden_layers=2),
         f"{missing}: no such file or folder"),
        (lambda: routepack.Topology.load(str(missing)),
         f"{missing}: no such topology file or shipped topology (known: "
         + ", ".join(routepack.Topology.known_names()) + ")"),
        (lambda: routepack.plan(made[0], made[1], topo(), moe_layers=[1, 3], previous=missing),
         f"{missing}: no such placement file (plan or expert map)"),
        (lambda: routepack.read_trace(tmp_path, model=str(missing) + ".json"),
         f"{missing}.json: no such model config (config.json)"),
    ]
    for call, message in cases:
        e = error_of(call)
        assert type(e) is routepack.MissingFileError and str(e) == message
        assert isinstance(e, FileNotFoundError) and isinstance(e, ValueError) and isinstance(e, routepack.InputError)
    # Raised and caught as Python code expects it.
    with pytest.raises(FileNotFoundError):
        routepack.load_plan(missing)
    # A Dask worker's error crosses to the client pickled: the same class and text.
    e = error_of(lambda: routepack.load_plan(missing))
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is routepack.MissingFileError and str(back) == f"{missing}: no such plan file"


def test_bad_input_is_input_error(made):
    lengths, counts, p = made
    bad = counts.astype(np.int64)
    bad[3, 1, 5] = -4
    cases = [
        # An argument converted by the module (py_convert.h).
        (lambda: routepack.plan(lengths, bad, topo(), moe_layers=[1, 3]), "counts[3, 1, 5] = -4 is negative"),
        # The core's InputError, with the setting in the module's words.
        (lambda: routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], budgets={"levels": 1001}),
         "budgets['levels'] = 1001 is too large (at most 1000)"),
        (lambda: routepack.Topology(4, 3, 2, 2048), "topology: edp_shards = 2 must be >= 1 and divide dp_slots = 3"),
        # The core's std::invalid_argument.
        (lambda: p.placement.moves(routepack.identity(1, 8, 4)),
         "placement_moves: placements differ in shape (2 layers x 8 experts on 4 EP ranks vs 1 x 8 on 4)"),
        # JSON that does not parse.
        (lambda: routepack.plan_from_json("{"), "plan: malformed JSON at byte 2"),
        # The package's own checks.
        (lambda: routepack.place([[[1, True]]], 1), "loads must hold integers (got a bool inside the nested lists)"),
        (lambda: routepack.read_trace("x", model=3), "model must be a name, a config.json path, a dict or None (got int)"),
    ]
    for call, message in cases:
        e = error_of(call)
        assert type(e) is routepack.InputError and str(e) == message, (type(e), e)
        assert isinstance(e, ValueError)


def test_cancelled_is_a_keyboard_interrupt():
    with pytest.raises(KeyboardInterrupt):
        raise routepack.Cancelled("cancelled")
    try:
        raise routepack.Cancelled("cancelled")
    except Exception:  # noqa: BLE001 - what must not catch it
        pytest.fail("except Exception caught a Cancelled")
    except KeyboardInterrupt as e:
        assert str(e) == "cancelled"


def test_run_errors_are_routepack_errors(tmp_path):
    from routepack import run

    assert run.OutWriteError.__mro__[:3] == (run.OutWriteError, routepack.Error, OSError)
    e = error_of(lambda: run.run_steps([str(tmp_path / "step-1.npz")]))
    assert type(e) is routepack.MissingFileError
    assert str(e) == (f"{tmp_path / 'step-1.npz'}: no such run folder or step (a run is a folder whose entries are "
                      "the steps, or the steps' paths in order)")


# ---------------------------------------------------------------------------------------------
# Read-only arrays


def check_read_only(a, owner=None):
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="^assignment destination is read-only$"):
        a[(0,) * a.ndim] = 1
    if owner is not None:
        assert a.base is owner
        with pytest.raises(ValueError, match="^cannot set WRITEABLE flag to True of this array$"):
            a.flags.writeable = True


def test_plan_and_placement_arrays_are_read_only_views(made):
    lengths, counts, p = made
    for name in ("physical_to_logical", "logical_to_physical", "cell_of", "lengths"):
        a = getattr(p, name)
        check_read_only(a, p)
        assert np.shares_memory(a, getattr(p, name)), name  # the plan's values, not a copy per read
    assert p.physical_to_logical.tolist() == [[0, 7, 1, 6, 2, 5, 3, 4], [1, 0, 2, 7, 3, 6, 4, 5]]
    assert (p.lengths == lengths).all() and p.cell_of[:3].tolist() == [[1, 1], [1, 2], [0, 0]]
    placement = p.placement
    for name in ("physical_to_logical", "logical_to_physical"):
        check_read_only(getattr(placement, name), placement)
    # A view keeps its owner alive.
    view = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3]).physical_to_logical
    gc.collect()
    assert view.tolist() == [[0, 7, 1, 6, 2, 5, 3, 4], [1, 0, 2, 7, 3, 6, 4, 5]]
    assert type(view.base) is routepack.Plan


def test_window_arrays_are_read_only(made, tmp_path):
    lengths, counts, _ = made
    w = routepack.Window(lengths, counts, moe_layers=[1, 3])
    check_read_only(w.lengths)
    check_read_only(w.counts)
    assert (w.lengths == lengths).all() and (w.counts == counts).all()
    routes = np.zeros((2, 8, 2, 1), dtype=np.int16)
    mask = np.ones((2, 8), dtype=np.int64)
    np.savez(tmp_path / "step.npz", routed_experts=routes, attention_mask=mask)
    read = routepack.read_trace(tmp_path / "step.npz",
                                model={"experts": 4, "top_k": 1, "num_hidden_layers": 2, "moe_layers": [0, 1]})
    for r in read.routes:
        check_read_only(r)


# ---------------------------------------------------------------------------------------------
# Reprs


def test_reprs(made):
    lengths, counts, p = made
    assert repr(p) == "<routepack.Plan 24 samples, 2 rows x 4 DP slots, 2 MoE layers x 8 experts on 4 EP ranks, score 60.37>"
    assert repr(p.placement) == "<routepack.Placement 2 MoE layers x 8 experts on 4 EP ranks>"
    assert repr(routepack.identity(1, 4, 1)) == "<routepack.Placement 1 MoE layer x 4 experts on 1 EP rank>"
    assert repr(topo()) == "<routepack.Topology 4 EP ranks, 4 DP slots in 2 EDP shards, token cap 2,048>"
    assert repr(routepack.Topology(1, 1, None, 100)) == "<routepack.Topology 1 EP rank, 1 DP slot, token cap 100>"
    assert repr(routepack.Topology(8, 4, None, 8192, min_rows=3, row_multiple=2, samples_per_dp_slot=6,
                                   max_samples_per_cell=4, oversize="alone")) == (
        "<routepack.Topology 8 EP ranks, 4 DP slots, token cap 8,192, at least 3 rows, rows a multiple of 2, "
        "6 samples per DP slot, at most 4 samples per cell, oversize samples alone>")
    assert repr(routepack.Topology(4, 4, None, None, samples_per_cell=2)) == (
        "<routepack.Topology 4 EP ranks, 4 DP slots, token cap from the window, 2 samples per cell>")
    assert repr(routepack.Topology.load("deepseek-v2-lite-ep32-dp16-4nodes")) == (
        "<routepack.Topology 32 EP ranks, 16 DP slots in 4 EDP shards, token cap 4,096, 4 nodes>")
    migrating = json.loads(routepack.Topology(2, 2, None, 100).to_json())
    migrating["migration"] = {}
    assert repr(routepack.Topology.from_json(json.dumps(migrating))) == (
        "<routepack.Topology 2 EP ranks, 2 DP slots, token cap 100, migration model>")
    assert repr(routepack.Window(lengths, counts, moe_layers=[1, 3])) == (
        "<routepack.Window trace 'python': 24 samples, 10,381 tokens, 2 MoE layers x 8 experts, top-1>")
    assert repr(routepack.Window(lengths, counts, moe_layers=[1, 3], top_k=2, trace_name="syn's",
                                 window_name="w0")) == (
        "<routepack.Window trace \"syn's\", window 'w0': 24 samples, 10,381 tokens, 2 MoE layers x 8 experts, "
        "top-2>")
    cancelled = routepack.plan(lengths, counts, topo(), moe_layers=[1, 3], progress=lambda stage, fraction: False)
    assert cancelled.cancelled and repr(cancelled).endswith(", cancelled>")


def test_library_repr(tmp_path):
    exe = cli()
    if not exe or not os.path.exists(exe):
        if os.environ.get("CI"):
            pytest.fail("ROUTEPACK_CLI does not name the built routepack binary")
        pytest.skip("ROUTEPACK_CLI is not set (run through ctest)")
    db = make_library(exe, tmp_path)
    assert repr(routepack.Library(db)) == f"<routepack.Library {db!r}>"


def make_library(exe, d):
    """A library with trace "syn" (32 samples, MoE layers 1-5 of 16 experts, top-2) and window "w"
    (its first 24 samples), made by the CLI as test_cli.py makes it."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}

    def run(*args):
        subprocess.run([exe, *map(str, args)], capture_output=True, text=True, env=env, check=True)

    run("synth", "--out", d / "synth", "--groups", "4", "--group-size", "8", "--layers", "6", "--dense-layers", "1",
        "--experts", "16", "--top-k", "2", "--seed", "3")
    db = str(d / "lib.routepack")
    run("import", "--db", db, "--name", "syn", "--quiet", "--experts", "16", "--top-k", "2", "--layers", "6",
        "--moe-layers", "1-5", d / "synth")
    run("window", "--db", db, "--trace", "syn", "--name", "w", "--first", "24")
    return db


# ---------------------------------------------------------------------------------------------
# Constructors and signatures


def test_signatures_of_the_classes():
    assert str(inspect.signature(routepack.Topology)) == (
        "(ep_ranks, dp_slots, edp_shards=None, token_cap=None, *, stages=[('attention', 1.0, 0.0)], min_rows=0, "
        "experts_per_layer=0, row_multiple=1, samples_per_dp_slot=0, samples_per_cell=0, max_samples_per_cell=0, "
        "oversize='refuse', migration=None, expert_invocation_tokens=0)")
    assert str(inspect.signature(routepack.Library)) == "(path)"
    assert str(inspect.signature(routepack.Plan)) == "(text)"
    assert str(inspect.signature(routepack.Placement)) == (
        "(logical_to_physical, ep_ranks, *, moe_layers=None, num_hidden_layers=None)")
    assert str(inspect.signature(routepack.Window)) == (
        "(lengths, counts, *, moe_layers, top_k=None, num_hidden_layers=None, sample_ids=None, model_name='', "
        "trace_name='python', window_name='')")
    assert str(inspect.signature(routepack.Plan.export_map)) == "(self, /, format)"
    assert str(inspect.signature(routepack.Topology.from_json)) == "(text)"
    assert str(inspect.signature(routepack.counts_from_routes)) == (
        "(routes: 'npt.ArrayLike | Sequence[npt.ArrayLike]', num_experts: 'SupportsIndex', *, "
        "moe_layers: 'Sequence[SupportsIndex]', layer_axis: \"Literal['all', 'moe']\" = 'all', "
        "valid: 'npt.ArrayLike | None' = None) -> 'npt.NDArray[np.int32]'")
    # Today's positional calls keep their order.
    assert routepack.Topology(4, 4, 2, 2048, stages=TOPO["stages"]) == topo()
    with pytest.raises(TypeError):
        routepack.Topology(4, 4, 2, 2048, TOPO["stages"])


def test_signature_of_every_public_callable(made):
    p = made[2]
    for qualname, obj in public_callables():
        if not (isinstance(obj, type) and issubclass(obj, BaseException)):  # as the built-in exceptions: none
            inspect.signature(obj)  # raises ValueError where none is found
    assert str(inspect.signature(p.export_map)) == "(format)"  # bound: without self
    assert str(inspect.signature(p.placement.moves)) == "(previous)"


def test_constructors(made, tmp_path):
    lengths, counts, p = made
    assert routepack.Plan(p.to_json()).to_json() == p.to_json()
    made_placement = routepack.Placement(p.logical_to_physical, 4, moe_layers=[1, 3], num_hidden_layers=4)
    assert made_placement == p.placement and made_placement.num_hidden_layers == 4
    assert str(error_of(lambda: routepack.Placement([[0, 0, 1, 2]], 2))) == (
        "logical_to_physical: layer 0 slot 0 holds experts 0 and 1 (each row must be a permutation of 0..E-1)")
    assert str(error_of(lambda: routepack.Placement([[0, 5, 1, 2]], 2))) == "logical_to_physical[0, 1] = 5 exceeds 3"
    assert str(error_of(lambda: routepack.Placement([[0, 1, 2]], 2))) == (
        "topology: 3 experts are not divisible by 2 EP ranks")
    assert str(error_of(lambda: routepack.Placement([0, 1], 2))) == (
        "logical_to_physical must be 2-dimensional [L, E] with L, E >= 1 (got shape (2,))")
    assert str(error_of(lambda: routepack.Placement([[0, 1]], 1, moe_layers=[1, 2]))) == (
        "moe_layers names 2 layers for 1 rows of logical_to_physical")
    # A Window of arrays plans as plan() plans the same arrays.
    w = routepack.Window(lengths, counts, moe_layers=[1, 3])
    assert (w.trace_name, w.window_name, w.format, w.top_k, w.sample_ids[:2]) == ("python", "", "python", 1, ["0", "1"])
    a = json.loads(routepack.plan_window(w, topo()).to_json())
    b = json.loads(p.to_json())
    a.pop("timings"), b.pop("timings")
    assert a == b
    assert str(error_of(lambda: routepack.Window(lengths, counts, moe_layers=[1]))) == (
        "counts has shape (24, 2, 8); expected (N, L, E) = (24, 1, E >= 1) for 24 lengths and len(moe_layers) = 1")


# ---------------------------------------------------------------------------------------------
# Docstrings and help()


def stub_functions():
    """{name or Class.name: (has parameters, returns a value)} from _core.pyi and __init__.py."""
    out = {}
    for path in (os.path.join(PACKAGE, "_core.pyi"), os.path.join(PACKAGE, "__init__.py")):
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in tree.body:
            defs = [(node.name, node)] if isinstance(node, ast.FunctionDef) else []
            if isinstance(node, ast.ClassDef):
                defs = [(f"{node.name}.{f.name}", f) for f in node.body if isinstance(f, ast.FunctionDef)]
            for name, f in defs:
                params = [a.arg for a in f.args.posonlyargs + f.args.args + f.args.kwonlyargs
                          if a.arg not in ("self", "cls")]
                returns = f.returns is not None and ast.unparse(f.returns) != "None"
                out.setdefault(name, (bool(params), returns))
    return out


def public_callables():
    """(qualified name, object) of every public function, class and method of the package."""
    for name in routepack.__all__:
        obj = getattr(routepack, name)
        yield name, obj
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            for attr, value in vars(obj).items():
                if not attr.startswith("_") and not isinstance(value, property):
                    yield f"{name}.{attr}", getattr(obj, attr)


def test_docstrings_are_numpydoc():
    stubs = stub_functions()
    checked = 0
    for qualname, obj in public_callables():
        doc = inspect.getdoc(obj)
        assert doc and doc.split("\n")[0].strip(), f"{qualname}: no docstring"
        assert not re.match(r"\w+\(.*\)$", doc.split("\n")[0]), f"{qualname}: a signature left in the docstring"
        if isinstance(obj, type) and issubclass(obj, BaseException):
            continue
        key = f"{qualname}.__init__" if isinstance(obj, type) else qualname
        has_params, returns = stubs[key]
        assert ("\nParameters\n----------\n" in doc) == has_params, f"{qualname}: Parameters"
        if not isinstance(obj, type):
            assert ("\nReturns\n-------\n" in doc) == returns, f"{qualname}: Returns"
        checked += 1
    assert checked == 44
    for name in routepack.__all__:
        obj = getattr(routepack, name)
        if isinstance(obj, type):
            for attr, value in vars(obj).items():
                if isinstance(value, property) and not attr.startswith("_"):
                    assert value.__doc__ and ": " in value.__doc__.split("\n")[0], f"{name}.{attr}: no type"


def test_help_fits_100_columns():
    for name in routepack.__all__:
        obj = getattr(routepack, name)
        text = pydoc.render_doc(obj, renderer=pydoc.plaintext)
        names = {name} | set(dir(obj))
        for line in text.splitlines():
            body = line.lstrip(" |")
            m = re.match(r"(\w+)\(.*\)( -> .*)?$", body)
            if (m and m.group(1) in names) or body.startswith(f"class {name}("):
                continue  # a signature line, as pydoc writes it: never wrapped
            assert len(line) <= 100, f"help(routepack.{name}): {line!r} is {len(line)} columns"


# ---------------------------------------------------------------------------------------------
# Types: py.typed, the stubs, mypy and stubtest

# mypy's expected findings in typing_errors.py: one per line marked "refused" there.
REFUSED = [
    'typing_errors.py:10: error: Missing positional argument "topology" in call to "plan"  [call-arg]',
    'typing_errors.py:11: error: Too many positional arguments for "Topology"  [misc]',
    'typing_errors.py:12: error: Property "ep_ranks" defined in "Topology" is read-only  [misc]',
    'typing_errors.py:14: error: Incompatible types in assignment (expression has type "int", variable has type '
    '"str")  [assignment]',
    'typing_errors.py:15: error: Argument 1 to "export_map" of "Plan" has incompatible type "Literal[\'json\']"; '
    'expected "Literal[\'routepack\', \'sglang\', \'vllm\']"  [arg-type]',
    'typing_errors.py:16: error: Argument 1 to "read_trace" has incompatible type "int"; expected '
    '"Union[str, bytes, PathLike[str]]"  [arg-type]',
    'typing_errors.py:17: error: Tuple index out of range  [misc]',
    'typing_errors.py:18: error: Missing named argument "moe_layers" for "Window"  [call-arg]',
    'typing_errors.py:19: error: Incompatible types in assignment (expression has type "str", variable has type '
    '"int")  [assignment]',
]


def mypy(args, cwd):
    """Debian's mypy (resources/setup/debian-packages.txt), without a cache (it would be written into
    `cwd`) and without the sanitizer build's preloaded runtime (mypy loads no module of ours)."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run(["/usr/bin/python3", "-m", "mypy", "--cache-dir", os.devnull, *args], cwd=cwd,
                          capture_output=True, text=True, env=env)


def test_package_files_are_installed():
    assert os.path.isfile(os.path.join(PACKAGE, "py.typed"))
    assert os.path.isfile(os.path.join(PACKAGE, "_core.pyi"))


def test_mypy_checks_the_docs_and_the_public_calls(tmp_path):
    """The docs' examples and typing_calls.py type-check against the stubs; typing_errors.py gives
    exactly the refusals it marks (so mypy does read routepack's types, not Any)."""
    page = open(os.path.join(SOURCE, "docs", "python.md"), encoding="utf-8").read()
    examples = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if b.startswith("import ")]
    assert len(examples) == 2
    files = []
    for k, code in enumerate(examples):
        (tmp_path / f"python_md_{k}.py").write_text(code)
        files.append(f"python_md_{k}.py")
    for f in ("typing_calls.py", "typing_errors.py"):
        shutil.copy(os.path.join(HERE, f), tmp_path / f)
        files.append(f)
    # torch's own types are not ours to check, and following them costs about 80 s on two cores.
    (tmp_path / "mypy.ini").write_text("[mypy]\n[mypy-torch.*]\nfollow_imports = skip\n")
    r = mypy(["--config-file", "mypy.ini", *files], tmp_path)
    assert r.stdout.splitlines() == REFUSED + ["Found 9 errors in 1 file (checked 4 source files)"], r.stdout + r.stderr
    # The package's own Python against the stubs.
    r = mypy(["-m", "routepack"], tmp_path)
    assert r.stdout == "Success: no issues found in 1 source file\n", r.stdout + r.stderr


def test_typing_calls_run(tmp_path):
    """typing_calls.py, which mypy checks, also runs: its calls and values are the module's."""
    import typing_calls

    exe = cli()
    library = None
    if exe and os.path.exists(exe):
        (tmp_path / "lib").mkdir()
        library = make_library(exe, tmp_path / "lib")
    typing_calls.run(str(tmp_path), library)


def test_stubtest_finds_the_stubs_equal_to_the_module():
    env = dict(os.environ, MYPYPATH=os.path.dirname(PACKAGE))
    allowlist = os.path.join(HERE, "stubtest_allowlist.txt")
    r = subprocess.run(["/usr/bin/python3", "-m", "mypy.stubtest", "--allowlist", allowlist, "routepack._core"],
                       capture_output=True, text=True, env=env, cwd=HERE)
    assert r.stdout == "Success: no issues found in 1 module\n", r.stdout + r.stderr
