#!/usr/bin/env bash
# Builds the folder that tests/gpu/run.sh runs from on a GPU machine (NVIDIA H100/H200 without Qt, oneTBB
# headers or package installs), from a CUDA build of this repository:
#
#   cmake --build BUILD --target rewrite_gpu_check routepack-rewrite routepack
#   bash tests/gpu/pack.sh BUILD [OUT=gpu-carry]
#
# OUT (git-ignored; 64 MiB at most so that it can travel with the working tree) receives:
#   bin/          rewrite_gpu_check, routepack-rewrite (debug info stripped)
#   lib/          every shared library they load that is not part of a base glibc system (found with ldd;
#                 e.g. libtbb.so.12); run.sh puts it on LD_LIBRARY_PATH of these binaries only
#   lib/cxx/      libstdc++.so.6 and libgcc_s.so.1 of the build machine, used by run.sh only when the GPU
#                 machine's own are older than the binaries need
#   checkpoints/  a copy of ../shared/checkpoints (five real tiny Hugging Face MoE checkpoints)
#   plans/X.json  a plan per checkpoint X, made with the routepack CLI: synthetic trace with the checkpoint's
#                 model (experts, top-k, MoE layers from its config.json), import, window, plan on 4 EP
#                 ranks. Where config.json has n_group > 1 (deepseek_v3) and the planner's placement splits
#                 a group, the placement is replaced by a group-preserving one (whole groups shifted, experts
#                 rotated inside each group; not its own inverse), which a --permute-router export requires.
#                 Every plan is checked with `routepack validate` (structure).
#   run.sh, check_logits.py  copies of the scripts, so the folder also works on its own
# Finally checks, in a clean environment, that every library the binaries load resolves inside lib/ or is
# a base system library, and that the binaries start.
set -euo pipefail

die() { echo "pack.sh: $*" >&2; exit 1; }

