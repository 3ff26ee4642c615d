#!/bin/bash
# Runs clang-tidy 14 with the repository's .clang-tidy over every project source in the default
# build's compile_commands.json (cmake --preset default writes it). Exits non-zero on any finding.
# Usage: bash tests/deps/clang_tidy.sh [-j N] [FILE-REGEX]   (134 files, 15-27 s of CPU each: 17-30 minutes on 2 idle cores)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
jobs=$(nproc)
if [ "${1:-}" = "-j" ]; then jobs=$2; shift 2; fi
# Qt's moc/uic output (*_autogen) is not ours to lint; .cu files are nvcc's, not clang's.
filter=${1:-'^(?!.*_autogen/).*/(app|core|gpu|storage|views|tests)/.*\.cpp$'}
[ -f "$root/build/compile_commands.json" ] || { echo "clang_tidy: run 'cmake --preset default' first" >&2; exit 2; }
# The CLI is compiled in unity batches (app/CMakeLists.txt), so the database names generated
# unity_N_cxx.cxx files, not the app/*.cpp they include, and the header filter would drop what is
# found in those .cpp files. Lint each included source on its own instead, with its batch's command.
db="$root/build/clang-tidy"
mkdir -p "$db"
python3 - "$root/build/compile_commands.json" "$db/compile_commands.json" <<'PY'
import json, re, sys
entries = json.load(open(sys.argv[1]))
out = []
for e in entries:
    if not re.search(r'/Unity/unity_[0-9]+_cxx\.cxx$', e['file']):
        out.append(e)
        continue
    for source in re.findall(r'^#include "([^"]+)"', open(e['file']).read(), re.M):
        out.append({'directory': e['directory'], 'file': source,
                    'command': e['command'].replace('-c ' + e['file'], '-c ' + source)})
json.dump(out, open(sys.argv[2], 'w'), indent=1)
PY
exec run-clang-tidy-14 -quiet -j "$jobs" -p "$db" -clang-tidy-binary clang-tidy-14 "$filter"
