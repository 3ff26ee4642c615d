#!/bin/bash
# Runs clang-tidy 14 with the repository's .clang-tidy over every project source in the default
# build's compile_commands.json (cmake --preset default writes it). Exits non-zero on any finding.
# Usage: bash tests/deps/clang_tidy.sh [-j N] [FILE-REGEX]   (about 25 minutes on 2 cores: ~15 s of CPU per file)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=$(nproc)
if [ "${1:-}" = "-j" ]; then jobs=$2; shift 2; fi
# Qt's moc/uic output (*_autogen) is not ours to lint; .cu files are nvcc's, not clang's.
filter=${1:-'^(?!.*_autogen/).*/(app|core|gpu|storage|views|tests)/.*\.cpp$'}
[ -f "$root/build/compile_commands.json" ] || { echo "clang_tidy: run 'cmake --preset default' first" >&2; exit 2; }
exec run-clang-tidy-14 -quiet -j "$jobs" -p "$root/build" -clang-tidy-binary clang-tidy-14 "$filter"