[[ $# -ge 1 ]] || die "usage: bash tests/gpu/pack.sh BUILD_DIR [OUT_DIR=gpu-carry]"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$(cd "$1" && pwd) || die "$1: no such build folder"
OUT=${2:-gpu-carry}
SHARED=${ROUTEPACK_SHARED_DIR:-$REPO/../shared}

CHECK=$BUILD/tests/gpu/rewrite_gpu_check
REWRITE=$BUILD/app/routepack-rewrite
CLI=$BUILD/app/routepack
for b in "$CHECK" "$REWRITE" "$CLI"; do
    [[ -x $b ]] || die "$b is missing: cmake --build $1 --target rewrite_gpu_check routepack-rewrite routepack"
done
[[ -d $SHARED/checkpoints ]] || die "$SHARED/checkpoints is missing (set ROUTEPACK_SHARED_DIR)"
for b in "$CHECK" "$REWRITE"; do
    readelf -S "$b" | grep -q '\.nv_fatbin' || die "$b has no CUDA device code: configure the build with nvcc (CMAKE_CUDA_ARCHITECTURES=90)"
done

rm -rf "$OUT"
mkdir -p "$OUT"/{bin,lib/cxx,checkpoints,plans}
OUT=$(cd "$OUT" && pwd)

# --- binaries ---------------------------------------------------------------------------------------
for b in "$CHECK" "$REWRITE"; do
    strip --strip-debug -o "$OUT/bin/$(basename "$b")" "$b"
done
cp "$REPO/tests/gpu/run.sh" "$REPO/tests/gpu/check_logits.py" "$OUT/"

# --- shared libraries -------------------------------------------------------------------------------
# Base system: the C library and the dynamic loader (the GPU machine has them; the issue reports a binary of
# this build machine ran there unchanged). The C++ runtime goes to lib/cxx as a fallback.
is_base() {
    case "$1" in
        linux-vdso.so.*|ld-linux*.so.*|libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libutil.so.*|libresolv.so.*|libmvec.so.*) return 0 ;;
    esac
    return 1
}
for b in "$OUT"/bin/*; do
    while read -r name arrow path _; do
        [[ $arrow == "=>" ]] || continue
        is_base "$name" && continue
        [[ $path == "not" ]] && die "$b: $name not found on the build machine"
        case "$name" in
            libstdc++.so.*|libgcc_s.so.*) cp -L "$path" "$OUT/lib/cxx/$name" ;;
            *) cp -L "$path" "$OUT/lib/$name" ;;
        esac
    done < <(ldd "$b")
done

# --- checkpoints ------------------------------------------------------------------------------------
cp -R "$SHARED/checkpoints/." "$OUT/checkpoints/"
chmod -R u+w "$OUT/checkpoints"

# --- plans ------------------------------------------------------------------------------------------
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/topology.json" <<'EOF'
{"ep_ranks": 4, "dp_slots": 2, "token_cap": 1000000, "attention_stages": [{"name": "attention", "alpha": 1.0, "beta": 0.0}]}
EOF
for dir in "$OUT"/checkpoints/*/; do
    name=$(basename "$dir")
    cfg=$dir/checkpoint/config.json
    [[ -f $cfg ]] || continue
    # num_hidden_layers, experts, top-k, leading dense layers (MoE layers are the trailing ones in all five).
    read -r layers experts topk dense < <(python3 - "$dir/checkpoint" <<'EOF'
import json, re, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json"))
experts = c.get("num_experts") or c.get("num_local_experts") or c.get("n_routed_experts")
names = json.load(open(d + "/model.safetensors.index.json"))["weight_map"]
moe = sorted({int(m.group(1)) for n in names for m in [re.search(r"layers\.(\d+)\.(?:mlp|block_sparse_moe)\.experts\.", n)] if m})
assert moe == list(range(moe[0], c["num_hidden_layers"])), "MoE layers are not the trailing layers: %s" % moe
print(c["num_hidden_layers"], experts, c["num_experts_per_tok"], moe[0])
EOF
)
    w=$TMP/$name
    mkdir -p "$w"
    "$CLI" synth --out "$w/trace" --layers "$layers" --dense-layers "$dense" --experts "$experts" --top-k "$topk" \
        --groups 4 --group-size 4 --prompt-mean 64 --response-mean 192 --max-length 1024 --seed 7 > /dev/null
    "$CLI" import --db "$w/lib.routepack" --name "$name" --model-config "$cfg" --quiet "$w/trace" > /dev/null
    "$CLI" window --db "$w/lib.routepack" --trace "$name" --name step --first 16 > /dev/null
    "$CLI" plan --db "$w/lib.routepack" --trace "$name" --window step --topology "$TMP/topology.json" \
        --out "$OUT/plans/$name.json" --threads 2 --seed 1 --quiet > /dev/null
    python3 - "$OUT/plans/$name.json" "$cfg" <<'EOF'
import json, sys
plan_path, cfg_path = sys.argv[1], sys.argv[2]
plan = json.load(open(plan_path))
cfg = json.load(open(cfg_path))
rows = plan["placement"]
E = len(rows[0])
fixed = [sum(1 for e, v in enumerate(r) if e == v) for r in rows]
n_group = int(cfg.get("n_group") or 1)
note = ""
if n_group > 1:
    gs = E // n_group
    splits = any(len({r[e] // gs for e in range(g * gs, (g + 1) * gs)}) > 1 for r in rows for g in range(n_group))
    if splits:
        # Group-preserving: group g goes to group (g + 1 + l) mod G, expert i of a group to place (i + 1) mod gs.
        plan["placement"] = [[((e // gs + 1 + l) % n_group) * gs + (e % gs + 1) % gs for e in range(E)]
                             for l in range(len(rows))]
        with open(plan_path, "w") as f:
            json.dump(plan, f, indent=2)
            f.write("\n")
        note = "; placement replaced by a group-preserving one (n_group %d, %d experts per group)" % (n_group, gs)
        rows = plan["placement"]
        fixed = [sum(1 for e, v in enumerate(r) if e == v) for r in rows]
for r in rows:
    assert sorted(r) == list(range(E)), "placement row is not a permutation"
    assert any(r[r[e]] != e for e in range(E)), "placement row is its own inverse"
print("  %s: %d MoE layers x %d experts, experts left in place per layer %s%s" % (
    plan_path.rsplit("/", 1)[-1], len(rows), E, fixed, note))
EOF
    "$CLI" validate "$OUT/plans/$name.json" | sed 's/^/  /'
done

# --- checks -----------------------------------------------------------------------------------------
fail=0
for b in "$OUT"/bin/*; do
    # Every library is base or resolves inside lib/ (lib/cxx counts: run.sh adds it when needed).
    while read -r line; do
        name=${line%% *}
        is_base "$name" && continue
        case "$line" in
            *"=> $OUT/lib/"*) ;;
            *) echo "pack.sh: $(basename "$b"): $line does not resolve inside $OUT/lib" >&2; fail=1 ;;
        esac
    done < <(env -i LD_LIBRARY_PATH="$OUT/lib:$OUT/lib/cxx" ldd "$b" | sed 's/^[[:space:]]*//' | grep '=>')
done
env -i LD_LIBRARY_PATH="$OUT/lib" "$OUT/bin/routepack-rewrite" --help > /dev/null || { echo "pack.sh: routepack-rewrite does not start" >&2; fail=1; }
env -i LD_LIBRARY_PATH="$OUT/lib" "$OUT/bin/rewrite_gpu_check" --help > /dev/null 2>&1 || { echo "pack.sh: rewrite_gpu_check does not start" >&2; fail=1; }
bash -n "$OUT/run.sh" || fail=1
[[ $fail == 0 ]] || die "checks failed"

size_kib=$(du -sk "$OUT" | cut -f1)
echo "pack.sh: $OUT: $((size_kib / 1024)) MiB; bin: $(cd "$OUT/bin" && echo *); lib: $(cd "$OUT/lib" && ls -p | grep -v / | tr '\n' ' ')"
(( size_kib < 60 * 1024 )) || die "$OUT is $((size_kib / 1024)) MiB: more than the 64 MiB a carried folder may hold"
echo "pack.sh: on the GPU machine, from the repository root: bash tests/gpu/run.sh $(basename "$OUT")"
