#!/bin/bash
# One fuzz harness's CTest entry: replays the seed corpus and the recorded crashes, then fuzzes RUNS
# inputs from the seeds with a fixed libFuzzer seed, so a run is the same run every time (MAX_SECONDS
# only stops a run that is far slower than expected). New corpus entries and crash artifacts go
# under WORK (the build folder); the source tree is only read.
# Usage: run_fuzz.sh HARNESS CORPUS_DIR CRASHES_DIR WORK_DIR RUNS MAX_SECONDS
set -euo pipefail
harness=$1 corpus=$2 crashes=$3 work=$4 runs=$5 seconds=$6
[ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ] || { echo "run_fuzz: no seed corpus in $corpus" >&2; exit 2; }
rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
replay=("$corpus"/*)
if [ -d "$crashes" ] && [ -n "$(ls -A "$crashes")" ]; then replay+=("$crashes"/*); fi
echo "run_fuzz: replaying ${#replay[@]} inputs"
"$harness" -rss_limit_mb=2560 -timeout=20 "${replay[@]}"
echo "run_fuzz: fuzzing ${runs} inputs (at most ${seconds} s)"
if ! "$harness" -seed=1 -runs="$runs" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 -max_len=65536 \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$corpus"; then
  echo "run_fuzz: $(basename "$harness") found a failing input: $(ls "$work"/artifacts/* 2>/dev/null | head -1)" >&2
  echo "run_fuzz: fix it, then copy the input into $crashes/ so every run replays it" >&2
  exit 1
fi
