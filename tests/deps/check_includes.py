#!/usr/bin/env python3
"""Checks the include arrows between the project's modules by reading every #include.

Static libraries do not stop a header of a lower stage from including a higher one, so this test
does: it reads every `#include "..."` and `#include <...>` of the sources under core/, gpu/,
storage/, views/ and app/ and fails on one that runs against the arrows

    core/util <- core/model <- core/import <- core/synth
                 core/model <- core/plan
    inside core/plan: core/plan/score <- core/plan/search, core/plan/comm <- core/plan (the facade;
                      search and comm do not include each other)
    core/* <- storage, core/* <- gpu, core/* + storage + gpu <- views, everything <- app
    inside views: views/widgets <- views/jobs <- views/plan <- views/run, views/library
                  <- views/dialogs <- views (the window: studio_window*, studio_app)
    inside gpu:  gpu/io <- gpu/safetensors <- gpu/rewrite <- gpu/cpu, gpu/cuda <- gpu (gpu/rewrite.h)

or that reaches a module's private header, pulls Qt into core/, gpu/ or storage/, or exposes
nlohmann/json or oneTBB in a header (both are linked PRIVATE; only the JSON headers listed in
NLOHMANN_HEADERS carry nlohmann types), or includes the CUDA runtime outside gpu/cuda (the only
part compiled by nvcc).

Usage: check_includes.py --source DIR [--inject FILE:HEADER]
  --inject pretends FILE holds one more `#include "HEADER"` (`#include <HEADER>` when HEADER is
  written <...>): the test that proves each kind of violation is caught. Prints `check_includes: FILE:LINE: ...` per violation and exits 1; prints
  `check_includes: OK (N files, M includes)` and exits 0 otherwise.
"""
import argparse
import os
import re
import sys

PLAN_ROOMS = {"core/plan/score", "core/plan/search", "core/plan/comm"}
CORE = {"core/util", "core/model", "core/import", "core/synth", "core/plan"} | PLAN_ROOMS
VIEWS_PARTS = ["views/widgets", "views/jobs", "views/plan", "views/run", "views/library", "views/dialogs"]
GPU_PARTS = {"gpu/io", "gpu/safetensors", "gpu/rewrite", "gpu/cpu", "gpu/cuda"}
# Which project modules each module may include (its own always allowed). gpu/rewrite.h and
# gpu/rewrite.cpp (module "gpu") are the umbrella over gpu's parts.
ALLOWED = {
    "core/util": set(),
    "core/model": {"core/util"},
    "core/import": {"core/util", "core/model"},
    "core/synth": {"core/util", "core/model", "core/import"},
    "core/plan/score": {"core/util", "core/model"},
    "core/plan/search": {"core/util", "core/model", "core/plan/score"},
    "core/plan/comm": {"core/util", "core/model", "core/plan/score"},
    "core/plan": {"core/util", "core/model"} | PLAN_ROOMS,
    "storage": CORE,
    "gpu/io": {"core/util"},
    "gpu/safetensors": CORE | {"gpu/io"},
    "gpu/rewrite": CORE | {"gpu/io", "gpu/safetensors"},
    "gpu/cpu": CORE | {"gpu/io", "gpu/safetensors", "gpu/rewrite"},
    "gpu/cuda": CORE | {"gpu/io", "gpu/safetensors", "gpu/rewrite"},
    "gpu": CORE | GPU_PARTS,
    "views/widgets": CORE | {"storage", "gpu"} | GPU_PARTS,
    "views/jobs": CORE | {"storage", "gpu", "views/widgets"} | GPU_PARTS,
    "views/plan": CORE | {"storage", "gpu", "views/widgets", "views/jobs"} | GPU_PARTS,
    "views/run": CORE | {"storage", "gpu", "views/widgets", "views/jobs", "views/plan"} | GPU_PARTS,
    "views/library": CORE | {"storage", "gpu", "views/widgets", "views/jobs", "views/plan"} | GPU_PARTS,
    "views/dialogs": CORE | {"storage", "gpu"} | set(VIEWS_PARTS[:5]) | GPU_PARTS,
    "views": CORE | {"storage", "gpu"} | set(VIEWS_PARTS) | GPU_PARTS,
    "app": CORE | {"storage", "gpu", "views"} | set(VIEWS_PARTS) | GPU_PARTS,
}
# Headers private to one module: nothing outside it (tests aside) includes them.
PRIVATE = {
    "core/import/import_detail.h": "core/import",
    "core/import/import_common.h": "core/import",
    "core/plan/score/score_kernels.h": "core/plan/score",
    "storage/library_internal.h": "storage",
    "gpu/cuda/cuda_gather.h": "gpu/cuda",
}
# Headers that may expose nlohmann types (they are included only by targets linking nlohmann_json).
NLOHMANN_HEADERS = {"core/util/json.h", "core/util/json_field.h", "core/plan/score/metrics_json.h",
                    "core/import/import_detail.h"}
