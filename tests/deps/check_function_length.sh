#!/bin/bash
# Checks that no function of core, app, gpu, storage and views (C++ and CUDA: *.h *.cpp *.cu *.cuh) is
# longer than 150 lines, measured as universal-ctags measures a function definition: the line of
# its closing brace minus the line of its name (`end - start`; a one-line function is 0). Member
# functions defined in a class body and lambdas' enclosing functions count like any other; a
# lambda does not shorten the function it is written in.
#
# Prints "check_function_length: FILE:LINE: NAME is N lines long (end - start), more than 150"
# per function, then "check_function_length: FAILED (K functions over 150 lines)" and exits 1;
# prints "check_function_length: OK (N functions in M files, none over 150 lines)" otherwise.
# To fix: split the function into named steps.
#
# Usage: check_function_length.sh --source DIR [--probe]
#   --probe also scans generated probe files (probe/probe.cpp, probe/probe.cu, probe/probe.h) holding
#   functions of exactly 150 lines (accepted) and 151 lines (a free function, a CUDA kernel and a
#   member function defined in its class: each caught): the test that proves the check catches
#   the first line over the limit and not the limit itself.
set -uo pipefail
src= probe=0 limit=150
while [ $# -gt 0 ]; do
  case $1 in
    --source) src=$2; shift 2 ;;
    --probe) probe=1; shift ;;
    *) echo "check_function_length: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] || { echo "check_function_length: --source DIR is required" >&2; exit 2; }
# Debian's universal-ctags installs ctags-universal (and ctags through update-alternatives, which
# may name Exuberant Ctags instead: it has no end lines).
ctags=
for c in ctags-universal ctags; do
  if command -v "$c" >/dev/null && "$c" --version 2>/dev/null | grep -q '^Universal Ctags'; then ctags=$c; break; fi
done
if [ -z "$ctags" ]; then
  echo "check_function_length: universal-ctags is not installed (resources/setup/debian-packages.txt lists it)" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One line per function definition: end<TAB>start<TAB>file<TAB>name (a name may hold a space:
# "operator ==").
scan() {
  "$ctags" -x --sort=no --languages=C++ --langmap=C++:+.cu.cuh --kinds-c++=f \
    --_xformat=$'%{end}\t%{line}\t%F\t%N' -R "$@"
}

# A function definition HEAD { ... } whose closing brace is LINES lines below HEAD (LINES >= 3).
probe_function() {
  local head=$1 lines=$2 i
  echo "$head {"
  echo "    int sum = 0;"
  for ((i = 3; i < lines; i++)); do echo "    sum += $i;"; done
  echo "    return sum;"
  echo "}"
}

(cd "$src" && scan core app gpu storage views) > "$tmp/tags" || { echo "check_function_length: ctags failed" >&2; exit 2; }
if [ "$probe" = 1 ]; then
  mkdir -p "$tmp/probe"
  {
    probe_function "int probe_150_lines()" 150
    echo
    probe_function "int probe_151_lines()" 151
  } > "$tmp/probe/probe.cpp"
  {
    echo "#include <cuda_runtime.h>"
    echo
    probe_function "__global__ void probe_kernel_151_lines(int* out)" 151 | sed 's/return sum;/*out = sum;/'
  } > "$tmp/probe/probe.cu"
  {
    echo "struct Probe {"
    probe_function "    int member_151_lines() const" 151 | sed '2,$s/^/    /'
    echo "};"
  } > "$tmp/probe/probe.h"
  (cd "$tmp" && scan probe) >> "$tmp/tags" || { echo "check_function_length: ctags failed" >&2; exit 2; }
fi

sort -t$'\t' -k3,3 -k2,2n -o "$tmp/tags" "$tmp/tags"
awk -F'\t' -v limit="$limit" '
  $1 == "" || $2 == "" { next }
  { n++; files[$3] = 1 }
  $1 - $2 > limit {
    printf "check_function_length: %s:%d: %s is %d lines long (end - start), more than %d\n", $3, $2, $4, $1 - $2, limit
    bad++
  }
  END {
    if (bad > 0) { printf "check_function_length: FAILED (%d functions over %d lines)\n", bad, limit; exit 1 }
    m = 0; for (f in files) m++
    printf "check_function_length: OK (%d functions in %d files, none over %d lines)\n", n, m, limit
  }' "$tmp/tags"
