#!/usr/bin/env bash
# The one prepared script for a GPU machine (NVIDIA H100/H200; no Qt, no oneTBB headers, no package
# installs; python3 with torch and transformers). It runs binaries built on the Debian 12 build machine
# (CMAKE_CUDA_ARCHITECTURES=90) from the folder tests/gpu/pack.sh makes (git-ignored `gpu-carry/`):
#
#   build machine:  cmake --build build-cuda --target rewrite_gpu_check routepack-rewrite routepack
#                   bash tests/gpu/pack.sh build-cuda gpu-carry
#   GPU machine:    bash tests/gpu/run.sh [gpu-carry]          (from the repository root)
#
# Steps (about 3 minutes on an H200 with 16 cores; every step has its own time limit, 6 minutes in all):
#   1. nvidia-smi -L; the carried libraries resolve and the binaries start.
#   2. rewrite_gpu_check: CUDA executor edge cases, CPU/CUDA byte equality on the five real checkpoints and
#      on a multi-GB synthetic checkpoint (GB, default 4), apply+inverse round trip on CUDA, throughput, and
#      device bandwidth (pinned H2D/D2H, D2D copy, gather kernel).
#   3. Each checkpoint in checkpoints/ with its plan in plans/: routepack-rewrite --permute-router --device
#      cuda --verify, the same on the CPU (outputs compared), an apply without --permute-router, and
#      --inverse of both back to the source (cmp of every file).
#   4. check_logits.py: the --permute-router exports reproduce reference.safetensors' logits (<= 1e-5);
#      the exports without router permutation are shown for information (they should differ).
# Prints PASS / FAIL lines and a final summary; exits 1 when anything failed. When $OUT is set (device
# runner), the whole log is also written to $OUT/gpu-run.log. Environment: GB (synthetic checkpoint size,
# default 4), ROUTEPACK_GPU_WORK (scratch folder on a disk with 4 x GB free; default CARRY/work, removed
# at the end). Dry run on a machine without a GPU (checks the script, not the GPU):
# ROUTEPACK_GPU_DRY_RUN=1 runs rewrite_gpu_check --emulate and routepack-rewrite --device cpu.
set -uo pipefail

T0=$(date +%s)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CARRY=$(cd "${1:-gpu-carry}" 2>/dev/null && pwd) || { echo "FAIL run.sh: carry folder '${1:-gpu-carry}' is missing (make it with tests/gpu/pack.sh)"; exit 1; }
GB=${GB:-4}
WORK=${ROUTEPACK_GPU_WORK:-$CARRY/work}
BIN=$CARRY/bin
DEVICE=cuda
EMULATE=()
if [[ ${ROUTEPACK_GPU_DRY_RUN:-0} == 1 ]]; then
    DEVICE=cpu
    EMULATE=(--emulate)
    echo "DRY RUN: rewrite_gpu_check --emulate, routepack-rewrite --device cpu (no GPU used; results say nothing about CUDA)"
fi
LOGITS_PY=$HERE/check_logits.py
[[ -f $LOGITS_PY ]] || LOGITS_PY=$CARRY/check_logits.py

if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
    exec > >(tee "$OUT/gpu-run.log") 2>&1
fi

PASSES=0
FAILS=0
FAILED=()
pass() { echo "PASS $*"; PASSES=$((PASSES + 1)); }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); FAILED+=("$*"); }
elapsed() { echo $(($(date +%s) - T0)); }
section() { echo; echo "== $* (t=$(elapsed) s)"; }