QT_FREE = ("core/", "gpu/", "storage/")
# The CUDA runtime's headers: only gpu/cuda (the part nvcc compiles) includes them.
CUDA_HEADER = re.compile(r"^(cuda|cuda_runtime|cuda_runtime_api|cuda_fp16|cuda_bf16|device_launch_parameters)(\.h)?$")
SOURCE_EXT = (".h", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def module_of(path):
    """The module a repository-relative path belongs to, or None (tests, resources, docs)."""
    parts = path.split("/")
    if parts[:2] == ["core", "plan"] and len(parts) >= 4:
        return "/".join(parts[:3])
    if parts[0] == "core" and len(parts) >= 3:
        return "core/" + parts[1]
    if parts[0] in ("gpu", "views") and len(parts) >= 3:
        return parts[0] + "/" + parts[1]
    if parts[0] in ("gpu", "storage", "views", "app"):
        return parts[0]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--inject", action="append", default=[])
    args = ap.parse_args()
    root = os.path.abspath(args.source)
    injected = {}
    for item in args.inject:
        f, _, h = item.partition(":")
        injected.setdefault(f, []).append(h)

    files = []
    for top in ("core", "gpu", "storage", "views", "app"):
        for d, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith(SOURCE_EXT):
                    files.append(os.path.relpath(os.path.join(d, n), root))
    files.sort()
    errors = []
    count = 0
    for rel in files:
        mod = module_of(rel)
        if mod is None:
            errors.append(f"{rel}: not inside a module folder (core/<stage>/, gpu/, storage/, views/, app/)")
            continue
        if mod not in ALLOWED:
            errors.append(f"{rel}: {mod} is not a known module (add it to ALLOWED in this script)")
            continue
        with open(os.path.join(root, rel), encoding="utf-8") as fh:
            lines = [(i + 1, l) for i, l in enumerate(fh)]
        lines += [(0, f"#include {h}\n" if h.startswith("<") else f'#include "{h}"\n') for h in injected.get(rel, [])]
        is_header = rel.endswith((".h", ".cuh"))
        for lineno, line in lines:
            m = INCLUDE.match(line)
            if not m:
                continue
            count += 1
            where = f"{rel}:{lineno if lineno else 'injected'}"
            kind, target = m.groups()
            if kind == "<":
                if rel.startswith(QT_FREE) and (target.startswith("Q") or target.startswith("Qt")):
                    errors.append(f"{where}: includes Qt <{target}>; {mod} is Qt-free")
                if is_header and target.startswith("nlohmann/") and rel not in NLOHMANN_HEADERS:
                    errors.append(f"{where}: header exposes <{target}>; nlohmann_json is linked PRIVATE "
                                  "(include it in the .cpp, or core/util/json.h there)")
                if CUDA_HEADER.match(target) and mod != "gpu/cuda":
                    errors.append(f"{where}: includes <{target}>; only gpu/cuda includes the CUDA runtime")
                if is_header and target.startswith(("tbb/", "oneapi/tbb")):
                    errors.append(f"{where}: header exposes <{target}>; oneTBB is linked PRIVATE")
                continue
            if target.startswith("."):
                errors.append(f'{where}: relative include "{target}"; name it from the repository root')
                continue
            tmod = module_of(target)
            if tmod is None:
                continue  # generated headers (ui_*.h, moc), CLI11 and the like
            if not os.path.isfile(os.path.join(root, target)):
                errors.append(f'{where}: includes "{target}", which does not exist')
                continue
            if is_header and target in NLOHMANN_HEADERS and rel not in NLOHMANN_HEADERS:
                errors.append(f'{where}: header includes "{target}"; keep nlohmann types out of headers')
            owner = PRIVATE.get(target)
            if owner and owner != mod:
                errors.append(f'{where}: includes "{target}", private to {owner}')
                continue
            if tmod != mod and tmod not in ALLOWED[mod]:
                errors.append(f'{where}: {mod} includes "{target}" of {tmod}: the arrow runs the other way '
                              f"({mod} may include {', '.join(sorted(ALLOWED[mod])) or 'nothing else'})")
    for e in errors:
        print("check_includes: " + e)
    if errors:
        print(f"check_includes: FAILED ({len(errors)} violations)")
        return 1
    print(f"check_includes: OK ({len(files)} files, {count} includes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
