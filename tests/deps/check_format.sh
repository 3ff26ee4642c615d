#!/bin/bash
# Checks that every C++ and CUDA source of the project (app core gpu storage views tests: *.h *.cpp
# *.cu *.cuh) is formatted as clang-format 14 formats it with the repository's .clang-format.
# Prints clang-format's diagnostics and "check_format: N files need clang-format-14 -i" and exits 1
# when one is not; "check_format: OK (N files)" otherwise. To fix: clang-format-14 -i FILE...
# Usage: check_format.sh --source DIR [--also FILE]   (--also checks FILE too, as a .cpp file:
# the test that proves a misformatted file is caught)
set -uo pipefail
src= also=()
while [ $# -gt 0 ]; do
  case $1 in
    --source) src=$2; shift 2 ;;
    --also) also+=("$2"); shift 2 ;;
    *) echo "check_format: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] || { echo "check_format: --source DIR is required" >&2; exit 2; }
command -v clang-format-14 >/dev/null || { echo "check_format: clang-format-14 is not installed (resources/setup/debian-packages.txt lists it)" >&2; exit 2; }
cd "$src" || exit 2
mapfile -t files < <(find app core gpu storage views tests -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) | sort)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "${also[@]}"; do
  cp "$f" "$tmp/$(basename "$f").cpp" && files+=("$tmp/$(basename "$f").cpp")
done
bad=0
for f in "${files[@]}"; do
  if ! clang-format-14 --style=file:"$src/.clang-format" --dry-run --Werror "$f" 2>"$tmp/out"; then
    head -n 6 "$tmp/out"
    bad=$((bad + 1))
  fi
done
if [ "$bad" -gt 0 ]; then
  echo "check_format: $bad files need clang-format-14 -i"
  exit 1
fi
echo "check_format: OK (${#files[@]} files)"
