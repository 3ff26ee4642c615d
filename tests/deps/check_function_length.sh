#!/bin/bash
# Checks that no function of core, app, gpu, storage, views and tests is longer than 150 lines.
# C++ and CUDA (*.h *.cpp *.cu *.cuh, and the tests' *.cpp.in fixtures) are measured as
# universal-ctags measures a function definition: the line of its closing brace minus the line of
# its name (`end - start`; a one-line function is 0). Member functions defined in a class body and
# lambdas' enclosing functions count like any other; a lambda does not shorten the function it is
# written in. Python (every *.py under tests: the pytest suites, benchmarks, doc and dependency
# checks, fuzz seed and GPU scripts) is measured with Python's ast module: every def and async def,
# methods and nested functions included, as its last line minus its `def` line (end_lineno -
# lineno; a decorator line does not count).
#
# Prints "check_function_length: FILE:LINE: NAME is N lines long (end - start), more than 150"
# per function (ordered by file, then line), then "check_function_length: FAILED (K functions over
# 150 lines)" and exits 1; prints "check_function_length: OK (N functions in M files, none over 150
# lines)" otherwise (C++ and Python counted together). To fix: split the function into named steps.
#
# Usage: check_function_length.sh --source DIR [--probe]
#   --probe also scans generated probe files (probe/probe.cpp, probe/probe.cu, probe/probe.h,
#   probe/probe.py) holding functions of exactly 150 lines (accepted) and 151 lines (a free
#   function, a CUDA kernel, a member function defined in its class and a Python method: each
#   caught): the test that proves the check catches the first line over the limit and not the
#   limit itself.
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
python=/usr/bin/python3
[ -x "$python" ] || { echo "check_function_length: $python is not installed" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One line per function definition: end<TAB>start<TAB>file<TAB>name (a name may hold a space:
# "operator ==").
scan() {
  "$ctags" -x --sort=no --languages=C++ --langmap=C++:+.cu.cuh --kinds-c++=f \
    --_xformat=$'%{end}\t%{line}\t%F\t%N' -R "$@"
}

# The same lines for every def and async def of the *.py files under the given folders, file by
# file in sorted order (paths as given).
scan_python() {
  find "$@" -type f -name '*.py' | LC_ALL=C sort | "$python" -c '
import ast, sys
for path in sys.stdin.read().splitlines():
    with open(path, "rb") as f:
        try:
            tree = ast.parse(f.read(), path)
        except SyntaxError as e:
            sys.exit("check_function_length: %s:%s: cannot parse: %s" % (path, e.lineno, e.msg))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            print("%d\t%d\t%s\t%s" % (node.end_lineno, node.lineno, path, node.name))
'
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

# A Python function definition HEAD (a def line without its colon) whose last line is LINES lines
# below it (LINES >= 2), indented by INDENT.
probe_python_function() {
  local head=$1 lines=$2 indent=${3:-} i
  echo "$indent$head:"
  echo "$indent    total = 0"
  for ((i = 2; i < lines; i++)); do echo "$indent    total += $i"; done
  echo "$indent    return total"
}

(cd "$src" && scan core app gpu storage views tests) > "$tmp/tags" || { echo "check_function_length: ctags failed" >&2; exit 2; }
(cd "$src" && scan_python tests) >> "$tmp/tags" || { echo "check_function_length: measuring the Python files failed" >&2; exit 2; }
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
  {
    probe_python_function "def probe_150_lines()" 150
    echo
    echo
    echo "class Probe:"
    probe_python_function "def method_151_lines(self)" 151 "    "
  } > "$tmp/probe/probe.py"
  (cd "$tmp" && scan probe) >> "$tmp/tags" || { echo "check_function_length: ctags failed" >&2; exit 2; }
  (cd "$tmp" && scan_python probe) >> "$tmp/tags" || { echo "check_function_length: measuring the Python files failed" >&2; exit 2; }
fi

LC_ALL=C sort -t$'\t' -k3,3 -k2,2n -o "$tmp/tags" "$tmp/tags"
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