# Our binaries get the carried libraries; python does not (torch brings its own C++ runtime).
LIBPATH=$CARRY/lib
rp() { env LD_LIBRARY_PATH="$LIBPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }

section "machine"
echo "host $(hostname), $(nproc) cores, $(free -g | awk '/^Mem:/ {print $2 " GiB memory"}'), $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
if command -v nvidia-smi > /dev/null; then
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
else
    echo "nvidia-smi: not found"
fi
echo "carry $CARRY, work $WORK, synthetic checkpoint ${GB} GB"

section "libraries"
if ! rp "$BIN/routepack-rewrite" --help > /dev/null 2>"$CARRY/.start.err"; then
    if grep -q 'GLIBCXX\|CXXABI\|GCC_' "$CARRY/.start.err"; then
        echo "the machine's C++ runtime is older than the build machine's: using lib/cxx"
        LIBPATH=$CARRY/lib:$CARRY/lib/cxx
    fi
fi
missing=$(for b in "$BIN"/*; do rp ldd "$b" | grep 'not found'; done | sort -u)
if [[ -z $missing ]] && rp "$BIN/routepack-rewrite" --help > /dev/null 2>&1 && rp "$BIN/rewrite_gpu_check" --help > /dev/null 2>&1; then
    pass "carried binaries start (LD_LIBRARY_PATH=$LIBPATH)"
else
    fail "carried binaries do not start: ${missing:-$(cat "$CARRY/.start.err")}"
fi
rm -f "$CARRY/.start.err"

rm -rf "$WORK"
mkdir -p "$WORK"
df -h "$WORK" | tail -1 | awk '{print "scratch disk: " $4 " free"}'

section "rewrite_gpu_check (CUDA executor tests, multi-GB CPU/CUDA equality, bandwidth)"
CHECK_LOG=$WORK/check.log
timeout 200 env LD_LIBRARY_PATH="$LIBPATH" "$BIN/rewrite_gpu_check" --gb "$GB" --checkpoints "$CARRY/checkpoints" \
    --work "$WORK/check" --bandwidth-mb 1024 "${EMULATE[@]}" 2>&1 | tee "$CHECK_LOG"
rc=${PIPESTATUS[0]}
CHECK_SUMMARY=$(grep '^SUMMARY' "$CHECK_LOG" | tail -1)
if grep -q '^SKIP' "$CHECK_LOG"; then
    fail "rewrite_gpu_check skipped: no CUDA device"
elif [[ $rc == 0 ]]; then
    pass "rewrite_gpu_check ($(grep -c '^PASS' "$CHECK_LOG") checks)"
elif [[ $rc == 124 ]]; then
    fail "rewrite_gpu_check: timed out after 200 s"
else
    fail "rewrite_gpu_check: exit $rc ($(grep -c '^FAIL' "$CHECK_LOG") failed checks)"
fi
rm -rf "$WORK/check"

section "routepack-rewrite on the real checkpoints (--device cuda --verify; apply, --permute-router, --inverse)"
# Same bytes as the source, file by file (the output's extra routepack-rewrite.json sidecar aside).
same_as() {
    local a=$1 b=$2 f rel bad=0
    while IFS= read -r -d '' f; do
        rel=${f#"$a"/}
        cmp -s "$f" "$b/$rel" || { echo "  differs: $rel"; bad=1; }
    done < <(find "$a" -type f -print0)
    return $bad
}
rewrite() {  # rewrite NAME LOG ARGS...: runs routepack-rewrite with a time limit, keeps its output in LOG
    local name=$1 log=$2
    shift 2
    if timeout 60 env LD_LIBRARY_PATH="$LIBPATH" "$BIN/routepack-rewrite" --quiet "$@" > "$log" 2>&1; then
        echo "  $name: $(grep -E '^wrote' "$log")"
        return 0
    fi
    fail "$name: routepack-rewrite: $(tail -2 "$log" | tr '\n' ' ')"
    return 1
}
for dir in "$CARRY"/checkpoints/*/; do
    X=$(basename "$dir")
    SRC=$dir/checkpoint
    PLAN=$CARRY/plans/$X.json
    [[ -d $SRC ]] || continue
    if [[ ! -f $PLAN ]]; then
        fail "$X: no plan $PLAN (pack.sh makes it)"
        continue
    fi
    R=$WORK/$X-router
    A=$WORK/$X-apply
    if rewrite "$X --permute-router ($DEVICE)" "$WORK/$X-router.log" --plan "$PLAN" --input "$SRC" --output "$R" --permute-router --device "$DEVICE" --verify; then
        if grep -q '^verified' "$WORK/$X-router.log" && grep -q "on $DEVICE" "$WORK/$X-router.log"; then
            pass "$X --permute-router on $DEVICE, verified"
        else
            fail "$X --permute-router: not verified or not on CUDA: $(grep '^wrote' "$WORK/$X-router.log")"
        fi
        if rewrite "$X --permute-router (cpu)" "$WORK/$X-router-cpu.log" --plan "$PLAN" --input "$SRC" --output "$R-cpu" --permute-router --device cpu; then
            if same_as "$R-cpu" "$R"; then pass "$X --permute-router: $DEVICE output == cpu output"; else fail "$X --permute-router: $DEVICE output differs from cpu output"; fi
            rm -rf "$R-cpu"
        fi
        if rewrite "$X --permute-router --inverse ($DEVICE)" "$WORK/$X-router-back.log" --plan "$PLAN" --input "$R" --output "$R-back" --permute-router --inverse --device "$DEVICE" --verify; then
            if same_as "$SRC" "$R-back"; then pass "$X --permute-router then --inverse == source (cmp every file)"; else fail "$X --permute-router then --inverse differs from the source"; fi
            rm -rf "$R-back"
        fi
    fi
    if rewrite "$X apply ($DEVICE)" "$WORK/$X-apply.log" --plan "$PLAN" --input "$SRC" --output "$A" --device "$DEVICE" --verify; then
        if rewrite "$X apply --inverse ($DEVICE)" "$WORK/$X-apply-back.log" --plan "$PLAN" --input "$A" --output "$A-back" --inverse --device "$DEVICE" --verify; then
            if same_as "$SRC" "$A-back"; then pass "$X apply then --inverse == source (cmp every file)"; else fail "$X apply then --inverse differs from the source"; fi
            rm -rf "$A-back"
        fi
    fi
done

section "logits with transformers (check_logits.py)"
LOGITS_LOG=$WORK/logits.log
timeout 150 env HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 python3 "$LOGITS_PY" --checkpoints "$CARRY/checkpoints" --work "$WORK" 2>&1 | tee "$LOGITS_LOG"
rc=${PIPESTATUS[0]}
n_pass=$(grep -c '^PASS' "$LOGITS_LOG")
n_fail=$(grep -c '^FAIL' "$LOGITS_LOG")
if [[ $rc == 0 && $n_fail == 0 && $n_pass -gt 0 ]]; then
    pass "check_logits.py ($n_pass checks)"
elif [[ $rc == 124 ]]; then
    fail "check_logits.py: timed out after 150 s"
else
    fail "check_logits.py: exit $rc, $n_fail failed checks"
fi

section "summary"
grep -hE '^  (H2D|D2H|D2D|gather|CUDA rewrite|CPU executor|CUDA executor|device|synthetic)' "$CHECK_LOG" 2>/dev/null
for f in "$WORK"/*-router.log; do
    [[ -f $f ]] && echo "  $(basename "$f" .log): $(grep '^wrote' "$f")"
done
[[ -n $CHECK_SUMMARY ]] && echo "$CHECK_SUMMARY"
grep -h '^LOGITS' "$LOGITS_LOG" 2>/dev/null
[[ ${KEEP_WORK:-0} == 1 ]] || rm -rf "$WORK"
echo "run.sh: $PASSES passed, $FAILS failed in $(elapsed) s"
for f in "${FAILED[@]}"; do echo "  failed: $f"; done
if [[ $FAILS == 0 ]]; then echo "RESULT PASS"; exit 0; fi
echo "RESULT FAIL"
exit 1
