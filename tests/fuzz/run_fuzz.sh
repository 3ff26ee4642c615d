#!/bin/bash
# One fuzz harness's CTest entry: replays the seed corpus and the recorded crashes, then fuzzes for a
# bounded time from the seeds (fixed libFuzzer seed). New corpus entries and crash artifacts go under
# WORK (the build folder); the source tree is only read.
# Usage: run_fuzz.sh HARNESS CORPUS_DIR CRASHES_DIR WORK_DIR SECONDS
set -euo pipefail
harness=$1 corpus=$2 crashes=$3 work=$4 seconds=$5
[ -d "$corpus" ] && [ -n "$(ls -A "$corpus")" ] || { echo "run_fuzz: no seed corpus in $corpus" >&2; exit 2; }
rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts"
replay=("$corpus"/*)
if [ -d "$crashes" ] && [ -n "$(ls -A "$crashes")" ]; then replay+=("$crashes"/*); fi
echo "run_fuzz: replaying ${#replay[@]} inputs"
"$harness" -rss_limit_mb=2560 -timeout=20 "${replay[@]}"
echo "run_fuzz: fuzzing ${seconds} s"
if ! "$harness" -seed=1 -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2560 -max_len=65536 \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" "$corpus"; then
  echo "run_fuzz: $(basename "$harness") found a failing input: $(ls "$work"/artifacts/* 2>/dev/null | head -1)" >&2
  echo "run_fuzz: fix it, then copy the input into $crashes/ so every run replays it" >&2
  exit 1
fi
